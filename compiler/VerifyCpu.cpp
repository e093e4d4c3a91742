//===- VerifyCpu.cpp - `llmc verify` on the reference evaluator -----------===//
//
// The CPU backend of `llmc verify`: the step function of CpuTrainer, run by
// the reference evaluator. The gradient step has no optimizer (CpuTrainer
// returns the gradients); the AdamW steps use a second module with the
// reference optimizer appended. A loss-only backend evaluates @forward.
//
//===----------------------------------------------------------------------===//
#include "compiler/VerifyBackend.h"
#include "compiler/Compile.h"
#include "compiler/Pipeline.h"

#include "compiler/eval/Evaluator.h"
#include "compiler/eval/ModelArguments.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace llmc {

OptimizerConfig referenceAdamW() {
  OptimizerConfig opt;
  opt.kind = "adamw";
  opt.beta1 = 0.9;
  opt.beta2 = 0.95;
  opt.epsilon = 1e-8;
  opt.weightDecay = 0.1;
  opt.decayMinRank = 0;
  opt.clipNorm = 0;
  return opt;
}

std::string paddingLine(const std::string &name,
                        const std::vector<int64_t> &real,
                        const std::vector<int64_t> &padded) {
  return name + " " + shapeString(real) + " -> " + shapeString(padded);
}

double l2Norm(const RefTensor &t) {
  double sum = 0;
  for (int64_t i = 0; i < t.numElements(); ++i)
    sum += t.getDouble(i) * t.getDouble(i);
  return std::sqrt(sum);
}

namespace {

/// A loaded model with the context that owns it.
struct Loaded {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;

  bool load(const std::string &model, const ModelOptions &options) {
    context = std::make_unique<mlir::MLIRContext>();
    installCliDiagnostics(*context, "verify", model);
    module = loadModel(model, options, *context);
    return static_cast<bool>(module);
  }
};

class CpuVerifyBackend : public VerifyBackend {
public:
  CpuVerifyBackend(std::string model, ModelOptions options, bool lossOnly,
                   PrecisionConfig precision, RecomputeConfig recompute,
                   FusionConfig fusion = {})
      : model_(std::move(model)), options_(std::move(options)),
        lossOnly_(lossOnly), precision_(std::move(precision)),
        recompute_(recompute), fusion_(fusion) {}

  bool open() {
    if (!loaded_.load(model_, options_))
      return false;
    if (lossOnly_) {
      // The loss of @forward, with the casts of the precision policy.
      mlir::PassManager pm(loaded_.context.get());
      addPadShapes(pm, precision_);
      addLowerPrecision(pm, precision_);
      addRoundingFusions(pm, precision_, fusion_);
      if (mlir::failed(pm.run(*loaded_.module)))
        return false;
      forward_ = loaded_.module->lookupSymbol<mlir::func::FuncOp>("forward");
      std::string error;
      auto expected = expectedInputs(forward_, error);
      if (!expected) {
        llvm::errs() << "llmc verify: error: " << error << "\n";
        return false;
      }
      for (auto &[name, type] : *expected)
        inputs_.push_back({name, type});
      return true;
    }
    auto trainer = CpuTrainer::create(*loaded_.module, nullptr, 0, precision_,
                                      "", recompute_, &fusion_);
    if (mlir::failed(trainer))
      return false;
    trainer_ = std::move(*trainer);
    inputs_ = trainer_->inputs();
    // What was recomputed (--recompute, --memory-budget), on stderr so that
    // --json stays one document.
    for (const std::string &line : recomputeLines(*loaded_.module, false))
      llvm::errs() << "llmc verify: recompute " << line << "\n";
    return true;
  }

  const std::vector<StepInput> &inputs() const override { return inputs_; }

  /// A loss-only backend: puts `llmc.eager_rounding` on every attention of
  /// @forward raised from eager code (`llmc.eager`); returns how many.
  int roundEagerAttention() {
    int marked = 0;
    forward_.walk([&](mlir::Operation *op) {
      if (op->hasAttr("llmc.eager")) {
        op->setAttr("llmc.eager_rounding",
                    mlir::UnitAttr::get(op->getContext()));
        ++marked;
      }
    });
    return marked;
  }

  std::vector<std::string> paddedParameters() const override {
    std::vector<std::string> lines;
    if (trainer_)
      for (auto &[name, shapes] : trainer_->paddedShapes())
        lines.push_back(paddingLine(name, shapes.first, shapes.second));
    return lines;
  }

