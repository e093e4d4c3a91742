//===- TrainGpuTest.cpp - Compiled training steps on a GPU ----------------===//
//
// For each fixture: one compiled step on the GPU against the reference
// evaluator running the same @train_step (f32, relative L2 below 1e-5 for
// the loss, every updated parameter and the optimizer state); three steps as
// a CUDA graph bitwise equal to the plain stream; training on a token shard
// whose loss must go down; validation that leaves parameters and state as
// they were; a NaN loss that stops runTrainCuda naming the step.
//
//===----------------------------------------------------------------------===//
#include "test/gpu/train/TrainHarness.h"

#include "compiler/CudaTrainer.h"
#include "compiler/Driver.h"
#include "runtime/TrainLog.h"
#include "compiler/codegen/FunctionLowering.h"
#include "compiler/eval/DeviceTensors.h"
#include "compiler/eval/Evaluator.h"
#include "runtime/Bundle.h"
#include "runtime/DataLoader.h"
#include "runtime/TokenFile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace llmc;
using namespace llmc::test;

namespace {

struct Case {
  const char *name;
  const char *file;
  const char *optimizer; // adamw | sgd
  double lr;             // for the 50-step run
  int64_t vocab;         // token ids below this; 0: the loss's classes
  size_t copied;         // llmc.next results copied rather than in place
  bool uniformStart;     // the untrained loss is about ln(vocab)
  size_t biasEpilogues;  // adds fused into a matmul's bias (EpilogueFusion.h)
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

const Case kCases[] = {
    {"BigramSgd", "bigram-tiny.mlir", "sgd", 1.0, 256, 0, true, 1},
    {"Gpt2TinyAdamW", "gpt2-tiny.mlir", "adamw", 3e-3, 0, 0, true, 4},
    {"TinyGptOnnxAdamW", "tiny_gpt_dynamo_loss.onnx", "adamw", 3e-3, 0, 0, true,
     8},
    {"CopiedUpdates", "train-step-copy.mlir", "sgd", 0.1, 256, 2, false, 0},
};

OptimizerConfig optimizerOf(const Case &c) {
  OptimizerConfig o;
  o.kind = c.optimizer;
  if (o.kind == "sgd")
    o.momentum = 0.9;
  return o;
}

class TrainGpuTest : public ::testing::TestWithParam<Case> {
protected:
  void compile() {
    std::string error;
    ASSERT_TRUE(compileFixture(GetParam().file, optimizerOf(GetParam()),
                               fixture_, error))
        << error;
    if (GetParam().vocab)
      fixture_.compiled.report.vocab = GetParam().vocab;
    std::printf("[ compile  ] %s\n%s", GetParam().file,
                formatReport(fixture_.compiled.report).c_str());
  }
  std::unique_ptr<Executor> executor() {
    std::unique_ptr<Executor> exec;
    Status s = Executor::create(fixture_.compiled.planned.plan, {}, exec);
    EXPECT_TRUE(s) << s.message();
    return exec;
  }
  Fixture fixture_;
};

// Needs no GPU (NVRTC only): the fixture compiles, its bias adds ride in
// their matmuls' epilogues, and the reference runs its @train_step from the
// plan's initial weights to the loss of an untrained model, about ln(vocab).
TEST_P(TrainGpuTest, CompilesAndTheReferenceRuns) {
  compile();
  if (HasFatalFailure())
    return;
  EXPECT_EQ(fixture_.compiled.report.copiedUpdates, GetParam().copied);
  size_t biased = 0;
  for (const Step &step : fixture_.compiled.planned.plan.steps)
    if (auto *mm = std::get_if<MatmulStep>(&step.op))
      biased += !mm->bias.empty();
  EXPECT_EQ(biased, GetParam().biasEpilogues);
  Status valid = validatePlan(fixture_.compiled.planned.plan);
  EXPECT_TRUE(valid) << valid.message();
  if (!GetParam().copied) {
    EXPECT_GT(fixture_.compiled.report.inPlaceUpdates, 0u);
  }
  std::vector<RefTensor> args = stepArguments(fixture_, 7, 1e-3);
  auto reference = evaluate(fixture_.train(), args);
  ASSERT_TRUE(mlir::succeeded(reference));
  double loss = (*reference)[0].floats[0];
  double uniform =
      std::log(static_cast<double>(fixture_.compiled.report.vocab));
  std::printf("[ reference] %s: loss %.6f, ln(vocab) %.6f\n", GetParam().name,
              loss, uniform);
  if (GetParam().uniformStart) {
    EXPECT_NEAR(loss, uniform, 0.25);
  }
}

TEST_P(TrainGpuTest, OneStepMatchesTheReference) {
  LLMC_REQUIRE_GPU();
  compile();
  if (HasFatalFailure())
    return;
  std::vector<RefTensor> args = stepArguments(fixture_, 7, 1e-3);
  auto reference = evaluate(fixture_.train(), args);
  ASSERT_TRUE(mlir::succeeded(reference));
  auto exec = executor();
  ASSERT_TRUE(exec);
  Status s = writeInputs(*exec, fixture_, args);
  ASSERT_TRUE(s) << s.message();
  s = exec->runPlain();
  ASSERT_TRUE(s) << s.message();
  std::vector<RefTensor> gpu;
  s = readResults(*exec, fixture_, gpu);
  ASSERT_TRUE(s) << s.message();
  const std::vector<RefTensor> &ref = *reference;
  mlir::func::FuncOp train = fixture_.train();
  OptimizerConfig opt = optimizerOf(GetParam());
  auto attr = [&](unsigned r, const char *name) {
    auto a = train.getResultAttrOfType<mlir::StringAttr>(r, name);
    return a ? a.getValue().str() : std::string();
  };
  double worst = 0, worstGrad = 0;
  int64_t noise = 0;
  // The multi-tensor update reads the unclipped gradient (`grad:<param>`)
  // and applies the clip coefficient itself: m' / (1 - beta1) is the
  // clipped one, coef times the buffer's.
  double coef = 1;
  for (unsigned r = 0; r < gpu.size(); ++r)
    if (attr(r, "llmc.output") == "grad_norm" && opt.multiTensor)
      coef = std::min(1.0, opt.clipNorm / (ref[r].floats[0] + 1e-6));
  for (unsigned r = 0; r < gpu.size(); ++r) {
    auto next = train.getResultAttrOfType<mlir::IntegerAttr>(r, "llmc.next");
    int64_t arg = next ? next.getInt() : -1;
    std::string param = arg >= 0 && train.getArgAttr(arg, "llmc.param")
                            ? fixture_.compiled.planned.arguments[arg].name
                            : "";
    int64_t m = -1;
    for (unsigned q = 0; !param.empty() && q < gpu.size(); ++q)
      if (attr(q, "llmc.state") == "adamw.m" &&
          attr(q, "llmc.state_of") == param)
        m = q;
    double err = 0;
    if (m >= 0) {
      // The gradient itself, from the buffer the update read.
      std::vector<uint8_t> bytes;
      ASSERT_TRUE(exec->readBuffer("grad:" + param, bytes));
      RefTensor g = fromDeviceBytes(bytes, ref[m].kind, ref[m].shape);
      RefTensor gRef = ref[m];
      for (double &v : gRef.floats)
        v /= (1 - opt.beta1) * coef;
      double gErr = relativeError(g, gRef);
      worstGrad = std::max(worstGrad, gErr);
      EXPECT_LT(gErr, 1e-5) << "gradient of " << param;
      AdamWParamCheck c =
          checkAdamWParam(gpu[r], ref[r], args[arg], ref[m], opt, 1e-3);
      EXPECT_TRUE(c.noiseWithinLr) << param;
      noise += c.noiseElements;
      err = c.error;
    } else {
      err = relativeError(gpu[r], ref[r]);
    }
    worst = std::max(worst, err);
    EXPECT_LT(err, 1e-5) << resultName(fixture_, r);
  }
  std::printf("[ numerics ] %s: loss gpu %.7f reference %.7f; worst relative "
              "L2 error over %zu results %.3g, over the gradients %.3g (%lld "
              "elements with a gradient at the noise floor)\n",
              GetParam().name, gpu[0].floats[0], ref[0].floats[0], gpu.size(),
              worst, worstGrad, static_cast<long long>(noise));
}

TEST_P(TrainGpuTest, GraphReplayIsBitwiseEqualToPlain) {
  LLMC_REQUIRE_GPU();
  compile();
  if (HasFatalFailure())
    return;
  auto plain = executor(), graph = executor();
  ASSERT_TRUE(plain && graph);
  for (int step = 0; step < 3; ++step) {
    std::vector<RefTensor> args = stepArguments(fixture_, 100 + step, 1e-3);
    for (Executor *e : {plain.get(), graph.get()}) {
      Status s = writeInputs(*e, fixture_, args);
      ASSERT_TRUE(s) << s.message();
      s = e == plain.get() ? e->runPlain() : e->replay();
      ASSERT_TRUE(s) << s.message();
    }
  }
  EXPECT_EQ(graph->captureCount(), 1u);
  std::vector<RefTensor> a, b;
  ASSERT_TRUE(readResults(*plain, fixture_, a));
  ASSERT_TRUE(readResults(*graph, fixture_, b));
  size_t differ = 0;
  for (size_t r = 0; r < a.size(); ++r)
    if (a[r].floats != b[r].floats || a[r].ints != b[r].ints) {
      ++differ;
      ADD_FAILURE() << resultName(fixture_, r) << " differs after 3 steps";
    }
  std::printf("[ replay   ] %s: %zu of %zu results bitwise equal after 3 "
              "steps, %zu graph nodes\n",
              GetParam().name, a.size() - differ, a.size(),
              graph->graphNodeCount());
}

// The multi-tensor optimizer (llmc-batch-adamw: one global_norm and one
// multi_adamw_update kernel) against one adamw_update kernel per parameter:
// three steps from the same weights and inputs give bitwise equal results
// (loss, grad_norm, parameters, step, m, v), since the element math is the
// same source text and the clip coefficient is the same f32 value.
// Without clipping: with it, global_norm sums the squares in another order
// than the per-parameter reductions, so the clip coefficient (and every
// update after it) may differ in the last bit.
TEST_P(TrainGpuTest, MultiTensorOptimizerIsBitwiseThePerParameterOne) {
  if (std::string(GetParam().optimizer) != "adamw")
    GTEST_SKIP() << "SGD has no AdamW updates to batch";
  LLMC_REQUIRE_GPU();
  OptimizerConfig multi = optimizerOf(GetParam());
  multi.clipNorm = 0;
  OptimizerConfig per = multi;
  per.multiTensor = false;
  Fixture a, b;
  std::string error;
  ASSERT_TRUE(compileFixture(GetParam().file, multi, a, error)) << error;
  ASSERT_TRUE(compileFixture(GetParam().file, per, b, error)) << error;
  // Launches, not kernels: per-parameter updates of equal shape share one
  // kernel (ShareKernels.h), each still its own launch.
  std::printf("[ launches ] %s: %zu multi-tensor, %zu per parameter\n",
              GetParam().name, a.compiled.report.launches,
              b.compiled.report.launches);
  EXPECT_LT(a.compiled.report.launches, b.compiled.report.launches);
  std::unique_ptr<Executor> ea, eb;
  Status s = Executor::create(a.compiled.planned.plan, {}, ea);
  ASSERT_TRUE(s) << s.message();
  s = Executor::create(b.compiled.planned.plan, {}, eb);
  ASSERT_TRUE(s) << s.message();
  for (int step = 0; step < 3; ++step) {
    std::vector<RefTensor> args = stepArguments(a, 200 + step, 1e-3);
    for (auto [e, f] :
         {std::pair<Executor *, Fixture *>{ea.get(), &a}, {eb.get(), &b}}) {
      s = writeInputs(*e, *f, args);
      ASSERT_TRUE(s) << s.message();
      s = e->replay();
      ASSERT_TRUE(s) << s.message();
    }
  }
  std::vector<RefTensor> ra, rb;
  ASSERT_TRUE(readResults(*ea, a, ra));
  ASSERT_TRUE(readResults(*eb, b, rb));
  ASSERT_EQ(ra.size(), rb.size());
  size_t differ = 0;
  for (size_t r = 0; r < ra.size(); ++r)
    if (ra[r].floats != rb[r].floats || ra[r].ints != rb[r].ints) {
      ++differ;
      ADD_FAILURE() << resultName(a, r) << " differs after 3 steps (relative "
                    << "L2 " << relativeError(ra[r], rb[r]) << ")";
    }
  std::printf("[ multi    ] %s: %zu of %zu results bitwise equal after 3 "
              "steps\n",
              GetParam().name, ra.size() - differ, ra.size());
}

/// A token shard: $LLMC_TEST_TOKENS (made with `llmc tokenize`), else the
/// bytes of a generated text.
std::string tokenShard() {
  if (const char *p = std::getenv("LLMC_TEST_TOKENS"))
    return p;
  std::string path = ::testing::TempDir() + "/llmc-train-gpu-tokens.bin";
  std::ostringstream text;
  for (int i = 0; i < 400; ++i)
    text << "the quick brown fox " << (i % 7) << " jumps over the lazy dog. ";
  Status s = writeTokenFile(path, tokenizeBytes(text.str()));
  EXPECT_TRUE(s) << s.message();
  return path;
}

TEST_P(TrainGpuTest, FiftyStepsLowerTheLoss) {
  LLMC_REQUIRE_GPU();
  compile();
  if (HasFatalFailure())
    return;
  std::unique_ptr<CudaTrainer> trainer;
  Status s = CudaTrainer::fromPlan(fixture_.compiled.planned.plan,
                                   GetParam().file, trainer);
  ASSERT_TRUE(s) << s.message();
  DataLoader loader;
  s = loader.open(tokenShard(), trainer->batch(), trainer->seq(),
                  fixture_.compiled.report.vocab);
  ASSERT_TRUE(s) << s.message();
  std::vector<int64_t> tokens, targets;
  std::vector<double> losses;
  double totalMs = 0;
  for (int64_t step = 0; step < 50; ++step) {
    ASSERT_TRUE(loader.next(tokens, targets));
    double loss = 0;
    s = trainer->step(step, tokens, targets, GetParam().lr, loss);
    ASSERT_TRUE(s) << s.message();
    ASSERT_TRUE(std::isfinite(loss)) << "step " << step + 1;
    float ms = 0;
    ASSERT_TRUE(trainer->executor().lastRunMs(ms));
    totalMs += step > 0 ? ms : 0;
    losses.push_back(loss);
    if (step % 10 == 0 || step == 49)
      std::printf("%s\n", formatStepLine({step, loss, GetParam().lr, ms, 0,
                                          trainer->batch() * trainer->seq()})
                              .c_str());
  }
  double last = 0;
  for (int i = 45; i < 50; ++i)
    last += losses[i] / 5;
  std::printf("[ training ] %s: loss %.4f -> %.4f (mean of the last 5), "
              "%.3f ms per replayed step on the GPU\n",
              GetParam().name, losses[0], last, totalMs / 49);
  EXPECT_LT(last, 0.9 * losses[0]);
}

TEST_P(TrainGpuTest, ValidationLeavesParametersAndStateAsTheyWere) {
  LLMC_REQUIRE_GPU();
  compile();
  if (HasFatalFailure())
    return;
  std::unique_ptr<CudaTrainer> trainer;
  Status s = CudaTrainer::fromPlan(fixture_.compiled.planned.plan,
                                   GetParam().file, trainer);
  ASSERT_TRUE(s) << s.message();
  DataLoader loader;
  ASSERT_TRUE(loader.open(tokenShard(), trainer->batch(), trainer->seq()));
  std::vector<int64_t> tokens, targets;
  double loss = 0;
  for (int64_t step = 0; step < 2; ++step) {
    ASSERT_TRUE(loader.next(tokens, targets));
    ASSERT_TRUE(trainer->step(step, tokens, targets, GetParam().lr, loss));
  }
  auto snapshot = [&] {
    std::vector<std::vector<uint8_t>> all;
    for (const BufferInfo &b : trainer->executor().plan().buffers)
      if (b.role == BufferRole::Param || b.role == BufferRole::OptimizerState) {
        all.emplace_back();
        EXPECT_TRUE(trainer->executor().readBuffer(b.name, all.back()));
      }
    return all;
  };
  auto before = snapshot();
  double v1 = 0, v2 = 0;
  s = trainer->validate(loader, 3, 2, v1);
  ASSERT_TRUE(s) << s.message();
  s = trainer->validate(loader, 3, 2, v2);
  ASSERT_TRUE(s) << s.message();
  EXPECT_TRUE(before == snapshot());
  EXPECT_EQ(v1, v2);
  std::printf("[ validate ] %s: val loss %.6f twice, parameters and state "
              "unchanged\n",
              GetParam().name, v1);
}

// Needs no GPU: the bundle holds the plan with a cubin for every kernel.
TEST_P(TrainGpuTest, BundleRoundTrips) {
  compile();
  if (HasFatalFailure())
    return;
  std::string path = ::testing::TempDir() + "/" + GetParam().name + ".llmc";
  const Plan &plan = fixture_.compiled.planned.plan;
  ASSERT_TRUE(writeBundle(path, plan));
  Plan back;
  Status s = readBundle(path, back);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(back.arenaBytes, plan.arenaBytes);
  EXPECT_EQ(back.vocab, plan.vocab);
  ASSERT_EQ(back.kernels.size(), plan.kernels.size());
  for (const KernelInfo &k : back.kernels) {
    EXPECT_FALSE(k.cubin.empty()) << k.name;
    EXPECT_EQ(k.arch, fixture_.compiled.report.arch) << k.name;
  }
  ASSERT_EQ(back.buffers.size(), plan.buffers.size());
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    EXPECT_EQ(back.buffers[i].init, plan.buffers[i].init)
        << plan.buffers[i].name;
}

// The trainer opened on the bundle file computes what the in-memory plan
// computes, bit for bit.
TEST_P(TrainGpuTest, BundleTrainsLikeTheInMemoryPlan) {
  LLMC_REQUIRE_GPU();
  compile();
  if (HasFatalFailure())
    return;
  std::string path = ::testing::TempDir() + "/" + GetParam().name + ".llmc";
  ASSERT_TRUE(writeBundle(path, fixture_.compiled.planned.plan));
  TrainConfig cfg;
  cfg.model = path;
  std::unique_ptr<CudaTrainer> fromFile, inMemory;
  Status s = CudaTrainer::open(cfg, fromFile);
  ASSERT_TRUE(s) << s.message();
  s = CudaTrainer::fromPlan(fixture_.compiled.planned.plan, "memory", inMemory);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(fromFile->executor().recompiledKernels(), 0u);
  DataLoader loader;
  ASSERT_TRUE(loader.open(tokenShard(), inMemory->batch(), inMemory->seq()));
  std::vector<int64_t> tokens, targets;
  for (int64_t step = 0; step < 3; ++step) {
    ASSERT_TRUE(loader.next(tokens, targets));
    double a = 0, b = 0;
    ASSERT_TRUE(fromFile->step(step, tokens, targets, GetParam().lr, a));
    ASSERT_TRUE(inMemory->step(step, tokens, targets, GetParam().lr, b));
    EXPECT_EQ(a, b) << "step " << step + 1;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, TrainGpuTest, ::testing::ValuesIn(kCases),
                         [](const auto &info) { return info.param.name; });

TEST(RunTrainCudaTest, NanLossStopsNamingTheStep) {
  LLMC_REQUIRE_GPU();
  TrainConfig cfg;
  cfg.model = modelPath("bigram-tiny.mlir");
  cfg.data = tokenShard();
  cfg.steps = 20;
  cfg.lr = 1e30; // W explodes; exp overflows to inf, the loss to NaN
  cfg.optimizer.kind = "sgd";
  cfg.optimizer.clipNorm = 0;
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  int rc = runTrainCuda(cfg);
  std::string out = ::testing::internal::GetCapturedStdout();
  std::string err = ::testing::internal::GetCapturedStderr();
  std::printf("%s%s", out.c_str(), err.c_str());
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find("llmc train: error: step 2: the loss is NaN"),
            std::string::npos);
  EXPECT_NE(out.find("step 1 | loss 5.5"), std::string::npos);
}

} // namespace

namespace {

// A throughput run on a model named by the environment (skipped without):
// LLMC_TEST_BENCH_MODEL=gpt2-124M.json LLMC_TEST_BENCH_BATCH=4
// LLMC_TEST_BENCH_SEQ=1024. Compiles in memory as `llmc train --device cuda`
// does, trains 20 steps on the token shard and prints the step lines.
TEST(TrainGpuBench, NamedModel) {
  const char *model = std::getenv("LLMC_TEST_BENCH_MODEL");
  if (!model)
    GTEST_SKIP() << "set LLMC_TEST_BENCH_MODEL to run";
  LLMC_REQUIRE_GPU();
  TrainConfig cfg;
  cfg.model = model;
  if (const char *b = std::getenv("LLMC_TEST_BENCH_BATCH"))
    cfg.modelOptions.batch = std::atoll(b);
  if (const char *t = std::getenv("LLMC_TEST_BENCH_SEQ"))
    cfg.modelOptions.seq = std::atoll(t);
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<CudaTrainer> trainer;
  Status s = CudaTrainer::open(cfg, trainer);
  ASSERT_TRUE(s) << s.message();
  std::printf(
      "[ bench    ] %s: compiled and loaded in %.1f s, B %lld T %lld\n", model,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count(),
      static_cast<long long>(trainer->batch()),
      static_cast<long long>(trainer->seq()));
  DataLoader loader;
  ASSERT_TRUE(loader.open(tokenShard(), trainer->batch(), trainer->seq()));
  std::vector<int64_t> tokens, targets;
  double first = 0, loss = 0;
  for (int64_t step = 0; step < 20; ++step) {
    ASSERT_TRUE(loader.next(tokens, targets));
    double lr = learningRateAt(cfg, step);
    auto t0 = std::chrono::steady_clock::now();
    s = trainer->step(step, tokens, targets, lr, loss);
    ASSERT_TRUE(s) << s.message();
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - t0)
                    .count();
    ASSERT_TRUE(std::isfinite(loss)) << "step " << step + 1;
    first = step == 0 ? loss : first;
    printStepLine({step, loss, lr, ms, 0, trainer->batch() * trainer->seq()});
  }
  EXPECT_LT(loss, first);
}

} // namespace

