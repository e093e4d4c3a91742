//===- ExecutorGpuTest.cpp - Kernels, scalars, graphs and errors on a GPU -===//
//
// Hand-built plans run through the whole executor and are checked against
// the CPU. Each test skips with "no CUDA GPU: ..." where there is none.
//
//===----------------------------------------------------------------------===//
#include "runtime/Bundle.h"
#include "runtime/Nvrtc.h"
#include "test/gpu/PlanBuilder.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

using namespace llmc;
using namespace llmc::test;

namespace {

const char *kAdd = R"(
extern "C" __global__ void add(const float *x, const float *y, float *out,
                               int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] + y[i];
})";

const char *kScale = R"(
extern "C" __global__ void scale(float *x, const float *alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= *alpha;
})";

std::vector<float> ramp(int n, float start, float step) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = start + step * static_cast<float>(i);
  return v;
}

std::string tempDir(const std::string &name) {
  return ::testing::TempDir() + "llmc-gpu-" + name + "-" +
         std::to_string(::getpid());
}

/// out = (x + y) * alpha over n = 1000 (not a multiple of the block).
Plan addScalePlan() {
  const int n = 1000;
  PlanBuilder b("add-scale");
  b.buffer("x", BufferRole::Param, {n}, DType::F32, ramp(n, -3.0f, 0.37f))
      .buffer("y", BufferRole::Input, {n})
      .buffer("out", BufferRole::Output, {n})
      .scalar("alpha", DType::F32, 2.5);
  uint32_t add = b.kernel("add", kAdd);
  uint32_t scale = b.kernel("scale", kScale);
  b.launch(add, (n + 255) / 256, 256,
           {KernelArg::buffer("x"), KernelArg::buffer("y"),
            KernelArg::buffer("out"), KernelArg::i32(n)})
      .launch(scale, (n + 255) / 256, 256,
              {KernelArg::buffer("out"), KernelArg::scalar("alpha"),
               KernelArg::i32(n)});
  return b.build();
}

void expectAddScale(Executor &executor, const std::vector<float> &y,
                    float alpha) {
  std::vector<uint8_t> bytes;
  Status status = executor.readBuffer("out", bytes);
  ASSERT_TRUE(status.isOk()) << status.message();
  std::vector<float> out = toFloats(bytes);
  std::vector<float> x = ramp(1000, -3.0f, 0.37f);
  ASSERT_EQ(out.size(), 1000u);
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(out[i], (x[i] + y[i]) * alpha) << "element " << i;
}

//===----------------------------------------------------------------------===//
// (a) vector add + a scale kernel reading a device scalar
//===----------------------------------------------------------------------===//

TEST_F(GpuTest, VectorAddAndDeviceScalarScale) {
  ExecutorOptions options;
  options.source = "add-scale";
  options.cacheDir = tempDir("a");
  options.syncEachStep = true;
  std::unique_ptr<Executor> executor;
  Status status = Executor::create(addScalePlan(), options, executor);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(executor->recompiledKernels(), 2u); // no cubins: built for the GPU
  std::printf("[info] device arch %s\n", executor->arch().c_str());

  std::vector<float> y = ramp(1000, 1.0f, -0.11f);
  ASSERT_TRUE(executor->writeBuffer("y", y.data(), y.size() * 4).isOk());
  ASSERT_TRUE(executor->runPlain().isOk());
  expectAddScale(*executor, y, 2.5f);

  ASSERT_TRUE(executor->setScalar("alpha", -0.75).isOk());
  ASSERT_TRUE(executor->runPlain().isOk());
  expectAddScale(*executor, y, -0.75f);
  double alpha = 0;
  ASSERT_TRUE(executor->readScalar("alpha", alpha).isOk());
  EXPECT_EQ(alpha, -0.75);
  std::filesystem::remove_all(options.cacheDir);
}

TEST_F(GpuTest, ProfiledRunTimesEveryStepAndComputesTheSame) {
  ExecutorOptions options;
  options.source = "add-scale";
  options.cacheDir = tempDir("profile");
  std::unique_ptr<Executor> executor;
  Status status = Executor::create(addScalePlan(), options, executor);
  ASSERT_TRUE(status.isOk()) << status.message();
  std::vector<float> y = ramp(1000, 1.0f, -0.11f);
  ASSERT_TRUE(executor->writeBuffer("y", y.data(), y.size() * 4).isOk());
  std::vector<float> ms;
  status = executor->runProfiled(ms);
  ASSERT_TRUE(status.isOk()) << status.message();
  expectAddScale(*executor, y, 2.5f);
  ASSERT_EQ(ms.size(), executor->plan().steps.size());
  for (float t : ms) {
    EXPECT_GE(t, 0.0f);
    EXPECT_LT(t, 1000.0f); // two tiny kernels: sane event times
  }
  std::filesystem::remove_all(options.cacheDir);
}

