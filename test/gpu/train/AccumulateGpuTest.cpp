//===- AccumulateGpuTest.cpp - k micro-batches of B on the GPU = one of kB ===//
//
// Gradient accumulation on the GPU (docs/memory.md): the tiny ONNX GPT
// compiled with accumulation at B 2 x T 16 trains 4 micro-batches per step
// (k replays of the accumulate graph, one of the apply graph, the
// accumulators zeroed by the apply graph itself), against the same model
// compiled at B 8 fed the same 128 tokens per step. Losses and gradient
// norms over five AdamW steps agree within f32 rounding (the sums run in
// another order), a validation loss too, and each graph is captured once.
// With recomputation (--recompute all / --memory-budget on the accumulate
// step) the losses of 10 windows equal plain accumulation's: bitwise with
// fusion off, within f32 rounding with fusion on (the worst printed).
//
//===----------------------------------------------------------------------===//
#include "test/gpu/train/TrainHarness.h"

#include "compiler/ModelLoader.h"
#include "frontends/json/recipes/Recipes.h"
#include "runtime/PlanStepEngine.h"

#include "mlir/IR/Diagnostics.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <unistd.h>

using namespace ::llmc;
using namespace ::llmc::test;

namespace {

constexpr int64_t kMicro = 2, kSeq = 16, kWindow = 4;

struct Loaded {
  std::unique_ptr<Executor> exec;
  std::unique_ptr<PlanStepEngine> engine;
  int64_t vocab = 0;
  std::string recompute; // the compile report's recompute lines
};

::testing::AssertionResult load(int64_t batch, bool accumulate, Loaded &out,
                                CompileConfig config = {},
                                const std::string &model = "",
                                int64_t seq = kSeq) {
  mlir::MLIRContext context;
  std::string error;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    error += d.str() + "\n";
    return mlir::success();
  });
  ModelOptions options;
  options.batch = batch;
  options.seq = seq;
  auto module = loadModel(
      model.empty() ? modelPath("tiny_gpt_dynamo_loss_dyn.onnx") : model,
      options, context);
  if (!module)
    return ::testing::AssertionFailure() << error;
  config.name = accumulate ? "accumulate" : "plain";
  config.optimizer.accumulate = accumulate;
  config.compileCache = false;
  auto compiled = compileModule(*module, config);
  if (mlir::failed(compiled))
    return ::testing::AssertionFailure() << error;
  out.vocab = compiled->report.vocab;
  for (const std::string &l : compiled->report.recompute)
    out.recompute += l + "\n";
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

namespace {

/// Ten windows of `n` tokens (the engine's micro-batches) on fixed random
/// tokens: each window's loss.
std::vector<double> trainWindows(Loaded &l,
                                 size_t n = kMicro * kWindow * kSeq) {
  std::mt19937_64 rng(11);
  std::vector<double> losses;
  for (int64_t step = 0; step < 10; ++step) {
    std::vector<int64_t> tokens(n), targets(n);
    for (size_t i = 0; i < n; ++i) {
      tokens[i] = static_cast<int64_t>(rng() % l.vocab);
      targets[i] = static_cast<int64_t>(rng() % l.vocab);
    }
    StepResult r;
    if (!l.engine->step(tokens, targets, 3e-3, step, false, r).isOk())
      break;
    losses.push_back(r.loss);
  }
  return losses;
}

} // namespace

