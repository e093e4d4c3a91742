//===- JitGpuTest.cpp - The JIT API on a GPU ------------------------------===//
//
// llmc::jit::Step with device cuda on the tiny GPT, against the same API on
// the CPU reference evaluator: losses and parameters over a few steps,
// weights moved from one device to the other, evaluate() leaving training
// bit for bit as without it, device inputs ordered after a side stream
// that is still writing them (the race test), and errors. Skips with
// "no CUDA GPU: ..." without one. Models: $LLMC_TEST_MODELS, else the
// source tree's test/models.
//
//===----------------------------------------------------------------------===//
#include "llmc/Step.h"

#include "compiler/Compile.h"
#include "compiler/ModelLoader.h"
#include "runtime/Bundle.h"
#include "runtime/CudaApi.h"
#include "runtime/Executor.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace llmc;
using jit::TensorView;

namespace {

#define REQUIRE_GPU()                                                          \
  do {                                                                         \
    std::string why_;                                                          \
    if (!::llmc::gpuAvailable(why_))                                           \
      GTEST_SKIP() << "no CUDA GPU: " << why_;                                 \
  } while (0)

std::string tinyModel() {
  const char *dir = std::getenv("LLMC_TEST_MODELS");
  return std::string(dir ? dir : LLMC_TEST_MODELS_DIR) +
         "/tiny_gpt_dynamo_loss_dyn.onnx";
}

constexpr int64_t B = 4, T = 64, V = 512;

jit::Options options(jit::Device device) {
  jit::Options o;
  o.batch = B;
  o.seq = T;
  o.device = device;
  return o;
}

struct Batch {
  std::vector<int64_t> idx, tgt;
  explicit Batch(int seed) {
    uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);
    for (int64_t i = 0; i < B * T; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      idx.push_back(static_cast<int64_t>(x % V));
      tgt.push_back(static_cast<int64_t>((x >> 20) % V));
    }
  }
  std::vector<TensorView> views() const {
    return {TensorView::host(idx.data(), {B, T}),
            TensorView::host(tgt.data(), {B, T})};
  }
};

