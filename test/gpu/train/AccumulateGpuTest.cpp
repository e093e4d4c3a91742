//===- AccumulateGpuTest.cpp - k micro-batches of B on the GPU = one of kB ===//
//
// Gradient accumulation on the GPU (docs/memory.md): the tiny ONNX GPT
// compiled with accumulation at B 2 x T 16 trains 4 micro-batches per step
// (k replays of the accumulate graph, one of the apply graph, the
// accumulators zeroed by the apply graph itself), against the same model
// compiled at B 8 fed the same 128 tokens per step. Losses and gradient
// norms over five AdamW steps agree within f32 rounding (the sums run in
// another order), a validation loss too, and each graph is captured once.
//
//===----------------------------------------------------------------------===//
#include "test/gpu/train/TrainHarness.h"

#include "compiler/ModelLoader.h"
#include "runtime/PlanStepEngine.h"

#include "mlir/IR/Diagnostics.h"

#include <cmath>
#include <cstdio>
#include <random>

using namespace ::llmc;
using namespace ::llmc::test;

namespace {

constexpr int64_t kMicro = 2, kSeq = 16, kWindow = 4;

struct Loaded {
  std::unique_ptr<Executor> exec;
  std::unique_ptr<PlanStepEngine> engine;
  int64_t vocab = 0;
};

::testing::AssertionResult load(int64_t batch, bool accumulate, Loaded &out) {
  mlir::MLIRContext context;
  std::string error;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    error += d.str() + "\n";
    return mlir::success();
  });
  ModelOptions options;
  options.batch = batch;
  options.seq = kSeq;
  auto module =
      loadModel(modelPath("tiny_gpt_dynamo_loss_dyn.onnx"), options, context);
  if (!module)
    return ::testing::AssertionFailure() << error;
  CompileConfig config;
  config.name = accumulate ? "accumulate" : "plain";
  config.optimizer.accumulate = accumulate;
  config.compileCache = false;
  auto compiled = compileModule(*module, config);
  if (mlir::failed(compiled))
    return ::testing::AssertionFailure() << error;
  out.vocab = compiled->report.vocab;
  ExecutorOptions eo;
  eo.source = config.name;
  Status s = Executor::create(std::move(compiled->planned.plan), eo, out.exec);
  if (s)
    s = PlanStepEngine::create(*out.exec, out.engine);
  if (!s)
    return ::testing::AssertionFailure() << s.message();
  return ::testing::AssertionSuccess();
}

double relative(double a, double b) {
  return std::fabs(a - b) / std::max(1e-30, std::fabs(b));
}

} // namespace

TEST(AccumulateGpu, MicroBatchesEqualOneLargeBatch) {
  LLMC_REQUIRE_GPU();
  Loaded acc, one;
  ASSERT_TRUE(load(kMicro, /*accumulate=*/true, acc));
  ASSERT_TRUE(load(kMicro * kWindow, /*accumulate=*/false, one));
  ASSERT_GT(acc.exec->plan().accumulateSteps, 0u);
  // A plan without an accumulate sequence takes one micro-batch only.
  Status refused = one.engine->setMicroBatches(2);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.message().find("compiled without gradient accumulation"),
            std::string::npos)
      << refused.message();
  ASSERT_TRUE(acc.engine->setMicroBatches(kWindow).isOk());
  ASSERT_EQ(acc.engine->batch(), one.engine->batch());

  std::mt19937_64 rng(7);
  size_t n = static_cast<size_t>(kMicro * kWindow * kSeq);
  double worstLoss = 0, worstNorm = 0;
  for (int64_t step = 0; step < 5; ++step) {
    std::vector<int64_t> tokens(n), targets(n);
    for (size_t i = 0; i < n; ++i) {
      tokens[i] = static_cast<int64_t>(rng() % acc.vocab);
      targets[i] = static_cast<int64_t>(rng() % acc.vocab);
    }
    StepResult a, b;
    ASSERT_TRUE(acc.engine->step(tokens, targets, 3e-3, step, false, a).isOk());
    ASSERT_TRUE(one.engine->step(tokens, targets, 3e-3, step, false, b).isOk());
    ASSERT_TRUE(a.hasGradNorm && b.hasGradNorm);
    std::printf("step %lld: loss %.8f vs %.8f (%.2e), grad norm %.6f vs "
                "%.6f (%.2e)\n",
                static_cast<long long>(step + 1), a.loss, b.loss,
                relative(a.loss, b.loss), a.gradNorm, b.gradNorm,
                relative(a.gradNorm, b.gradNorm));
    worstLoss = std::max(worstLoss, relative(a.loss, b.loss));
    worstNorm = std::max(worstNorm, relative(a.gradNorm, b.gradNorm));
  }
  EXPECT_LT(worstLoss, 1e-5);
  EXPECT_LT(worstNorm, 1e-4);

  // Validation: the window's loss at lr 0, parameters left as they were.
  std::vector<int64_t> tokens(n), targets(n);
  for (size_t i = 0; i < n; ++i) {
    tokens[i] = static_cast<int64_t>(rng() % acc.vocab);
    targets[i] = static_cast<int64_t>(rng() % acc.vocab);
  }
  double la = 0, lb = 0, again = 0;
  ASSERT_TRUE(acc.engine->evalLoss(tokens, targets, la).isOk());
  ASSERT_TRUE(one.engine->evalLoss(tokens, targets, lb).isOk());
  ASSERT_TRUE(acc.engine->evalLoss(tokens, targets, again).isOk());
  std::printf("validation loss %.8f vs %.8f (%.2e)\n", la, lb,
              relative(la, lb));
  EXPECT_LT(relative(la, lb), 1e-5);
  EXPECT_EQ(la, again) << "validation moved the parameters or left the "
                          "accumulators non-zero";
  EXPECT_EQ(acc.exec->captureCount(), 1u);
  EXPECT_EQ(acc.exec->accumulateCaptureCount(), 1u);
  EXPECT_GT(acc.exec->accumulateGraphNodeCount(), 0u);
}