TEST(AccumulateGpu, RecomputationKeepsTheLosses) {
  LLMC_REQUIRE_GPU();
  for (bool fused : {false, true}) {
    CompileConfig plain;
    plain.fusion = fused ? FusionConfig() : FusionConfig::none();
    CompileConfig all = plain;
    all.recompute.levels = INT64_MAX;
    Loaded a, b;
    ASSERT_TRUE(load(kMicro, /*accumulate=*/true, a, plain));
    ASSERT_TRUE(load(kMicro, /*accumulate=*/true, b, all));
    EXPECT_NE(b.recompute.find("@accumulate_step: "), std::string::npos)
        << b.recompute;
    EXPECT_NE(b.recompute.find("(forced: --recompute all)"), std::string::npos)
        << b.recompute;
    ASSERT_TRUE(a.engine->setMicroBatches(kWindow).isOk());
    ASSERT_TRUE(b.engine->setMicroBatches(kWindow).isOk());
    std::vector<double> la = trainWindows(a), lb = trainWindows(b);
    ASSERT_EQ(la.size(), 10u);
    ASSERT_EQ(lb.size(), 10u);
    double worst = 0;
    for (size_t i = 0; i < la.size(); ++i) {
      worst = std::max(worst, relative(lb[i], la[i]));
      std::printf("fusion %s window %zu: loss %.9g recomputed %.9g\n",
                  fused ? "on " : "off", i + 1, la[i], lb[i]);
      if (!fused) {
        EXPECT_EQ(la[i], lb[i]) << "window " << i + 1;
      }
    }
    std::printf("fusion %s: largest relative loss difference with "
                "recomputation %.3g\n",
                fused ? "on" : "off", worst);
    EXPECT_LE(worst, 1e-5);
  }
}

// --memory-budget with accumulation: GPT-2 tiny (`llmc recipe`), micro-batch
// 8 x 64, 2 micro-batches per window, plans 46.70 MiB without recomputation
// and 42.71 MiB at its smallest; a 44 MiB budget recomputes in
// @accumulate_step, the loaded plan's total is below the budget and the
// unbudgeted plan's, and 10 windows' losses equal plain accumulation's
// within f32 rounding.
TEST(AccumulateGpu, BudgetAppliesToTheMicroBatchStep) {
  LLMC_REQUIRE_GPU();
  std::string model = ::testing::TempDir() + "llmc-accumulate-gpt2-tiny-" +
                      std::to_string(::getpid()) + ".json";
  auto graph = json::buildGpt2("tiny");
  ASSERT_TRUE(static_cast<bool>(graph));
  std::ofstream(model) << json::dump(*graph);
  constexpr int64_t kBatch = 8, kLongSeq = 64;
  CompileConfig none, budget;
  budget.recompute.budget = 44ull << 20;
  Loaded a, b;
  ASSERT_TRUE(load(kBatch, /*accumulate=*/true, a, none, model, kLongSeq));
  ASSERT_TRUE(load(kBatch, /*accumulate=*/true, b, budget, model, kLongSeq));
  std::printf("%s", b.recompute.c_str());
  EXPECT_NE(b.recompute.find("@accumulate_step: "), std::string::npos)
      << b.recompute;
  EXPECT_EQ(b.recompute.find("@accumulate_step: 0 of"), std::string::npos)
      << "nothing recomputed: " << b.recompute;
  uint64_t high = a.exec->memoryPlan().total();
  uint64_t planned = b.exec->memoryPlan().total();
  std::printf("accumulating plan: %llu bytes without a budget, %llu with "
              "44 MiB\n",
              static_cast<unsigned long long>(high),
              static_cast<unsigned long long>(planned));
  EXPECT_LT(planned, high);
  EXPECT_LE(planned, budget.recompute.budget);
  ASSERT_TRUE(a.engine->setMicroBatches(2).isOk());
  ASSERT_TRUE(b.engine->setMicroBatches(2).isOk());
  std::vector<double> la = trainWindows(a, 8 * 64 * 2),
                      lb = trainWindows(b, 8 * 64 * 2);
  ASSERT_EQ(la.size(), 10u);
  ASSERT_EQ(lb.size(), 10u);
  double worst = 0;
  for (size_t i = 0; i < la.size(); ++i)
    worst = std::max(worst, relative(lb[i], la[i]));
  std::printf("budget 44 MiB: largest relative loss difference %.3g\n",
              worst);
  EXPECT_LE(worst, 1e-5);
  std::remove(model.c_str());
}