double relativeError(const std::vector<uint8_t> &a,
                     const std::vector<uint8_t> &b) {
  const float *x = reinterpret_cast<const float *>(a.data());
  const float *y = reinterpret_cast<const float *>(b.data());
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() / 4; ++i) {
    num += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    den += double(y[i]) * y[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

void compileOrFail(jit::Device device, jit::Step &step) {
  Status s = jit::compile(tinyModel(), options(device), step);
  ASSERT_TRUE(s) << s.message();
}

TEST(JitGpu, MatchesTheReferenceEvaluator) {
  REQUIRE_GPU();
  jit::Step gpu, cpu;
  compileOrFail(jit::Device::Cuda, gpu);
  compileOrFail(jit::Device::Cpu, cpu);
  EXPECT_EQ(gpu.report().device, jit::Device::Cuda);
  EXPECT_GT(gpu.report().kernels, 0u);
  ASSERT_EQ(gpu.inputs().size(), cpu.inputs().size());
  ASSERT_EQ(gpu.parameterInfo().size(), cpu.parameterInfo().size());
  std::vector<jit::HostTensor> pg, pc;
  ASSERT_TRUE(gpu.parameters(pg));
  ASSERT_TRUE(cpu.parameters(pc));
  for (size_t i = 0; i < pg.size(); ++i) {
    EXPECT_EQ(pg[i].name, pc[i].name);
    EXPECT_EQ(pg[i].bytes, pc[i].bytes) << "initial " << pg[i].name;
  }
  for (int s = 0; s < 4; ++s) {
    Batch b(s);
    double lg = 0, lc = 0;
    Status st = gpu.run(b.views(), 1e-3, lg);
    ASSERT_TRUE(st) << st.message();
    ASSERT_TRUE(cpu.run(b.views(), 1e-3, lc));
    std::printf("[ numerics ] step %d: loss gpu %.7f reference %.7f\n", s, lg,
                lc);
    EXPECT_NEAR(lg, lc, 1e-4 * std::fabs(lc)) << "step " << s;
  }
  ASSERT_TRUE(gpu.parameters(pg));
  ASSERT_TRUE(cpu.parameters(pc));
  for (size_t i = 0; i < pg.size(); ++i)
    EXPECT_LT(relativeError(pg[i].bytes, pc[i].bytes), 2e-3) << pg[i].name;
}

TEST(JitGpu, WeightsMoveBetweenDevices) {
  REQUIRE_GPU();
  jit::Step gpu, cpu;
  compileOrFail(jit::Device::Cuda, gpu);
  compileOrFail(jit::Device::Cpu, cpu);
  Batch b(7);
  double l = 0;
  for (int s = 0; s < 3; ++s)
    ASSERT_TRUE(cpu.run(Batch(s).views(), 3e-3, l));
  std::vector<jit::HostTensor> trained;
  ASSERT_TRUE(cpu.parameters(trained));
  std::vector<jit::NamedTensor> values;
  for (const jit::HostTensor &t : trained)
    values.push_back(
        {t.name, TensorView::host(reinterpret_cast<const float *>(t.bytes.data()),
                                  t.shape)});
  Status s = gpu.loadParameters(values);
  ASSERT_TRUE(s) << s.message();
  double lg = 0, lc = 0;
  ASSERT_TRUE(gpu.evaluate(b.views(), lg));
  ASSERT_TRUE(cpu.evaluate(b.views(), lc));
  EXPECT_NEAR(lg, lc, 1e-4 * std::fabs(lc));
  std::vector<jit::HostTensor> back;
  ASSERT_TRUE(gpu.parameters(back));
  for (size_t i = 0; i < back.size(); ++i)
    EXPECT_EQ(back[i].bytes, trained[i].bytes) << back[i].name;
}

TEST(JitGpu, EvaluateLeavesTrainingUnchanged) {
  REQUIRE_GPU();
  jit::Step a, b;
  compileOrFail(jit::Device::Cuda, a);
  compileOrFail(jit::Device::Cuda, b);
  for (int s = 0; s < 3; ++s) {
    double la = 0, lb = 0, e = 0;
    ASSERT_TRUE(a.run(Batch(s).views(), 1e-3, la));
    ASSERT_TRUE(b.evaluate(Batch(100 + s).views(), e));
    ASSERT_TRUE(b.run(Batch(s).views(), 1e-3, lb));
    EXPECT_EQ(la, lb) << "step " << s;
  }
  std::vector<jit::HostTensor> pa, pb;
  ASSERT_TRUE(a.parameters(pa));
  ASSERT_TRUE(b.parameters(pb));
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_EQ(pa[i].bytes, pb[i].bytes) << pa[i].name;
}

/// Device inputs written on a side stream that is still busy when run()
/// is called: the step must read them only after the side stream's work.
TEST(JitGpu, DeviceInputsAreOrderedAfterTheCallersStream) {
  REQUIRE_GPU();
  jit::Step ref, step, unordered;
  compileOrFail(jit::Device::Cuda, ref);
  compileOrFail(jit::Device::Cuda, step);
  compileOrFail(jit::Device::Cuda, unordered);
  const cuda::DriverApi *cu = nullptr;
  ASSERT_TRUE(cuda::loadDriver(cu));
  Batch b(3);
  double want = 0;
  ASSERT_TRUE(ref.run(b.views(), 1e-3, want));

  size_t bytes = B * T * 8, junkBytes = size_t(512) << 20;
  CUdeviceptr idx = 0, tgt = 0, goodIdx = 0, goodTgt = 0, junkA = 0, junkB = 0;
  CUstream side = nullptr;
  for (CUdeviceptr *p : {&idx, &tgt, &goodIdx, &goodTgt})
    ASSERT_EQ(cu->cuMemAlloc(p, bytes), CUDA_SUCCESS);
  ASSERT_EQ(cu->cuMemAlloc(&junkA, junkBytes), CUDA_SUCCESS);
  ASSERT_EQ(cu->cuMemAlloc(&junkB, junkBytes), CUDA_SUCCESS);
  ASSERT_EQ(cu->cuMemcpyHtoD(goodIdx, b.idx.data(), bytes), CUDA_SUCCESS);
  ASSERT_EQ(cu->cuMemcpyHtoD(goodTgt, b.tgt.data(), bytes), CUDA_SUCCESS);
  ASSERT_EQ(cu->cuStreamCreate(&side, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  // All on the device, so that nothing here waits for the side stream:
  // zeros first (valid ids: a racing read trains on the wrong batch rather
  // than faulting), then 2 GB of copies, then the real batch.
  auto stage = [&] {
    ASSERT_EQ(cu->cuMemsetD8Async(idx, 0, bytes, side), CUDA_SUCCESS);
    ASSERT_EQ(cu->cuMemsetD8Async(tgt, 0, bytes, side), CUDA_SUCCESS);
    for (int i = 0; i < 4; ++i)
      ASSERT_EQ(cu->cuMemcpyDtoDAsync(junkB, junkA, junkBytes, side),
                CUDA_SUCCESS);
    ASSERT_EQ(cu->cuMemcpyDtoDAsync(idx, goodIdx, bytes, side), CUDA_SUCCESS);
    ASSERT_EQ(cu->cuMemcpyDtoDAsync(tgt, goodTgt, bytes, side), CUDA_SUCCESS);
  };
  uintptr_t s = reinterpret_cast<uintptr_t>(side);
  stage();
  double got = 0;
  Status st = step.run({TensorView::cuda(reinterpret_cast<void *>(idx),
                                         jit::DType::I64, {B, T}, s),
                        TensorView::cuda(reinterpret_cast<void *>(tgt),
                                         jit::DType::I64, {B, T}, s)},
                       1e-3, got);
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(got, want);
  // Without the stream the same call races; what it reads is not asserted,
  // only reported, to show that the test's side stream is slow enough.
  ASSERT_EQ(cu->cuStreamSynchronize(side), CUDA_SUCCESS);
  stage();
  double raced = 0;
  ASSERT_TRUE(unordered.run(
      {TensorView::cuda(reinterpret_cast<void *>(idx), jit::DType::I64, {B, T},
                        jit::kNoStream),
       TensorView::cuda(reinterpret_cast<void *>(tgt), jit::DType::I64, {B, T},
                        jit::kNoStream)},
      1e-3, raced));
  std::printf("[ race ] ordered loss %.7f = reference %.7f; unordered %.7f "
              "(%s)\n",
              got, want, raced, raced == want ? "the race was not hit"
                                              : "it read the stale batch");
  ASSERT_EQ(cu->cuStreamSynchronize(side), CUDA_SUCCESS);
  cu->cuStreamDestroy(side);
  for (CUdeviceptr p : {idx, tgt, goodIdx, goodTgt, junkA, junkB})
    cu->cuMemFree(p);
}

// A bundle written by the compiler (what `llmc compile` does) runs through
// the API as the model file does.
TEST(JitGpu, Bundles) {
  REQUIRE_GPU();
  mlir::MLIRContext context;
  ModelOptions mo;
  mo.batch = B;
  mo.seq = T;
  auto module = loadModel(tinyModel(), mo, context);
  ASSERT_TRUE(module);
  CompileConfig config;
  config.name = "tiny";
  auto compiled = compileModule(*module, config);
  ASSERT_TRUE(mlir::succeeded(compiled));
  std::string path = ::testing::TempDir() + "/jit-tiny.llmc";
  ASSERT_TRUE(writeBundle(path, compiled->planned.plan));
  jit::Step fromBundle, fromModel;
  Status s = jit::compile(path, options(jit::Device::Cuda), fromBundle);
  ASSERT_TRUE(s) << s.message();
  compileOrFail(jit::Device::Cuda, fromModel);
  EXPECT_EQ(fromBundle.inputs().size(), 2u);
  EXPECT_EQ(fromBundle.parameterInfo().size(),
            fromModel.parameterInfo().size());
  for (int k = 0; k < 2; ++k) {
    double a = 0, b = 0;
    ASSERT_TRUE(fromBundle.run(Batch(k).views(), 1e-3, a));
    ASSERT_TRUE(fromModel.run(Batch(k).views(), 1e-3, b));
    EXPECT_EQ(a, b) << "step " << k;
  }
  double ms = 0;
  ASSERT_TRUE(fromBundle.lastStepMs(ms));
  EXPECT_GT(ms, 0.0);
}

// launch() queues steps back to back; the losses are run()'s.
TEST(JitGpu, LaunchedStepsMatchRunSteps) {
  REQUIRE_GPU();
  jit::Step a, b;
  compileOrFail(jit::Device::Cuda, a);
  compileOrFail(jit::Device::Cuda, b);
  double la = 0, lb = 0;
  for (int s = 0; s < 5; ++s) {
    Status st = a.launch(Batch(s).views(), 1e-3);
    ASSERT_TRUE(st) << st.message();
    ASSERT_TRUE(b.run(Batch(s).views(), 1e-3, lb));
  }
  ASSERT_TRUE(a.lastLoss(la));
  EXPECT_EQ(la, lb);
  int n = 200;
  Batch x(0);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i)
    ASSERT_TRUE(a.launch(x.views(), 1e-4));
  ASSERT_TRUE(a.lastLoss(la));
  double us = std::chrono::duration<double, std::micro>(
                  std::chrono::steady_clock::now() - start)
                  .count() /
              n;
  double ms = 0;
  ASSERT_TRUE(a.lastStepMs(ms));
  std::printf("[ timing ] %d launched steps: %.1f us per step (graph replay "
              "%.1f us)\n",
              n, us, ms * 1e3);
}

TEST(JitGpu, PerCallTime) {
  REQUIRE_GPU();
  jit::Step step;
  compileOrFail(jit::Device::Cuda, step);
  Batch b(0);
  double loss = 0;
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(step.run(b.views(), 1e-4, loss));
  int n = 200;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i)
    ASSERT_TRUE(step.run(b.views(), 1e-4, loss));
  double us = std::chrono::duration<double, std::micro>(
                  std::chrono::steady_clock::now() - start)
                  .count() /
              n;
  std::printf("[ timing ] tiny GPT %lldx%lld: %.1f us per run() from host "
              "inputs, loss read back\n",
              static_cast<long long>(B), static_cast<long long>(T), us);
  EXPECT_TRUE(std::isfinite(loss));
}

TEST(JitGpu, Errors) {
  REQUIRE_GPU();
  jit::Options o = options(jit::Device::Cuda);
  o.cudaDevice = 99;
  jit::Step step;
  Status s = jit::compile(tinyModel(), o, step);
  ASSERT_FALSE(s);
  EXPECT_FALSE(step.valid());
  std::printf("[ message ] %s\n", s.message().c_str());
  compileOrFail(jit::Device::Cuda, step);
  Batch b(0);
  std::vector<int32_t> narrow(b.idx.begin(), b.idx.end());
  double loss = 0;
  s = step.run({TensorView::host(narrow.data(), {B, T}), b.views()[1]}, 1e-3,
               loss);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("is i32[4, 64] but the model expects i64[4, 64]"),
            std::string::npos)
      << s.message();
  ASSERT_TRUE(step.run(b.views(), 1e-3, loss)) << "a refused call leaves "
                                                   "the step usable";
}

} // namespace
