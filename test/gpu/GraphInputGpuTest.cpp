//===- GraphInputGpuTest.cpp - Graph inputs and work streams on a GPU -----===//
//
// Executor::setGraphInputs / replay(sources): the graph copies its inputs
// from device pointers named per replay, updating a node only when a
// pointer changes; and useStream: replays on a caller's stream, ordered
// after that stream's earlier work and before the executor's later work.
// Skips with "no CUDA GPU: ..." without a GPU.
//
//===----------------------------------------------------------------------===//
#include "test/gpu/PlanBuilder.h"

#include <cstdio>

using namespace llmc;
using namespace llmc::test;

namespace {

const char *kAddScale = R"(
extern "C" __global__ void addScale(const float *x, const float *y,
                                    float *out, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (x[i] + y[i]) * alpha;
})";

constexpr int N = 1000;

std::vector<float> ramp(float start, float step) {
  std::vector<float> v(N);
  for (int i = 0; i < N; ++i)
    v[i] = start + step * static_cast<float>(i);
  return v;
}

/// out = (x + y) * 2 with y an input.
Plan plan() {
  PlanBuilder b("graph-inputs");
  b.buffer("x", BufferRole::Param, {N}, DType::F32, ramp(-3.0f, 0.37f))
      .buffer("y", BufferRole::Input, {N})
      .buffer("out", BufferRole::Output, {N});
  uint32_t k = b.kernel("addScale", kAddScale);
  b.launch(k, (N + 255) / 256, 256,
           {KernelArg::buffer("x"), KernelArg::buffer("y"),
            KernelArg::buffer("out"), KernelArg::f32(2.0f),
            KernelArg::i32(N)});
  return b.build();
}

/// `out` against (x + y) * 2; readBuffer waits for everything queued.
void expectOut(Executor &e, const std::vector<float> &y, const char *what) {
  std::vector<uint8_t> bytes;
  Status s = e.readBuffer("out", bytes);
  ASSERT_TRUE(s) << s.message();
  std::vector<float> out = toFloats(bytes), x = ramp(-3.0f, 0.37f);
  for (int i = 0; i < N; ++i)
    ASSERT_EQ(out[i], (x[i] + y[i]) * 2.0f) << what << ", element " << i;
}

class GraphInputs : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    ExecutorOptions o;
    o.source = "graph-inputs";
    o.cacheDir = ::testing::TempDir() + "llmc-graph-inputs";
    Status s = Executor::create(plan(), o, e);
    ASSERT_TRUE(s) << s.message();
    ASSERT_TRUE(cuda::loadDriver(cu));
    ASSERT_EQ(cu->cuCtxSetCurrent(e->cudaContext()), CUDA_SUCCESS);
    for (int k = 0; k < 3; ++k) {
      host[k] = ramp(float(k + 1), 0.01f * float(k + 1));
      ASSERT_EQ(cu->cuMemAlloc(&dev[k], N * 4), CUDA_SUCCESS);
      ASSERT_EQ(cu->cuMemcpyHtoD(dev[k], host[k].data(), N * 4),
                CUDA_SUCCESS);
    }
  }
  void TearDown() override {
    if (e) {
      ASSERT_TRUE(e->synchronize());
    }
    for (CUdeviceptr p : dev)
      if (p)
        cu->cuMemFree(p);
  }
  std::unique_ptr<Executor> e;
  const cuda::DriverApi *cu = nullptr;
  std::vector<float> host[3];
  CUdeviceptr dev[3] = {};
};

TEST_F(GraphInputs, NodesFollowThePointersAndUpdateOnlyOnAChange) {
  ASSERT_TRUE(e->setGraphInputs({{"y", N * 4}}));
  ASSERT_TRUE(e->replay({dev[0]}));
  EXPECT_EQ(e->graphInputNodesUsed(), 1u) << "the capture made a memcpy node";
  expectOut(*e, host[0], "first replay (captured from dev[0])");
  ASSERT_TRUE(e->replay({dev[0]}));
  EXPECT_EQ(e->graphInputUpdates(), 0u) << "same pointer: no update";
  expectOut(*e, host[0], "same pointer");
  ASSERT_TRUE(e->replay({dev[1]}));
  EXPECT_EQ(e->graphInputUpdates(), 1u);
  EXPECT_EQ(e->graphInputNodesUsed(), 1u);
  expectOut(*e, host[1], "new pointer");
  // A host write and source 0: the node is disabled, the write stays.
  ASSERT_TRUE(e->writeBuffer("y", host[2].data(), N * 4));
  ASSERT_TRUE(e->replay({0}));
  EXPECT_EQ(e->graphInputUpdates(), 2u);
  EXPECT_EQ(e->graphInputNodesUsed(), 0u);
  expectOut(*e, host[2], "host input");
  ASSERT_TRUE(e->replay({dev[0]}));
  EXPECT_EQ(e->graphInputUpdates(), 4u) << "repointed and enabled again";
  expectOut(*e, host[0], "device input after a host one");
  EXPECT_EQ(e->captureCount(), 1u);
  float ms = 0;
  ASSERT_TRUE(e->lastRunMs(ms));
  EXPECT_GT(ms, 0.0f) << "the graph's own events time it";
}

