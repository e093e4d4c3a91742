//===- CompileTimeGpuTest.cpp - Cold and warm compile to a ready step -----===//
//
// Issue 19 asks for a cold compile of GPT-2 124M bf16 within 10 s and a warm
// one within 0.5 s; issue 17 for a second compile of the same model ready
// within 0.5 s, not counting CUDA context creation (both reported). This
// test measures, in one process, on the model named by $LLMC_BENCH_ONNX
// (bench/compile_time.sh makes one with bench/make_gpt2_onnx.py):
//
//   cold     compileModelFile with an empty cache (import, passes, codegen,
//            NVRTC), then the compile cache stores the entry;
//   context  cuInit and the primary context, timed on their own;
//   warm     compileModelFile again in a fresh MLIRContext: a hit;
//   load     Executor::create: modules, arena, weights to the device.
//
// "ready" is warm + load, with and without the context. Without
// $LLMC_BENCH_ONNX the test skips; a tiny model checks that a hit gives
// the same first step as the compile that stored it.
//
//===----------------------------------------------------------------------===//
#include "TrainHarness.h"

#include "compiler/CompileCache.h"
#include "runtime/CudaApi.h"
#include "runtime/Executor.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

namespace llmc {
namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

std::string freshCacheDir(const char *what) {
  std::string dir = ::testing::TempDir() + "llmc-compile-time-" + what + "-" +
                    std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

struct Timed {
  mlir::FailureOr<CompiledModel> compiled = mlir::failure();
  CompileCacheOutcome outcome;
  double seconds = 0;
};

Timed compileTimed(const std::string &model, const ModelOptions &options,
                   const CompileConfig &config) {
  mlir::MLIRContext context;
  Timed t;
  auto t0 = std::chrono::steady_clock::now();
  t.compiled = compileModelFile(model, options, config, context, &t.outcome);
  t.seconds = since(t0);
  return t;
}

TEST(CompileTime, Gpt2FromTheEnvironment) {
  LLMC_REQUIRE_GPU();
  std::string model;
  LLMC_REQUIRE_BENCH_ONNX(model);
  CompileConfig config;
  config.precision.precision = "bf16";
  config.cacheDir = freshCacheDir("gpt2");
  ModelOptions options;

  Timed cold = compileTimed(model, options, config);
  ASSERT_TRUE(mlir::succeeded(cold.compiled));
  EXPECT_EQ(cold.outcome.kind, CompileCacheOutcome::Stored)
      << describeCacheOutcome(cold.outcome);

  auto t0 = std::chrono::steady_clock::now();
  test::PrimaryContext primary;
  ASSERT_TRUE(test::retainPrimaryContext(primary));
  double contextSeconds = since(t0);

  Timed warm = compileTimed(model, options, config);
  ASSERT_TRUE(mlir::succeeded(warm.compiled));
  EXPECT_EQ(warm.outcome.kind, CompileCacheOutcome::Hit)
      << describeCacheOutcome(warm.outcome);
  auto t1 = std::chrono::steady_clock::now();
  std::unique_ptr<Executor> executor;
  Status s = Executor::create(std::move(warm.compiled->planned.plan), {},
                              executor);
  ASSERT_TRUE(s) << s.message();
  double loadSeconds = since(t1);
  executor.reset();
  primary.cu->cuDevicePrimaryCtxRelease(primary.device);
  std::filesystem::remove_all(config.cacheDir);

  const CompileReport &r = cold.compiled->report;
  std::printf("[ compile  ] %s: %zu kernels, %zu launches\n", model.c_str(),
              r.kernels, r.launches);
  std::printf("[ compile  ] cold %.2f s (import %.2f, pipeline %.2f, codegen "
              "%.2f, NVRTC %.2f)\n",
              cold.seconds, r.importSeconds, r.pipelineSeconds,
              r.codegenSeconds, r.nvrtcSeconds);
  std::printf("[ compile  ] warm %.3f s (compile cache hit), executor load "
              "%.3f s, CUDA context %.3f s\n",
              warm.seconds, loadSeconds, contextSeconds);
  std::printf("[ compile  ] ready after a warm compile: %.3f s without the "
              "context, %.3f s with it\n",
              warm.seconds + loadSeconds,
              warm.seconds + loadSeconds + contextSeconds);
  // The bars of issues 19 and 17.
  EXPECT_LE(cold.seconds, 10.0);
  EXPECT_LE(warm.seconds, 0.5);
  EXPECT_LE(warm.seconds + loadSeconds, 0.5);
}

// A hit is the compile that stored it: the same first loss, bit for bit.
TEST(CompileTime, HitStepsLikeTheCompileThatStoredIt) {
  LLMC_REQUIRE_GPU();
  std::string model = test::modelPath("tiny_gpt_dynamo_loss.onnx");
  CompileConfig config;
  config.cacheDir = freshCacheDir("tiny");
  ModelOptions options;
  Timed cold = compileTimed(model, options, config);
  ASSERT_TRUE(mlir::succeeded(cold.compiled));
  ASSERT_EQ(cold.outcome.kind, CompileCacheOutcome::Stored)
      << describeCacheOutcome(cold.outcome);
  Timed warm = compileTimed(model, options, config);
  ASSERT_TRUE(mlir::succeeded(warm.compiled));
  ASSERT_EQ(warm.outcome.kind, CompileCacheOutcome::Hit);
  std::filesystem::remove_all(config.cacheDir);

  float losses[2] = {0, 0};
  Plan *plans[2] = {&cold.compiled->planned.plan, &warm.compiled->planned.plan};
  for (int i = 0; i < 2; ++i) {
    std::unique_ptr<Executor> e;
    Status s = Executor::create(*plans[i], {}, e);
    ASSERT_TRUE(s) << s.message();
    // Token ids and targets: zeros are in range for any vocabulary.
    ASSERT_TRUE(s = e->setScalar("lr", 1e-3)) << s.message();
    ASSERT_TRUE(s = e->runPlain()) << s.message();
    double loss = 0;
    ASSERT_TRUE(s = e->readScalar("loss", loss)) << s.message();
    losses[i] = static_cast<float>(loss);
  }
  EXPECT_EQ(losses[0], losses[1]);
  EXPECT_TRUE(std::isfinite(losses[0]));
}

} // namespace
} // namespace llmc