namespace {

/// Runs runTrainCuda and returns its exit code; `err` gets its stderr.
int runTrain(const TrainConfig &cfg, std::string &err) {
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  int rc = runTrainCuda(cfg);
  std::string out = ::testing::internal::GetCapturedStdout();
  err = ::testing::internal::GetCapturedStderr();
  std::printf("%s%s", out.c_str(), err.c_str());
  return rc;
}

TEST(RunTrainCudaTest, WithoutAGpuSaysWhatIsMissing) {
  std::string why;
  if (gpuAvailable(why))
    GTEST_SKIP() << "a GPU is present";
  TrainConfig cfg;
  cfg.model = modelPath("bigram-tiny.mlir");
  std::string err;
  EXPECT_EQ(runTrain(cfg, err), 1);
  EXPECT_NE(err.find("llmc train: error: --device cuda needs a GPU: "),
            std::string::npos);
}

TEST(RunTrainCudaTest, UserErrorsAreMessages) {
  LLMC_REQUIRE_GPU();
  std::string err;
  TrainConfig cfg;
  cfg.model = modelPath("bigram-tiny.mlir");
  cfg.data = ::testing::TempDir() + "/no-such-shard.bin";
  cfg.optimizer.kind = "sgd";
  EXPECT_EQ(runTrain(cfg, err), 1);
  EXPECT_NE(err.find("llmc train: error: "), std::string::npos);
  EXPECT_NE(err.find("no-such-shard.bin"), std::string::npos);

  // No token inputs: the step cannot be fed from a shard.
  std::string path = ::testing::TempDir() + "/no-tokens.mlir";
  std::ofstream(path) << R"(
func.func @forward(%w: tensor<4xf32> {llmc.param = "w", llmc.init_rule = "ones"},
                   %x: tensor<4xf32> {llmc.input = "x"}) -> (tensor<f32> {llmc.output = "loss"}) {
  %0 = llmc.mul %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = llmc.reduce_sum %0 axes [0] : (tensor<4xf32>) -> tensor<f32>
  return %1 : tensor<f32>
})";
  cfg.model = path;
  cfg.data = tokenShard();
  EXPECT_EQ(runTrain(cfg, err), 1);
  EXPECT_NE(err.find("has 0 integer [B, T] inputs; training on token shards "
                     "needs two"),
            std::string::npos);