TEST_F(GraphInputs, FirstReplayFromTheHostCopiesOutsideTheGraph) {
  ASSERT_TRUE(e->setGraphInputs({{"y", N * 4}}));
  ASSERT_TRUE(e->writeBuffer("y", host[2].data(), N * 4));
  ASSERT_TRUE(e->replay({0}));
  expectOut(*e, host[2], "host input at capture");
  ASSERT_TRUE(e->replay({dev[1]}));
  EXPECT_EQ(e->graphInputNodesUsed(), 0u) << "no node was captured";
  expectOut(*e, host[1], "a plain copy before the launch");
}

TEST_F(GraphInputs, ACallersStreamOrdersTheReplay) {
  ASSERT_TRUE(e->setGraphInputs({{"y", N * 4}}));
  CUstream side = nullptr;
  ASSERT_EQ(cu->cuStreamCreate(&side, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  size_t junkBytes = size_t(256) << 20;
  CUdeviceptr junkA = 0, junkB = 0, staged = 0;
  ASSERT_EQ(cu->cuMemAlloc(&junkA, junkBytes), CUDA_SUCCESS);
  ASSERT_EQ(cu->cuMemAlloc(&junkB, junkBytes), CUDA_SUCCESS);
  ASSERT_EQ(cu->cuMemAlloc(&staged, N * 4), CUDA_SUCCESS);
  ASSERT_TRUE(e->replay({dev[0]})); // captured on the executor's stream
  auto busy = [&] {
    for (int i = 0; i < 4; ++i)
      ASSERT_EQ(cu->cuMemcpyDtoDAsync(junkB, junkA, junkBytes, side),
                CUDA_SUCCESS);
  };
  // On `side`: stale data, 1 GB of copies, then the real input. The replay
  // queued after them on `side` must read the real input.
  ASSERT_EQ(cu->cuMemcpyDtoDAsync(staged, dev[2], N * 4, side), CUDA_SUCCESS);
  busy();
  ASSERT_EQ(cu->cuMemcpyDtoDAsync(staged, dev[1], N * 4, side), CUDA_SUCCESS);
  ASSERT_TRUE(e->useStream(side));
  EXPECT_EQ(e->workStream(), side);
  ASSERT_TRUE(e->replay({staged}));
  expectOut(*e, host[1], "a replay on the side stream after its copies");
  // A replay on `side` behind 1 GB of copies, then one on the executor's
  // stream queued at once: the second waits for the first (on the graph's
  // stop event), so its result is the one left.
  ASSERT_TRUE(e->useStream(side));
  busy();
  ASSERT_TRUE(e->replay({dev[1]}));
  ASSERT_TRUE(e->useStream(e->stream()));
  ASSERT_TRUE(e->replay({dev[0]}));
  expectOut(*e, host[0], "the executor's replay after the side stream's");
  // The same with a host write between them: launches of one graph are
  // serialized by the driver anyway, but the write into `y` is not, and must
  // wait for the side stream's replay (whose node would otherwise copy
  // dev[1] over it before the executor's replay runs).
  ASSERT_TRUE(e->useStream(side));
  busy();
  ASSERT_TRUE(e->replay({dev[1]}));
  ASSERT_TRUE(e->useStream(e->stream()));
  ASSERT_TRUE(e->writeBuffer("y", host[2].data(), N * 4));
  ASSERT_TRUE(e->replay({0}));
  expectOut(*e, host[2], "a host write after the side stream's replay");
  // The caller may destroy its stream once the step is queued: the next
  // switch waits on the graph's event, not on the stream.
  ASSERT_TRUE(e->useStream(side));
  busy();
  ASSERT_TRUE(e->replay({dev[2]}));
  ASSERT_EQ(cu->cuStreamDestroy(side), CUDA_SUCCESS);
  ASSERT_TRUE(e->useStream(e->stream()));
  expectOut(*e, host[2], "after the caller's stream was destroyed");
  for (CUdeviceptr p : {junkA, junkB, staged})
    cu->cuMemFree(p);
}

TEST_F(GraphInputs, MisuseIsAStatus) {
  Status s = e->setGraphInputs({{"nope", 4}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("has no buffer 'nope'"), std::string::npos)
      << s.message();
  s = e->setGraphInputs({{"y", N * 4 + 4}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("cannot copy 4004 bytes into buffer 'y'"),
            std::string::npos)
      << s.message();
  ASSERT_TRUE(e->setGraphInputs({{"y", N * 4}}));
  s = e->replay({dev[0], dev[1]});
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("2 sources for the 1 graph inputs"),
            std::string::npos)
      << s.message();
  ASSERT_TRUE(e->replay({dev[0]}));
  s = e->setGraphInputs({{"y", N * 4}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("is captured already"), std::string::npos)
      << s.message();
  std::printf("[ message ] %s\n", s.message().c_str());
}

} // namespace
