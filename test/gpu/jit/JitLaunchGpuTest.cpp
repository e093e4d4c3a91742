//===- JitLaunchGpuTest.cpp - Device inputs over pointers and streams -----===//
//
// A step runs on its device inputs' stream and copies them by graph nodes
// repointed per call (docs/jit-api.md, "What one call costs"). Whatever the
// mix of pointers, streams and host inputs from call to call, the losses and
// the trained parameters must be those of the same batches given as host
// arrays. Skips with "no CUDA GPU: ..." without a GPU.
//
//===----------------------------------------------------------------------===//
#include "llmc/Step.h"

#include "runtime/CudaApi.h"
#include "runtime/Executor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace llmc;
using jit::TensorView;

namespace {

constexpr int64_t B = 4, T = 64, V = 512;

std::string tinyModel() {
  const char *dir = std::getenv("LLMC_TEST_MODELS");
  return std::string(dir ? dir : LLMC_TEST_MODELS_DIR) +
         "/tiny_gpt_dynamo_loss_dyn.onnx";
}

struct Batch {
  std::vector<int64_t> idx, tgt;
  explicit Batch(int seed) {
    uint64_t x = 0x2545f4914f6cdd1dull * (seed + 7);
    for (int64_t i = 0; i < B * T; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      idx.push_back(static_cast<int64_t>(x % V));
      tgt.push_back(static_cast<int64_t>((x >> 24) % V));
    }
  }
  std::vector<TensorView> host() const {
    return {TensorView::host(idx.data(), {B, T}),
            TensorView::host(tgt.data(), {B, T})};
  }
};

/// How call k passes its batch.
enum class Pass { Host, OneStream, TwoStreams, NoStream };

/// Every device call uploads its batch afresh: new pointers each time.
struct Call {
  Pass pass;
  uintptr_t streamA; // idx's stream (tgt's too for OneStream)
  uintptr_t streamB; // tgt's for TwoStreams
};

class JitLaunch : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (!gpuAvailable(why))
      GTEST_SKIP() << "no CUDA GPU: " << why;
    jit::Options o;
    o.batch = B;
    o.seq = T;
    o.device = jit::Device::Cuda;
    for (jit::Step *s : {&ref, &step}) {
      Status st = jit::compile(tinyModel(), o, *s);
      ASSERT_TRUE(st) << st.message();
    }
    ASSERT_TRUE(cuda::loadDriver(cu));
    CUcontext ctx = nullptr;
    CUdevice dev = 0;
    ASSERT_EQ(cu->cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    ASSERT_EQ(cu->cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
    ASSERT_EQ(cu->cuCtxSetCurrent(ctx), CUDA_SUCCESS);
    for (CUstream *s : {&side1, &side2})
      ASSERT_EQ(cu->cuStreamCreate(s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  }
  void TearDown() override {
    if (!cu)
      return;
    cu->cuCtxSynchronize();
    for (CUdeviceptr p : device)
      cu->cuMemFree(p);
    for (CUstream s : {side1, side2})
      if (s)
        cu->cuStreamDestroy(s);
    CUdevice dev = 0;
    cu->cuDeviceGet(&dev, 0);
    cu->cuDevicePrimaryCtxRelease(dev);
  }

  /// Batch `b` in fresh device memory: {idx, tgt}.
  std::pair<void *, void *> upload(const Batch &b) {
    CUdeviceptr idx = 0, tgt = 0;
    size_t bytes = B * T * 8;
    EXPECT_EQ(cu->cuMemAlloc(&idx, bytes), CUDA_SUCCESS);
    EXPECT_EQ(cu->cuMemAlloc(&tgt, bytes), CUDA_SUCCESS);
    EXPECT_EQ(cu->cuMemcpyHtoD(idx, b.idx.data(), bytes), CUDA_SUCCESS);
    EXPECT_EQ(cu->cuMemcpyHtoD(tgt, b.tgt.data(), bytes), CUDA_SUCCESS);
    // A pageable cuMemcpyHtoD may return before its DMA lands, and the
    // streams here do not wait for the legacy stream.
    EXPECT_EQ(cu->cuCtxSynchronize(), CUDA_SUCCESS);
    device.push_back(idx);
    device.push_back(tgt);
    return {reinterpret_cast<void *>(idx), reinterpret_cast<void *>(tgt)};
  }

  std::vector<TensorView> views(const Batch &b, const Call &c) {
    if (c.pass == Pass::Host)
      return b.host();
    auto [idx, tgt] = upload(b);
    uintptr_t sa = c.pass == Pass::NoStream ? jit::kNoStream : c.streamA;
    uintptr_t sb = c.pass == Pass::TwoStreams ? c.streamB : sa;
    return {TensorView::cuda(idx, jit::DType::I64, {B, T}, sa),
            TensorView::cuda(tgt, jit::DType::I64, {B, T}, sb)};
  }

  jit::Step ref, step;
  const cuda::DriverApi *cu = nullptr;
  CUstream side1 = nullptr, side2 = nullptr;
  std::vector<CUdeviceptr> device;
};

TEST_F(JitLaunch, EveryMixOfPointersStreamsAndHostInputsTrainsAlike) {
  uintptr_t s1 = reinterpret_cast<uintptr_t>(side1);
  uintptr_t s2 = reinterpret_cast<uintptr_t>(side2);
  const Call calls[] = {
      {Pass::OneStream, s1, 0},  // captured with input nodes
      {Pass::OneStream, s1, 0},  // nodes repointed
      {Pass::Host, 0, 0},        // nodes disabled
      {Pass::OneStream, s2, 0},  // another stream
      {Pass::TwoStreams, s1, s2}, // the executor's stream, event pairs
      {Pass::OneStream, 0, 0},   // the legacy default stream
      {Pass::NoStream, 0, 0},    // no ordering asked for (data is ready)
      {Pass::OneStream, s1, 0},
  };
  int k = 0;
  for (const Call &c : calls) {
    Batch b(k);
    std::vector<TensorView> in = views(b, c);
    double want = 0, got = 0;
    ASSERT_TRUE(ref.run(b.host(), 1e-3, want));
    Status s = step.run(in, 1e-3, got);
    ASSERT_TRUE(s) << "call " << k << ": " << s.message();
    EXPECT_EQ(got, want) << "call " << k;
    ++k;
  }
  // Queued steps, pointers alternating, the stream changing every 5 steps
  // and the learning rate every step (80 uploads: the pinned scalar ring
  // of 64 wraps), read once at the end.
  auto a = upload(Batch(100)), b = upload(Batch(101));
  for (int i = 0; i < 80; ++i) {
    auto [idx, tgt] = i % 2 ? b : a;
    uintptr_t si = (i / 5) % 2 ? s2 : s1;
    double lr = 1e-3 * (1 + 0.01 * i);
    ASSERT_TRUE(ref.launch(Batch(100 + i % 2).host(), lr));
    Status s = step.launch({TensorView::cuda(idx, jit::DType::I64, {B, T}, si),
                            TensorView::cuda(tgt, jit::DType::I64, {B, T}, si)},
                           lr);
    ASSERT_TRUE(s) << s.message();
  }
  double want = 0, got = 0;
  ASSERT_TRUE(ref.lastLoss(want));
  ASSERT_TRUE(step.lastLoss(got));
  EXPECT_EQ(got, want);
  std::vector<jit::HostTensor> pr, ps;
  ASSERT_TRUE(ref.parameters(pr));
  ASSERT_TRUE(step.parameters(ps));
  ASSERT_EQ(pr.size(), ps.size());
  for (size_t i = 0; i < pr.size(); ++i)
    EXPECT_EQ(pr[i].bytes, ps[i].bytes) << pr[i].name;
  double ms = 0;
  ASSERT_TRUE(step.lastStepMs(ms));
  EXPECT_GT(ms, 0.0);
}

// The caller's stream need not outlive its step: after a launch on a
// stream that is then destroyed, the step carries on from host memory.
TEST_F(JitLaunch, ACallersStreamMayGoAwayAfterItsStep) {
  CUstream gone = nullptr;
  ASSERT_EQ(cu->cuStreamCreate(&gone, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  Batch b0(0), b1(1);
  auto [idx, tgt] = upload(b0);
  uintptr_t g = reinterpret_cast<uintptr_t>(gone);
  ASSERT_TRUE(step.launch({TensorView::cuda(idx, jit::DType::I64, {B, T}, g),
                           TensorView::cuda(tgt, jit::DType::I64, {B, T}, g)},
                          1e-3));
  ASSERT_EQ(cu->cuStreamDestroy(gone), CUDA_SUCCESS);
  double want = 0, got = 0;
  ASSERT_TRUE(ref.run(b0.host(), 1e-3, want));
  ASSERT_TRUE(ref.run(b1.host(), 1e-3, want));
  Status s = step.run(b1.host(), 1e-3, got);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(got, want);
}

// What a step costs the host with device inputs on one stream: queueing
// (one graph launch) and the whole call with the loss read back.
TEST_F(JitLaunch, PerCallTimeFromDeviceInputs) {
  auto [idx, tgt] = upload(Batch(0));
  uintptr_t s1 = reinterpret_cast<uintptr_t>(side1);
  std::vector<TensorView> in = {
      TensorView::cuda(idx, jit::DType::I64, {B, T}, s1),
      TensorView::cuda(tgt, jit::DType::I64, {B, T}, s1)};
  double loss = 0;
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(step.run(in, 1e-4, loss));
  int n = 300;
  double queue = 0, whole = 0;
  for (int i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(step.launch(in, 1e-4));
    auto t1 = std::chrono::steady_clock::now();
    ASSERT_TRUE(step.lastLoss(loss));
    auto t2 = std::chrono::steady_clock::now();
    queue += std::chrono::duration<double, std::micro>(t1 - t0).count();
    whole += std::chrono::duration<double, std::micro>(t2 - t0).count();
  }
  double ms = 0;
  ASSERT_TRUE(step.lastStepMs(ms));
  std::printf("[ timing ] device inputs on one stream: queueing %.1f us, "
              "call with the loss %.1f us, graph %.1f us (means of %d)\n",
              queue / n, whole / n, ms * 1e3, n);
  EXPECT_TRUE(std::isfinite(loss));
}

} // namespace