  // A model that does not compile names the op.
  std::ofstream(path) << R"(
func.func @train_step(%x: tensor<4xf32> {llmc.input = "x"}) -> (tensor<4xf32> {llmc.output = "y"}) {
  %0 = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @helper(tensor<4xf32>) -> tensor<4xf32>)";
  EXPECT_EQ(runTrain(cfg, err), 1);
  EXPECT_NE(err.find("no CUDA emitter for 'func.call'"), std::string::npos);
  EXPECT_NE(err.find("cannot compile"), std::string::npos);
}

// Token ids are checked against the vocabulary when the data is opened,
// before the first step: for a model, and for a bundle compiled from it (its
// plan records the vocabulary). The CPU path's check is
// test/lit/train/data.test.
TEST(RunTrainCudaTest, TokensBeyondTheVocabularyAreFoundAtOpen) {
  LLMC_REQUIRE_GPU();
  std::vector<uint16_t> tokens(4000, 'a');
  tokens[3000] = 600; // the tiny GPT's vocabulary is 512
  std::string data = ::testing::TempDir() + "/vocab-600.bin";
  ASSERT_TRUE(writeTokenFile(data, tokens));
  std::string model = modelPath("tiny_gpt_dynamo_loss.onnx");
  std::string bundle = ::testing::TempDir() + "/tiny-gpt-vocab.llmc";
  ::testing::internal::CaptureStdout();
  int rc = runCompile({model, "-o", bundle});
  ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0);
  for (const std::string &m : {model, bundle}) {
    TrainConfig cfg;
    cfg.model = m;
    cfg.data = data;
    cfg.steps = 200;
    std::string err;
    EXPECT_EQ(runTrain(cfg, err), 1) << m;
    EXPECT_NE(err.find("vocab-600.bin' has token 600 at position 3000, "
                       "outside the model's vocabulary of 512"),
              std::string::npos)
        << m << ": " << err;
  }
}

} // namespace
