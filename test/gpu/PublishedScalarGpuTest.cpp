//===- PublishedScalarGpuTest.cpp - The loss read by a spin, on a GPU -----===//
//
// A replay's last kernel publishes the loss slot with a sequence number
// into mapped host memory (runtime/PublishedScalar.h), and readScalar spins
// on it instead of waiting on the graph's event. Checked here: every
// replay's own value (never a stale or a later one), many queued replays,
// a replay behind a long kernel (the read falls back to the event after
// its spin), a plain run in between (not published: the old path), and the
// time of a read of a finished step against an event wait, printed.
// Skips with "no CUDA GPU: ..." without a GPU.
//
//===----------------------------------------------------------------------===//
#include "test/gpu/PlanBuilder.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

using namespace llmc;
using namespace llmc::test;

namespace {

// x += 1 everywhere; loss = x[0] (so replay k publishes x0 + k); then a
// busy wait of `cycles[0]` clock cycles (0: none), so that a test can make
// one replay long.
const char *kBump = R"(
extern "C" __global__ void bump(float *x, float *loss, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
  if (i == 0) *loss = x[0];
})";
const char *kBusy = R"(
extern "C" __global__ void busy(const long long *cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles[0]) {}
})";

constexpr int N = 4096;
constexpr float kX0 = 0.5f;

Plan plan() {
  PlanBuilder b("published-loss");
  b.buffer("x", BufferRole::Param, {N}, DType::F32,
           std::vector<float>(N, kX0))
      .buffer("cycles", BufferRole::Input, {1}, DType::I64)
      .scalar("loss", DType::F32, 0.0);
  uint32_t bump = b.kernel("bump", kBump);
  uint32_t busy = b.kernel("busy", kBusy);
  b.launch(bump, (N + 255) / 256, 256,
           {KernelArg::buffer("x"), KernelArg::scalar("loss"),
            KernelArg::i32(N)});
  b.launch(busy, 1, 1, {KernelArg::buffer("cycles")});
  return b.build();
}

class PublishedLoss : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    ExecutorOptions o;
    o.source = "published-loss";
    o.cacheDir = ::testing::TempDir() + "llmc-published-loss";
    Status s = Executor::create(plan(), o, e);
    ASSERT_TRUE(s) << s.message();
    ASSERT_TRUE(e->publishesLoss()) << "the publishing kernel did not load";
    setCycles(0);
  }
  void TearDown() override {
    if (e) {
      ASSERT_TRUE(e->synchronize());
    }
  }
  void setCycles(int64_t cycles) {
    Status s = e->writeBuffer("cycles", &cycles, sizeof cycles);
    ASSERT_TRUE(s) << s.message();
  }
  double loss() {
    double v = -1;
    Status s = e->readScalar("loss", v);
    EXPECT_TRUE(s) << s.message();
    return v;
  }
  std::unique_ptr<Executor> e;
};

TEST_F(PublishedLoss, EachReplayReadsItsOwnLoss) {
  for (int k = 1; k <= 20; ++k) {
    ASSERT_TRUE(e->replay());
    ASSERT_EQ(loss(), kX0 + k) << "replay " << k;
  }
  // Short steps never need the event (the first replay's graph upload may).
  EXPECT_LE(e->lossEventWaits(), 1u);
}

TEST_F(PublishedLoss, QueuedReplaysReadTheLastOne) {
  for (int k = 1; k <= 200; ++k)
    ASSERT_TRUE(e->replay());
  EXPECT_EQ(loss(), kX0 + 200);
  // And again after a plain run (not published: the stream path) and a
  // replay after it.
  ASSERT_TRUE(e->runPlain());
  EXPECT_EQ(loss(), kX0 + 201);
  ASSERT_TRUE(e->replay());
  EXPECT_EQ(loss(), kX0 + 202);
}

TEST_F(PublishedLoss, ALongStepFallsBackToTheEvent) {
  ASSERT_TRUE(e->replay());
  ASSERT_EQ(loss(), kX0 + 1);
  uint64_t before = e->lossEventWaits();
  setCycles(int64_t(200) * 1000 * 1000); // 100 ms or more at <= 2 GHz
  ASSERT_TRUE(e->replay());
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(loss(), kX0 + 2);
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - t0)
                  .count();
  EXPECT_GT(ms, 20.0) << "the read did not wait for the long step";
  EXPECT_EQ(e->lossEventWaits(), before + 1) << "the spin did not give up";
  setCycles(0);
  ASSERT_TRUE(e->replay());
  EXPECT_EQ(loss(), kX0 + 3);
}

/// The read of a finished step's loss: a spin that finds the number at
/// once, against cuEventSynchronize on the graph's event (the old read).
TEST_F(PublishedLoss, ReadingAFinishedStepCostsNoDriverWait) {
  const cuda::DriverApi *cu = nullptr;
  ASSERT_TRUE(cuda::loadDriver(cu));
  std::vector<double> spin, event;
  for (int k = 0; k < 200; ++k) {
    ASSERT_TRUE(e->replay());
    ASSERT_TRUE(e->synchronize()); // finished
    // synchronize() made the executor's stream current again; the mirror
    // is still the last replay's.
    auto t0 = std::chrono::steady_clock::now();
    double v = loss();
    auto t1 = std::chrono::steady_clock::now();
    ASSERT_EQ(v, kX0 + k + 1);
    spin.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  // The event wait alone, on a finished replay, for comparison.
  CUevent done = nullptr;
  ASSERT_EQ(cu->cuEventCreate(&done, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  for (int k = 0; k < 200; ++k) {
    ASSERT_TRUE(e->replay());
    ASSERT_EQ(cu->cuEventRecord(done, e->stream()), CUDA_SUCCESS);
    ASSERT_TRUE(e->synchronize());
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(cu->cuEventSynchronize(done), CUDA_SUCCESS);
    event.push_back(std::chrono::duration<double, std::micro>(
                        std::chrono::steady_clock::now() - t0)
                        .count());
  }
  cu->cuEventDestroy(done);
  std::sort(spin.begin(), spin.end());
  std::sort(event.begin(), event.end());
  std::printf("[ timing   ] reading a finished replay's loss: published %.2f "
              "us (p90 %.2f), cuEventSynchronize alone %.2f us (p90 %.2f); "
              "medians of 200\n",
              spin[100], spin[180], event[100], event[180]);
  EXPECT_LT(spin[100], 5.0);
}

} // namespace