  mlir::FailureOr<double>
  lossAndGradNorms(const VerifyBatch &batch,
                   std::map<std::string, double> &gradNorms) override {
    if (lossOnly_) {
      std::string error;
      auto args = buildArguments(forward_, batch, 0, error);
      if (!args) {
        llvm::errs() << "llmc verify: error: " << error << "\n";
        return mlir::failure();
      }
      auto results = evaluate(forward_, *args);
      if (mlir::failed(results))
        return mlir::failure();
      double loss = NAN;
      for (const RefTensor &r : *results)
        if (r.rank() == 0 && r.isFloat())
          loss = r.getDouble(0);
      return loss;
    }
    auto loss = trainer_->step(batch);
    if (mlir::failed(loss))
      return mlir::failure();
    for (auto &[name, g] : trainer_->gradients())
      gradNorms[name] = l2Norm(g);
    return *loss;
  }

  mlir::FailureOr<std::vector<double>> adamwLosses(const VerifyBatch &batch,
                                                   size_t steps) override {
    // A fresh module: CpuTrainer turns its module into the step in place.
    Loaded loaded;
    if (!loaded.load(model_, options_))
      return mlir::failure();
    OptimizerConfig opt = referenceAdamW();
    auto trainer = CpuTrainer::create(*loaded.module, &opt, 0, precision_, "",
                                      recompute_, &fusion_);
    if (mlir::failed(trainer))
      return mlir::failure();
    std::vector<double> losses;
    for (size_t s = 0; s < steps; ++s) {
      auto loss = (*trainer)->step(batch, kReferenceLr);
      if (mlir::failed(loss))
        return mlir::failure();
      losses.push_back(*loss);
    }
    return losses;
  }

private:
  std::string model_;
  ModelOptions options_;
  bool lossOnly_;
  PrecisionConfig precision_;
  RecomputeConfig recompute_;
  // What `llmc compile` fuses by default, as the CUDA backend compiles it:
  // the CPU step models its GELU epilogue's rounding.
  FusionConfig fusion_;
  Loaded loaded_;
  mlir::func::FuncOp forward_;
  std::unique_ptr<CpuTrainer> trainer_;
  std::vector<StepInput> inputs_;
};

} // namespace

mlir::FailureOr<double> geluRoundingShift(const std::string &model,
                                          const ModelOptions &options,
                                          const PrecisionConfig &precision,
                                          const VerifyBatch &batch) {
  FusionConfig off;
  off.geluEpilogue = false;
  double loss[2];
  for (int on = 0; on < 2; ++on) {
    CpuVerifyBackend backend(model, options, /*lossOnly=*/true, precision, {},
                             on ? FusionConfig() : off);
    if (!backend.open())
      return mlir::failure();
    std::map<std::string, double> unused;
    auto l = backend.lossAndGradNorms(batch, unused);
    if (mlir::failed(l))
      return mlir::failure();
    loss[on] = *l;
  }
  if (!std::isfinite(loss[0]) || !std::isfinite(loss[1]) || loss[0] == 0)
    return 0.0;
  return std::fabs(loss[1] - loss[0]) / std::fabs(loss[0]);
}

mlir::FailureOr<double> eagerAttentionShift(const std::string &model,
                                            const ModelOptions &options,
                                            const PrecisionConfig &precision,
                                            const VerifyBatch &batch) {
  CpuVerifyBackend backend(model, options, /*lossOnly=*/true, precision, {});
  if (!backend.open())
    return mlir::failure();
  std::map<std::string, double> unused;
  auto fused = backend.lossAndGradNorms(batch, unused);
  if (mlir::failed(fused))
    return mlir::failure();
  if (backend.roundEagerAttention() == 0)
    return 0.0;
  auto eager = backend.lossAndGradNorms(batch, unused);
  if (mlir::failed(eager))
    return mlir::failure();
  if (!std::isfinite(*fused) || !std::isfinite(*eager) || *fused == 0)
    return 0.0;
  return std::fabs(*eager - *fused) / std::fabs(*fused);
}

std::unique_ptr<VerifyBackend>
openCpuVerifyBackend(const std::string &model, const ModelOptions &options,
                     bool lossOnly, const PrecisionConfig &precision,
                     const RecomputeConfig &recompute) {
  auto backend = std::make_unique<CpuVerifyBackend>(model, options, lossOnly,
                                                    precision, recompute);
  if (!backend->open())
    return nullptr;
  return backend;
}

} // namespace llmc
