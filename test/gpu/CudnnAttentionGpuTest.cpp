//===- CudnnAttentionGpuTest.cpp - cuDNN attention vs float64 -------------===//
//
// cuDNN's fused attention (runtime/CudnnAttention.h) on random data against
// a float64 reference of every (batch, head): O, the row log-sum-exp (the
// same natural-log convention as llmc's lse), dQ, dK, dV; bf16 within a
// relative L2 error of 1e-2, f16 within 3e-3; NaN never passes. Causal and
// not, q/k/v as head windows of one packed buffer, GQA, head dim 128, f16.
// The backward is deterministic (two runs bitwise equal), and the pair
// replays bitwise from a captured CUDA graph. Every test skips with a
// message without a GPU or without cuDNN.
//
//===----------------------------------------------------------------------===//
#include "test/gpu/CudnnAttentionTestUtil.h"

#include <cstdio>

using namespace llmc;
using namespace llmc::test;

namespace {

struct Shape {
  const char *name;
  int64_t b, hq, hkv, t, d;
  bool causal, bf16, packed;
};
void PrintTo(const Shape &s, std::ostream *os) { *os << s.name; }

std::vector<Shape> shapes() {
  return {
      {"CausalBf16", 2, 4, 4, 256, 64, true, true, false},
      {"NonCausalBf16", 2, 3, 3, 192, 64, false, true, false},
      {"PackedQkvBf16", 2, 4, 4, 256, 64, true, true, true},
      {"GqaBf16", 1, 8, 2, 256, 64, true, true, false},
      {"PackedGqaBf16", 1, 6, 2, 128, 64, true, true, true},
      {"Dim128Bf16", 1, 2, 2, 128, 128, true, true, false},
      {"CausalF16", 1, 4, 4, 256, 64, true, false, false},
  };
}

class CudnnAttentionGpu : public ::testing::TestWithParam<Shape> {};

TEST_P(CudnnAttentionGpu, MatchesFloat64) {
  LLMC_REQUIRE_GPU_AND_CUDNN();
  const Shape &s = GetParam();
  DeviceSession dev;
  Status st = dev.open();
  ASSERT_TRUE(st) << st.message();
  AttentionCase c;
  st = makeCase(dev, s.b, s.hq, s.hkv, s.t, s.d, s.causal, s.bf16, s.packed,
                1234, c);
  ASSERT_TRUE(st) << st.message();
  CudnnRun run;
  st = prepareCudnn(dev, c, run);
  ASSERT_TRUE(st) << st.message();
  st = runCudnn(dev, c, run);
  ASSERT_TRUE(st) << st.message();

  double tol = s.bf16 ? 1e-2 : 3e-3;
  FloatFormat f = c.format();
  std::vector<float> stats;
  st = dev.download(c.args.stats, static_cast<size_t>(s.b * s.hq * s.t),
                    stats);
  ASSERT_TRUE(st) << st.message();
  int64_t group = s.hq / s.hkv;
  double worst[5] = {0, 0, 0, 0, 0};
  for (int64_t b = 0; b < s.b; ++b) {
    for (int64_t kh = 0; kh < s.hkv; ++kh) {
      std::vector<double> dkWant(s.t * s.d, 0), dvWant(s.t * s.d, 0);
      for (int64_t h = kh * group; h < (kh + 1) * group; ++h) {
        HeadReference r = referenceHead(c, b, h);
        std::vector<double> o, dq, lse(s.t);
        ASSERT_TRUE(readHead(dev, c.args.o, c.qDims(), c.fwd.o, b, h, f, o));
        ASSERT_TRUE(
            readHead(dev, c.args.dQ, c.qDims(), c.fwd.dQ, b, h, f, dq));
        for (int64_t i = 0; i < s.t; ++i)
          lse[i] = stats[static_cast<size_t>((b * s.hq + h) * s.t + i)];
        double e[3] = {relativeError(o, r.o), relativeError(lse, r.lse),
                       relativeError(dq, r.dq)};
        for (int i = 0; i < 3; ++i) {
          EXPECT_LT(e[i], i == 1 ? 1e-5 : tol)
              << (i == 0 ? "O" : i == 1 ? "lse" : "dQ") << " of batch " << b
              << " head " << h;
          worst[i] = std::max(worst[i], std::isnan(e[i]) ? INFINITY : e[i]);
        }
        for (size_t i = 0; i < dkWant.size(); ++i)
          dkWant[i] += r.dk[i], dvWant[i] += r.dv[i];
      }
      std::vector<double> dk, dv;
      ASSERT_TRUE(readHead(dev, c.args.dK, c.kvDims(), c.fwd.dK, b, kh, f, dk));
      ASSERT_TRUE(readHead(dev, c.args.dV, c.kvDims(), c.fwd.dV, b, kh, f, dv));
      double ek = relativeError(dk, dkWant), ev = relativeError(dv, dvWant);
      EXPECT_LT(ek, tol) << "dK of batch " << b << " kv head " << kh;
      EXPECT_LT(ev, tol) << "dV of batch " << b << " kv head " << kh;
      worst[3] = std::max(worst[3], std::isnan(ek) ? INFINITY : ek);
      worst[4] = std::max(worst[4], std::isnan(ev) ? INFINITY : ev);
    }
  }
  std::printf("[ cudnn ] %s vs float64, worst relative L2: O %.2e lse %.2e "
              "dQ %.2e dK %.2e dV %.2e\n",
              s.name, worst[0], worst[1], worst[2], worst[3], worst[4]);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudnnAttentionGpu,
                         ::testing::ValuesIn(shapes()),
                         [](const auto &info) {
                           return std::string(info.param.name);
                         });

class CudnnAttentionGpuDeterminism : public CudnnCaseTest {};
class CudnnAttentionGpuGraph : public CudnnCaseTest {};

// Two backward runs on the same inputs give the same bits: dQ is not
// accumulated with atomics.
TEST_F(CudnnAttentionGpuDeterminism, BackwardTwiceBitwiseEqual) {
  LLMC_REQUIRE_GPU_AND_CUDNN();
  ASSERT_NO_FATAL_FAILURE(start(4, 12, 1024, 99));
  for (int repeat = 0; repeat < 3; ++repeat) {
    Status st = run_.bwd->run(dev_.stream(), c_.args);
    ASSERT_TRUE(st) << st.message();
    OutputBits again;
    ASSERT_TRUE(st = readOutputs(dev_, c_, again)) << st.message();
    expectSameBits(first_, again, "on run " + std::to_string(repeat + 2));
  }
}

// The forward and backward captured into a CUDA graph (as the executor
// captures a step) replay to the bits of the direct runs.
TEST_F(CudnnAttentionGpuGraph, CapturedReplayBitwiseEqual) {
  LLMC_REQUIRE_GPU_AND_CUDNN();
  ASSERT_NO_FATAL_FAILURE(start(2, 12, 512, 7));
  Status st = clearOutputs(dev_, c_);
  ASSERT_TRUE(st) << st.message();

  const cuda::DriverApi &cu = dev_.cu();
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cu.cuStreamBeginCapture(dev_.stream(),
                                    CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  Status fwd = run_.fwd->run(dev_.stream(), c_.args);
  Status bwd = fwd ? run_.bwd->run(dev_.stream(), c_.args) : fwd;
  CUresult ended = cu.cuStreamEndCapture(dev_.stream(), &graph);
  ASSERT_TRUE(bwd) << "cuDNN attention is not capturable: " << bwd.message();
  ASSERT_EQ(ended, CUDA_SUCCESS) << "capture failed";
  ASSERT_EQ(cu.cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(cu.cuGraphLaunch(exec, dev_.stream()), CUDA_SUCCESS);
  ASSERT_TRUE(dev_.sync());
  OutputBits replayed;
  ASSERT_TRUE(st = readOutputs(dev_, c_, replayed)) << st.message();
  expectSameBits(first_, replayed, "after a graph replay");
  cu.cuGraphExecDestroy(exec);
  cu.cuGraphDestroy(graph);
}

} // namespace
