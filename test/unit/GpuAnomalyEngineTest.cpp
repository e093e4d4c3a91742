//===- GpuAnomalyEngineTest.cpp - --detect-anomaly's GPU wrapper ----------===//
//
// GpuAnomalyEngine's logic without a GPU: the engine it wraps is a CPU
// engine that, like the GPU's captured graph, applies every update (it is
// never asked to skip one). The wrapper must keep the state from before a
// bad step, put it back (the update is dropped), and replay the step on a
// second engine from that state to name the op that made the NaN. The GPU
// itself: test/lit/train/gpu-detect-anomaly.test.
//
//===----------------------------------------------------------------------===//
#include "compiler/CpuStepEngine.h"
#include "compiler/GpuAnomalyEngine.h"
#include "compiler/ModelLoader.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace llmc;

namespace {

/// Forwards to a CPU engine but never lets it skip an update, as the GPU's
/// graph cannot.
class AppliesEveryUpdate : public StepEngine {
public:
  explicit AppliesEveryUpdate(std::unique_ptr<CpuStepEngine> e)
      : e_(std::move(e)) {}
  std::string description() const override { return "a stand-in GPU"; }
  int64_t batch() const override { return e_->batch(); }
  int64_t seq() const override { return e_->seq(); }
  int64_t vocab() const override { return e_->vocab(); }
  double flopsPerToken() const override { return 0; }
  bool canSkipUpdate() const override { return false; }
  Status step(const std::vector<int64_t> &x, const std::vector<int64_t> &y,
              double lr, int64_t updates, bool, StepResult &r) override {
    return e_->step(x, y, lr, updates, /*skipNonFinite=*/false, r);
  }
  Status evalLoss(const std::vector<int64_t> &x, const std::vector<int64_t> &y,
                  double &loss) override {
    return e_->evalLoss(x, y, loss);
  }
  Status setNanGate(double v) override { return e_->setNanGate(v); }
  std::vector<StateTensor> stateTensors() const override {
    return e_->stateTensors();
  }
  Status readState(const StateTensor &t, std::vector<uint8_t> &b) override {
    return e_->readState(t, b);
  }
  Status writeState(const StateTensor &t,
                    const std::vector<uint8_t> &b) override {
    return e_->writeState(t, b);
  }

private:
  std::unique_ptr<CpuStepEngine> e_;
};

/// The engine keeps pointers into `module`, which must outlive it.
std::unique_ptr<CpuStepEngine>
engineFor(mlir::MLIRContext &context, const std::string &model,
          const std::string &injectNanOp,
          mlir::OwningOpRef<mlir::ModuleOp> &module) {
  module = loadModel(std::string(LLMC_TEST_MODELS) + "/" + model,
                     ModelOptions(), context);
  if (!module)
    return nullptr;
  OptimizerConfig opt;
  auto trainer = CpuTrainer::create(*module, &opt, /*seed=*/3,
                                    PrecisionConfig(), injectNanOp);
  if (mlir::failed(trainer))
    return nullptr;
  std::unique_ptr<CpuStepEngine> engine;
  if (!CpuStepEngine::create(std::move(*trainer), engine))
    return nullptr;
  return engine;
}

std::vector<std::vector<uint8_t>> stateOf(StepEngine &e) {
  std::vector<std::vector<uint8_t>> out;
  for (const StateTensor &t : e.stateTensors()) {
    out.emplace_back();
    EXPECT_TRUE(e.readState(t, out.back())) << t.name;
  }
  return out;
}

TEST(GpuAnomalyEngine, DropsTheBadUpdateAndNamesTheOp) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> m1, m2;
  auto gpuSide = engineFor(context, "gpt2-tiny.mlir", "llmc.gelu#0", m1);
  auto reference = engineFor(context, "gpt2-tiny.mlir", "llmc.gelu#0", m2);
  ASSERT_TRUE(gpuSide && reference);
  AppliesEveryUpdate gpu(std::move(gpuSide));
  std::unique_ptr<GpuAnomalyEngine> checked;
  Status s = GpuAnomalyEngine::create(gpu, std::move(reference), checked);
  ASSERT_TRUE(s) << s.message();
  EXPECT_TRUE(checked->canSkipUpdate());

  int64_t n = gpu.batch() * gpu.seq();
  std::vector<int64_t> x(n), y(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = (7 * i + 1) % gpu.vocab();
    y[i] = (5 * i + 2) % gpu.vocab();
  }
  // A good step is applied.
  ASSERT_TRUE(s = checked->setNanGate(1.0)) << s.message();
  auto before = stateOf(gpu);
  StepResult r;
  ASSERT_TRUE(s = checked->step(x, y, 1e-2, 0, true, r)) << s.message();
  EXPECT_TRUE(std::isfinite(r.loss));
  EXPECT_TRUE(r.applied);
  auto afterGood = stateOf(gpu);
  EXPECT_NE(afterGood, before);

  // A bad one: the wrapped engine applied it, the wrapper puts the state
  // back, and the replay names the gated gelu.
  ASSERT_TRUE(s = checked->setNanGate(NAN)) << s.message();
  ASSERT_TRUE(s = checked->step(x, y, 1e-2, 1, true, r)) << s.message();
  EXPECT_TRUE(std::isnan(r.loss));
  EXPECT_FALSE(r.applied);
  EXPECT_EQ(stateOf(gpu), afterGood);
  std::string where;
  ASSERT_TRUE(s = checked->findAnomaly(x, y, 1e-2, where)) << s.message();
  EXPECT_NE(where.find("llmc.mul 'nan_gate'"), std::string::npos) << where;
  EXPECT_NE(where.find("holds NaN"), std::string::npos) << where;

  // Without skipping (the stop policy without --detect-anomaly's drop), the
  // update stays.
  ASSERT_TRUE(s = checked->step(x, y, 1e-2, 1, false, r)) << s.message();
  EXPECT_TRUE(r.applied);
  EXPECT_NE(stateOf(gpu), afterGood);
}

TEST(GpuAnomalyEngine, RefusesAnEvaluatorOfAnotherModel) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> m1, m2;
  auto gpuSide = engineFor(context, "gpt2-tiny.mlir", "", m1);
  auto other = engineFor(context, "tiny_gpt_dynamo_loss.onnx", "", m2);
  ASSERT_TRUE(gpuSide && other);
  AppliesEveryUpdate gpu(std::move(gpuSide));
  std::unique_ptr<GpuAnomalyEngine> checked;
  Status s = GpuAnomalyEngine::create(gpu, std::move(other), checked);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("--detect-anomaly: the reference evaluator's "
                             "step cannot start from the GPU's state: "),
            std::string::npos)
      << s.message();
  EXPECT_EQ(checked, nullptr);
}

TEST(GpuAnomalyEngine, FindAnomalyBeforeAnyStepIsAnError) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> m1, m2;
  auto gpuSide = engineFor(context, "gpt2-tiny.mlir", "", m1);
  auto reference = engineFor(context, "gpt2-tiny.mlir", "", m2);
  ASSERT_TRUE(gpuSide && reference);
  AppliesEveryUpdate gpu(std::move(gpuSide));
  std::unique_ptr<GpuAnomalyEngine> checked;
  ASSERT_TRUE(GpuAnomalyEngine::create(gpu, std::move(reference), checked));
  std::string where;
  Status s = checked->findAnomaly({}, {}, 0, where);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "no step has run yet");
}

} // namespace