TEST_F(GpuTest, ProfiledReplayTimesEveryLaunchInsideAGraph) {
  ExecutorOptions options;
  options.source = "add-scale";
  options.cacheDir = tempDir("graphprofile");
  std::unique_ptr<Executor> executor;
  Status status = Executor::create(addScalePlan(), options, executor);
  ASSERT_TRUE(status.isOk()) << status.message();
  std::vector<float> y = ramp(1000, 1.0f, -0.11f);
  ASSERT_TRUE(executor->writeBuffer("y", y.data(), y.size() * 4).isOk());
  // Reading before any profiled replay is an error, not garbage.
  GpuTimeline none;
  EXPECT_FALSE(executor->readProfiled(none).isOk());
  // Captured ahead (as `llmc train --breakdown` does), then replayed twice:
  // the second replay reuses the profiled graph and its events.
  ASSERT_TRUE(executor->prepareProfiled().isOk());
  for (int round = 0; round < 2; ++round) {
    GpuTimeline t;
    status = executor->replayProfiled(t);
    ASSERT_TRUE(status.isOk()) << status.message();
    status = executor->readProfiled(t);
    ASSERT_TRUE(status.isOk()) << status.message();
    expectAddScale(*executor, y, 2.5f);
    size_t n = executor->plan().steps.size();
    ASSERT_EQ(t.startMs.size(), n);
    ASSERT_EQ(t.endMs.size(), n);
    // In order on the GPU's clock, inside the graph's span.
    float at = 0;
    for (size_t i = 0; i < n; ++i) {
      EXPECT_GE(t.startMs[i], at) << i;
      EXPECT_GE(t.endMs[i], t.startMs[i]) << i;
      at = t.endMs[i];
    }
    EXPECT_GE(t.graphEndMs, at);
    EXPECT_LT(t.graphEndMs, 1000.0f);
    // The host's span holds the launch call and the GPU's time between the
    // two events (the two clocks agree to far better than this).
    EXPECT_LE(t.host.startMs, t.launchCall.startMs);
    EXPECT_LE(t.launchCall.startMs, t.launchCall.endMs);
    EXPECT_LE(t.launchCall.endMs, t.host.endMs);
    EXPECT_GE(t.host.ms() + 0.01, t.graphEndMs);
  }
  // The plain graph still replays, and its loss-free plan reads back fine.
  ASSERT_TRUE(executor->replay().isOk());
  expectAddScale(*executor, y, 2.5f);
  std::filesystem::remove_all(options.cacheDir);
}

TEST_F(GpuTest, BundleWithCubinsForThisGpuLoadsWithoutRecompiling) {
  Plan plan = addScalePlan();
  std::string arch = detectArch();
  for (KernelInfo &kernel : plan.kernels) {
    CompileRequest request{kernel.name, kernel.source, {}};
    request.options.arch = arch;
    Status compiled = compileToCubin(request, kernel.cubin);
    ASSERT_TRUE(compiled.isOk()) << compiled.message();
    kernel.arch = arch;
  }
  plan.kernels[1].arch = "sm_80"; // a stale cubin: must be recompiled
  std::string dir = tempDir("bundle");
  std::filesystem::create_directories(dir);
  std::string path = dir + "/add-scale.llmc";
  ASSERT_TRUE(writeBundle(path, plan).isOk());
  Plan loaded;
  Status read = readBundle(path, loaded);
  ASSERT_TRUE(read.isOk()) << read.message();

  ExecutorOptions options;
  options.source = path;
  options.cacheDir = dir + "/cache";
  std::unique_ptr<Executor> executor;
  Status status = Executor::create(std::move(loaded), options, executor);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(executor->recompiledKernels(), 1u);
  std::vector<float> y(1000, 0.5f);
  ASSERT_TRUE(executor->writeBuffer("y", y.data(), y.size() * 4).isOk());
  ASSERT_TRUE(executor->replay().isOk());
  expectAddScale(*executor, y, 2.5f);
  std::filesystem::remove_all(dir);
}

//===----------------------------------------------------------------------===//
// (c) CUDA graph replay == plain stream; scalars change without re-capture
//===----------------------------------------------------------------------===//

