//===- MemoryPlanGpuTest.cpp - The memory report against the device -------===//
//
// The report `llmc compile` and `llmc train` print before the first step
// (runtime/DeviceMemory.h) against what the device says: cuMemGetInfo on an
// existing primary context just before Executor::create, after it, and after
// the first replay (which captures and instantiates the graph and loads the
// cuBLASLt kernels the calls need). Both are printed, item by item and per
// stage, so a driver that changes a modelled cost shows which one.
//
// The tiny fixture always runs; $LLMC_BENCH_ONNX (bench/make_gpt2_onnx.py's
// GPT-2, bf16, at $LLMC_BENCH_BATCH or the model's own batch) adds a model
// whose arena is gigabytes, where the issue asks for 2%.
//
//===----------------------------------------------------------------------===//
#include "TrainHarness.h"

#include "compiler/CompileCache.h"
#include "runtime/CudaApi.h"
#include "runtime/DeviceMemory.h"
#include "runtime/Executor.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

namespace llmc {
namespace {

struct Measured {
  uint64_t created = 0, replayed = 0; // bytes taken since the baseline
};

uint64_t freeBytes(const cuda::DriverApi *cu) {
  size_t freeB = 0, totalB = 0;
  cu->cuCtxSynchronize();
  cu->cuMemGetInfo(&freeB, &totalB);
  return freeB;
}

void checkModel(const std::string &model, const CompileConfig &base,
                const ModelOptions &options) {
  CompileConfig config = base;
  config.cacheDir =
      ::testing::TempDir() + "llmc-memory-plan-" + std::to_string(::getpid());
  mlir::MLIRContext context;
  auto compiled = compileModelFile(model, options, config, context);
  std::filesystem::remove_all(config.cacheDir);
  ASSERT_TRUE(mlir::succeeded(compiled)) << model;
  DeviceMemoryPlan reported = compiled->report.memory;

  // The context first, so that the baseline has it (it is not the plan's).
  test::PrimaryContext primary;
  ASSERT_TRUE(test::retainPrimaryContext(primary));
  const cuda::DriverApi *cu = primary.cu;
  uint64_t baseline = freeBytes(cu);

  Measured m;
  DeviceMemoryPlan planned;
  {
    std::unique_ptr<Executor> e;
    Status s = Executor::create(std::move(compiled->planned.plan), {}, e);
    ASSERT_TRUE(s) << s.message();
    m.created = baseline - freeBytes(cu);
    planned = e->memoryPlan();
    // Token ids and targets stay zero: in range for any vocabulary.
    ASSERT_TRUE(s = e->setScalar("lr", 1e-4)) << s.message();
    ASSERT_TRUE(s = e->replay()) << s.message();
    ASSERT_TRUE(s = e->synchronize()) << s.message();
    m.replayed = baseline - freeBytes(cu);
  }
  uint64_t after = baseline - freeBytes(cu);
  cu->cuDevicePrimaryCtxRelease(primary.device);

  uint64_t total = planned.total();
  auto mib = [](double b) { return b / double(1ull << 20); };
  std::printf("[ memory   ] %s\n", model.c_str());
  std::printf("[ memory   ] reported by llmc compile (no GPU facts):\n%s",
              formatDeviceMemory(reported, "[ memory   ]   ").c_str());
  std::printf("[ memory   ] planned on this GPU:\n%s",
              formatDeviceMemory(planned, "[ memory   ]   ").c_str());
  uint64_t atCreate = total - planned.bytesOf("CUDA graph") -
                      planned.bytesOf("cuBLASLt library");
  std::printf("[ memory   ] after Executor::create: measured %.2f MiB, "
              "planned %.2f MiB (all but the graph and the cuBLASLt "
              "library)\n",
              mib(m.created), mib(atCreate));
  std::printf("[ memory   ] after the first replay: measured %.2f MiB, "
              "planned %.2f MiB (difference %+.2f MiB, %+.2f%%)\n",
              mib(m.replayed), mib(total),
              mib(double(m.replayed) - double(total)),
              100.0 * (double(m.replayed) - double(total)) / double(total));
  std::printf("[ memory   ] after the executor is gone: %.2f MiB still "
              "taken\n",
              mib(after));
  // What the plan claims of the device (DeviceMemory.h): the arena's
  // cuMemAlloc exactly, the items the driver places in its own pools
  // between nothing and whole 2 MiB pages each, so a value in [low, high]
  // that may change from call to call (the tiny GPT measured 36 and 42 MiB
  // for 40.91 planned: its total is mostly such pages). For a model whose
  // arena is gigabytes the total must also be within 2%.
  DevicePageBounds pages = planned.pageBounds();
  std::printf("[ memory   ] the device may show %.2f to %.2f MiB\n",
              mib(pages.low), mib(pages.high));
  EXPECT_GE(m.created, pages.low) << "less than the arena's own allocation";
  EXPECT_GE(m.replayed, pages.low);
  EXPECT_LE(m.replayed, pages.high);
  if (total >= (1ull << 30)) {
    EXPECT_NEAR(double(m.replayed), double(total), 0.02 * double(total));
  }
  EXPECT_EQ(reported.bytesOf("arena buffers"),
            planned.bytesOf("arena buffers"));
}

TEST(MemoryPlan, TinyModelMatchesTheDevice) {
  LLMC_REQUIRE_GPU();
  checkModel(test::modelPath("tiny_gpt_dynamo_loss.onnx"), CompileConfig(),
             ModelOptions());
}

TEST(MemoryPlan, Gpt2FromTheEnvironmentMatchesTheDevice) {
  LLMC_REQUIRE_GPU();
  std::string model;
  LLMC_REQUIRE_BENCH_ONNX(model);
  CompileConfig config;
  config.precision.precision = "bf16";
  ModelOptions options;
  if (const char *b = std::getenv("LLMC_BENCH_BATCH"))
    options.batch = std::atoll(b);
  checkModel(model, config, options);
}

// A plan larger than the device: refused before any allocation, with the
// plan's total, the free memory and a batch to try, never a raw CUDA error.
TEST(MemoryPlan, TooLargeIsRefusedBeforeLaunch) {
  LLMC_REQUIRE_GPU();
  test::PrimaryContext primary;
  ASSERT_TRUE(test::retainPrimaryContext(primary));
  const cuda::DriverApi *cu = primary.cu;
  size_t freeB = 0, totalB = 0;
  ASSERT_EQ(cu->cuMemGetInfo(&freeB, &totalB), CUDA_SUCCESS);

  Plan plan;
  plan.name = "too-large";
  plan.arenaBytes = uint64_t(totalB) + (1ull << 30);
  BufferInfo tokens;
  tokens.name = "tokens";
  tokens.role = BufferRole::Input;
  tokens.dtype = DType::I64;
  tokens.shape = {4, 16};
  tokens.bytes = 4 * 16 * 8;
  plan.buffers.push_back(tokens);
  std::unique_ptr<Executor> e;
  Status s = Executor::create(plan, {}, e);
  cu->cuDevicePrimaryCtxRelease(primary.device);
  ASSERT_FALSE(s);
  std::printf("[ memory   ] %s\n", s.message().c_str());
  EXPECT_NE(s.message().find(
                "out of GPU memory: bundle 'too-large' needs an arena of "),
            std::string::npos);
  EXPECT_NE(s.message().find("free of"), std::string::npos);
  EXPECT_EQ(s.message().find("CUDA_ERROR"), std::string::npos);
  EXPECT_FALSE(e);
}

} // namespace
} // namespace llmc