const char *kLossAndGrad = R"(
extern "C" __global__ void loss_and_grad(const float *y, float *dy,
                                         float *loss, int n) {
  // One block, fixed summation order: deterministic, so plain and graph runs
  // can be compared bit for bit.
  __shared__ float partial[256];
  float sum = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float v = y[i];
    sum += v * v;
    dy[i] = v / n;
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *loss = 0.5f * partial[0] / n;
})";

const char *kSgd = R"(
extern "C" __global__ void sgd(float *w, const float *g, const float *lr,
                               int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] -= *lr * g[i];
})";

const char *kCount = R"(
extern "C" __global__ void count(long long *step) { *step += 1; })";

constexpr int kM = 8, kK = 32, kN = 16;

/// Y = X @ W; loss = mean(Y^2) / 2; dW = X^T @ (Y / n); W -= lr * dW; step++.
Plan sgdPlan() {
  std::vector<float> x(kM * kK), w(kK * kN);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(0.7f * static_cast<float>(i));
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = 0.1f * std::cos(1.3f * static_cast<float>(i));
  PlanBuilder b("sgd");
  b.buffer("X", BufferRole::Input, {kM, kK}, DType::F32, x)
      .buffer("W", BufferRole::Param, {kK, kN}, DType::F32, w)
      .buffer("Y", BufferRole::Activation, {kM, kN})
      .buffer("dY", BufferRole::Activation, {kM, kN})
      .buffer("dW", BufferRole::Grad, {kK, kN})
      .scalar("lr", DType::F32, 0.1)
      .scalar("step", DType::I64, 0)
      .scalar("loss", DType::F32, 0);
  uint32_t lossAndGrad = b.kernel("loss_and_grad", kLossAndGrad);
  uint32_t sgd = b.kernel("sgd", kSgd);
  uint32_t count = b.kernel("count", kCount);
  MatmulStep forward;
  forward.m = kM;
  forward.n = kN;
  forward.k = kK;
  forward.a = "X";
  forward.b = "W";
  forward.d = "Y";
  MatmulStep backward;
  backward.m = kK;
  backward.n = kN;
  backward.k = kM;
  backward.transA = true;
  backward.a = "X";
  backward.b = "dY";
  backward.d = "dW";
  b.matmul(forward)
      .launch(lossAndGrad, 1, 256,
              {KernelArg::buffer("Y"), KernelArg::buffer("dY"),
               KernelArg::scalar("loss"), KernelArg::i32(kM * kN)})
      .matmul(backward)
      .launch(sgd, (kK * kN + 127) / 128, 128,
              {KernelArg::buffer("W"), KernelArg::buffer("dW"),
               KernelArg::scalar("lr"), KernelArg::i32(kK * kN)})
      .launch(count, 1, 1, {KernelArg::scalar("step")});
  return b.build();
}

/// The first step's loss on the CPU, in double.
double referenceLoss(const Plan &plan) {
  std::vector<float> x = toFloats(plan.findBuffer("X")->init);
  std::vector<float> w = toFloats(plan.findBuffer("W")->init);
  double sum = 0;
  for (int i = 0; i < kM; ++i)
    for (int j = 0; j < kN; ++j) {
      double y = 0;
      for (int p = 0; p < kK; ++p)
        y += double(x[i * kK + p]) * w[p * kN + j];
      sum += y * y;
    }
  return 0.5 * sum / (kM * kN);
}

TEST_F(GpuTest, GraphReplayIsBitIdenticalToPlainStream) {
  Plan plan = sgdPlan();
  double expectedLoss = referenceLoss(plan);
  ExecutorOptions options;
  options.cacheDir = tempDir("c");
  std::unique_ptr<Executor> plain, graph;
  Status status = Executor::create(plan, options, plain);
  ASSERT_TRUE(status.isOk()) << status.message();
  status = Executor::create(plan, options, graph);
  ASSERT_TRUE(status.isOk()) << status.message();

  for (int s = 0; s < 3; ++s) {
    double lr = 0.05 * (s + 1);
    ASSERT_TRUE(plain->setScalar("lr", lr).isOk());
    ASSERT_TRUE(plain->runPlain().isOk());
    ASSERT_TRUE(graph->setScalar("lr", lr).isOk());
    status = graph->replay();
    ASSERT_TRUE(status.isOk()) << status.message();
    double lossPlain = 0, lossGraph = 0;
    ASSERT_TRUE(plain->readScalar("loss", lossPlain).isOk());
    ASSERT_TRUE(graph->readScalar("loss", lossGraph).isOk());
    EXPECT_EQ(lossPlain, lossGraph) << "step " << s;
    if (s == 0) {
      EXPECT_NEAR(lossGraph, expectedLoss, 1e-5 * expectedLoss);
    } else {
      EXPECT_LT(lossGraph, expectedLoss) << "SGD should reduce the loss";
    }
  }
  std::vector<uint8_t> wPlain, wGraph;
  ASSERT_TRUE(plain->readBuffer("W", wPlain).isOk());
  ASSERT_TRUE(graph->readBuffer("W", wGraph).isOk());
  EXPECT_EQ(wPlain, wGraph);
  double steps = 0;
  ASSERT_TRUE(graph->readScalar("step", steps).isOk());
  EXPECT_EQ(steps, 3);
  EXPECT_EQ(graph->captureCount(), 1u);
  // 3 kernels + 2 matmuls; cuBLASLt may use more than one node per matmul.
  EXPECT_GE(graph->graphNodeCount(), 5u);
  std::printf("[info] graph of %zu nodes\n", graph->graphNodeCount());

  // lr = 0: the replayed graph leaves W alone but still counts the step.
  ASSERT_TRUE(graph->setScalar("lr", 0.0).isOk());
  ASSERT_TRUE(graph->replay().isOk());
  std::vector<uint8_t> wFrozen;
  ASSERT_TRUE(graph->readBuffer("W", wFrozen).isOk());
  EXPECT_EQ(wFrozen, wGraph);
  ASSERT_TRUE(graph->readScalar("step", steps).isOk());
  EXPECT_EQ(steps, 4);

  // lr = 1: W moves, exactly as the plain path moves it.
  ASSERT_TRUE(graph->setScalar("lr", 1.0).isOk());
  ASSERT_TRUE(graph->replay().isOk());
  ASSERT_TRUE(plain->setScalar("lr", 0.0).isOk());
  ASSERT_TRUE(plain->runPlain().isOk());
  ASSERT_TRUE(plain->setScalar("lr", 1.0).isOk());
  ASSERT_TRUE(plain->runPlain().isOk());
  ASSERT_TRUE(graph->readBuffer("W", wGraph).isOk());
  ASSERT_TRUE(plain->readBuffer("W", wPlain).isOk());
  EXPECT_NE(wGraph, wFrozen);
  EXPECT_EQ(wGraph, wPlain);
  EXPECT_EQ(graph->captureCount(), 1u) << "scalars must not force a re-capture";
  std::filesystem::remove_all(options.cacheDir);
}

TEST_F(GpuTest, GraphReplayOfManySmallKernelsAndTiming) {
  const int n = 4096, launches = 500;
  PlanBuilder b("many");
  b.buffer("x", BufferRole::Param, {n}, DType::F32, ramp(n, 0.5f, 0.001f))
      .scalar("alpha", DType::F32, 1.001);
  uint32_t scale = b.kernel("scale", kScale);
  for (int i = 0; i < launches; ++i)
    b.launch(scale, n / 256, 256,
             {KernelArg::buffer("x"), KernelArg::scalar("alpha"),
              KernelArg::i32(n)});
  ExecutorOptions options;
  options.cacheDir = tempDir("many");
  std::unique_ptr<Executor> executor;
  Status status = Executor::create(b.build(), options, executor);
  ASSERT_TRUE(status.isOk()) << status.message();

  float plainMs = 0, graphMs = 0, captureMs = 0;
  ASSERT_TRUE(executor->runPlain().isOk());
  ASSERT_TRUE(executor->lastRunMs(plainMs).isOk());
  ASSERT_TRUE(executor->replay().isOk()); // captures, then launches
  ASSERT_TRUE(executor->lastRunMs(captureMs).isOk());
  const int replays = 20;
  float total = 0;
  for (int r = 0; r < replays; ++r) {
    ASSERT_TRUE(executor->replay().isOk());
    float ms = 0;
    ASSERT_TRUE(executor->lastRunMs(ms).isOk());
    total += ms;
  }
  graphMs = total / replays;
  std::printf("[timing] %d launches: plain stream %.3f ms, first graph "
              "launch %.3f ms, graph replay %.3f ms (mean of %d)\n",
              launches, plainMs, captureMs, graphMs, replays);

  // Every launch ran, in order: x * alpha^(launches * (2 + replays)).
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(executor->readBuffer("x", bytes).isOk());
  std::vector<float> x = toFloats(bytes), ref = ramp(n, 0.5f, 0.001f);
  const float alpha = 1.001f;
  for (int r = 0; r < launches * (2 + replays); ++r)
    for (float &v : ref)
      v *= alpha;
  for (int i = 0; i < n; i += 97)
    ASSERT_EQ(x[i], ref[i]) << "element " << i;
  std::filesystem::remove_all(options.cacheDir);
}

//===----------------------------------------------------------------------===//
// (d) out of memory, (e) NVRTC errors, and other load errors
//===----------------------------------------------------------------------===//

TEST_F(GpuTest, OutOfMemorySaysHowMuchAndWhatToDo) {
  PlanBuilder b("huge");
  // 512 GiB: more than any GPU holds, within the 1 TiB a bundle may ask
  // for (larger is an invalid plan, before any allocation: PlanTest).
  b.buffer("activations", BufferRole::Activation, {int64_t(1) << 37});
  Plan plan = b.build();
  ExecutorOptions options;
  options.source = "huge.llmc";
  std::unique_ptr<Executor> executor;
  Status status = Executor::create(plan, options, executor);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(executor, nullptr);
  const std::string &m = status.message();
  std::printf("[info] %s\n", m.c_str());
  EXPECT_EQ(m.rfind("out of GPU memory: bundle 'huge.llmc' needs an arena of "
                    "512.03 GiB",
                    0),
            0u)
      << m;
  EXPECT_NE(m.find("free of"), std::string::npos) << m;
  EXPECT_NE(m.find("compile with a smaller batch size"), std::string::npos)
      << m;
}

TEST_F(GpuTest, NvrtcErrorReportsTheLog) {
  PlanBuilder b("broken");
  b.buffer("x", BufferRole::Param, {16});
  uint32_t k = b.kernel("broken", R"(
extern "C" __global__ void broken(float *x) {
  x[threadIdx.x] = missing_function(x);
})");
  b.launch(k, 1, 16, {KernelArg::buffer("x")});
  ExecutorOptions options;
  options.source = "broken.llmc";
  options.cacheDir = tempDir("e");
  std::unique_ptr<Executor> executor;
  Status status = Executor::create(b.build(), options, executor);
  ASSERT_FALSE(status.isOk());
  const std::string &m = status.message();
  EXPECT_NE(m.find("bundle 'broken.llmc': NVRTC failed to compile kernel "
                   "'broken'"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("broken.cu(3): error: identifier \"missing_function\" is "
                   "undefined"),
            std::string::npos)
      << m;
  std::filesystem::remove_all(options.cacheDir);
}

TEST_F(GpuTest, MissingEntrySymbolNamesKernelAndEntry) {
  PlanBuilder b("entry");
  b.buffer("x", BufferRole::Param, {16});
  uint32_t k = b.kernel("scale", kScale);
  b.plan().kernels[k].entry = "scale_typo";
  ExecutorOptions options;
  options.cacheDir = tempDir("entry");
  std::unique_ptr<Executor> executor;
  Status status = Executor::create(b.build(), options, executor);
  ASSERT_FALSE(status.isOk());
  const std::string &m = status.message();
  EXPECT_NE(m.find("cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("kernel 'scale' in bundle 'entry', entry 'scale_typo'"),
            std::string::npos)
      << m;
  std::filesystem::remove_all(options.cacheDir);
}

TEST_F(GpuTest, UnknownNamesAreErrorsNotCrashes) {
  ExecutorOptions options;
  options.cacheDir = tempDir("names");
  std::unique_ptr<Executor> executor;
  Status status = Executor::create(addScalePlan(), options, executor);
  ASSERT_TRUE(status.isOk()) << status.message();
  double value;
  std::vector<uint8_t> bytes;
  EXPECT_NE(executor->setScalar("beta", 1).message().find(
                "has no scalar slot 'beta'"),
            std::string::npos);
  EXPECT_NE(executor->readScalar("beta", value)
                .message()
                .find("has no scalar slot 'beta'"),
            std::string::npos);
  EXPECT_NE(
      executor->readBuffer("z", bytes).message().find("has no buffer 'z'"),
      std::string::npos);
  std::vector<float> tooMuch(2000);
  EXPECT_NE(executor->writeBuffer("y", tooMuch.data(), 8000)
                .message()
                .find("8000 bytes do not fit buffer 'y' (4000 bytes)"),
            std::string::npos);
  float ms;
  EXPECT_NE(executor->lastRunMs(ms).message().find("nothing has run yet"),
            std::string::npos);
  std::filesystem::remove_all(options.cacheDir);
}

} // namespace
