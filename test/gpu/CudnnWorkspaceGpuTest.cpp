//===- CudnnWorkspaceGpuTest.cpp - The workspace model against cuDNN ------===//
//
// The compiler plans cuDNN's attention workspace without a GPU
// (modelledWorkspaceBytes, CudnnAttention.h; docs/memory.md "cuDNN's
// attention workspace"): the budget, `--batch auto` and the compile report
// count the model, the executor allocates what cuDNN's plans ask for. The
// two must agree:
//
// - ModelMatchesThePlans: every plan cuDNN makes over a grid of shapes (B 1
//   to 8, H 2 to 12, T 64 to 1024, causal or not; forward, deterministic
//   and atomic backward) needs exactly the modelled bytes, the forward's
//   below the backward's, which decides the step's;
// - ModelMatchesTheExecutor: a plan of one forward and one backward step
//   loaded by the executor reports the model's bytes before loading and
//   the same bytes once its attention plans are made (the report's "cuDNN
//   workspace"), and replays with them.
//
// Each test skips with a message without a GPU or without cuDNN.
//
//===----------------------------------------------------------------------===//
#include "runtime/DeviceMemory.h"
#include "test/gpu/CudnnAttentionTestUtil.h"
#include "test/gpu/PlanBuilder.h"

#include <cstdio>

using namespace llmc;
using namespace llmc::test;

namespace {

CudnnAttentionDesc denseDesc(int64_t b, int64_t h, int64_t t, bool causal,
                             bool backward, bool deterministic) {
  const int64_t d = 64;
  Strides4 dense = {h * t * d, t * d, d, 1};
  CudnnAttentionDesc desc;
  desc.backward = backward;
  desc.causal = causal;
  desc.deterministic = deterministic;
  desc.scale = 0.125;
  desc.b = b, desc.hq = h, desc.hkv = h, desc.sq = t, desc.skv = t, desc.d = d;
  desc.q = desc.k = desc.v = desc.o = dense;
  desc.dO = desc.dQ = desc.dK = desc.dV = dense;
  return desc;
}

TEST(CudnnWorkspaceGpu, ModelMatchesThePlans) {
  LLMC_REQUIRE_GPU_AND_CUDNN();
  DeviceSession dev;
  Status st = dev.open();
  ASSERT_TRUE(st) << st.message();
  struct Size {
    int64_t b, h, t;
  };
  const Size sizes[] = {{1, 2, 64},   {2, 4, 128},  {3, 6, 192},
                        {8, 2, 256},  {4, 12, 320}, {1, 12, 512},
                        {8, 12, 512}, {2, 12, 1024}, {8, 4, 1024}};
  int checked = 0;
  for (const Size &s : sizes)
    for (bool causal : {true, false}) {
      uint64_t backward = 0;
      for (int kind = 2; kind >= 0; --kind) { // atomic, deterministic, fwd
        CudnnAttentionDesc desc =
            denseDesc(s.b, s.h, s.t, causal, kind > 0, kind == 1);
        std::unique_ptr<CudnnAttention> plan;
        st = CudnnAttention::create(desc, plan);
        ASSERT_TRUE(st) << st.message();
        uint64_t modelled = modelledWorkspaceBytes(desc);
        std::printf("[ workspace ] %s: %s, cuDNN %llu B, modelled %llu B\n",
                    describe(desc).c_str(), plan->engineName().c_str(),
                    static_cast<unsigned long long>(plan->workspaceBytes()),
                    static_cast<unsigned long long>(modelled));
        EXPECT_EQ(plan->workspaceBytes(), modelled) << describe(desc);
        if (kind > 0)
          backward = modelled;
        else // a step's workspace is the largest plan's: the backward's
          EXPECT_LT(modelled, backward) << describe(desc);
        ++checked;
      }
    }
  EXPECT_EQ(checked, 54);
}

struct ExecutorCase {
  const char *name;
  int64_t b, h, t;
  bool deterministic;
};
void PrintTo(const ExecutorCase &c, std::ostream *os) { *os << c.name; }

/// One causal forward and backward over dense [B, H, T, 64] bf16 buffers.
Plan attentionPlan(const ExecutorCase &c) {
  const int64_t d = 64;
  PlanBuilder p(std::string("workspace-") + c.name);
  for (const char *name : {"q", "k", "v", "o", "do", "dq", "dk", "dv"})
    p.buffer(name, BufferRole::Activation, {c.b, c.h, c.t, d}, DType::BF16);
  p.buffer("lse", BufferRole::Activation, {c.b, c.h, c.t}, DType::F32);
  CudnnAttentionDesc g = denseDesc(c.b, c.h, c.t, true, true, c.deterministic);
  AttentionStep f;
  f.causal = true;
  f.scale = g.scale;
  f.b = c.b, f.hq = c.h, f.hkv = c.h, f.sq = c.t, f.skv = c.t, f.d = d;
  f.q = {"q", 0, g.q};
  f.k = {"k", 0, g.k};
  f.v = {"v", 0, g.v};
  f.o = {"o", 0, g.o};
  f.stats = {"lse", 0, {c.h * c.t, c.t, 1, 1}};
  AttentionStep b = f;
  b.backward = true;
  b.deterministic = c.deterministic;
  b.dO = {"do", 0, g.dO};
  b.dQ = {"dq", 0, g.dQ};
  b.dK = {"dk", 0, g.dK};
  b.dV = {"dv", 0, g.dV};
  p.plan().steps = {{f, "attention_lse", StepPhase::Forward},
                    {b, "attention_grad", StepPhase::Backward}};
  return p.build();
}

class CudnnWorkspaceExecutor : public ::testing::TestWithParam<ExecutorCase> {
};

TEST_P(CudnnWorkspaceExecutor, ModelMatchesTheExecutor) {
  LLMC_REQUIRE_GPU_AND_CUDNN();
  Plan plan = attentionPlan(GetParam());
  DeviceMemoryPlan before = planDeviceMemory(plan, DeviceFacts(), 0);
  std::unique_ptr<Executor> exec;
  ExecutorOptions options;
  options.source = plan.name;
  Status st = Executor::create(plan, options, exec);
  ASSERT_TRUE(st) << st.message();
  DeviceMemoryPlan loaded = exec->memoryPlan();
  std::printf("[ workspace ] %s: planned %llu B, the executor's %llu B\n%s",
              plan.name.c_str(),
              static_cast<unsigned long long>(
                  before.bytesOf("cuDNN workspace")),
              static_cast<unsigned long long>(
                  loaded.bytesOf("cuDNN workspace")),
              formatDeviceMemory(loaded, "  ").c_str());
  EXPECT_GT(before.bytesOf("cuDNN workspace"), 0u);
  EXPECT_EQ(before.bytesOf("cuDNN workspace"),
            loaded.bytesOf("cuDNN workspace"));
  st = exec->replay();
  ASSERT_TRUE(st) << st.message();
  st = exec->synchronize();
  ASSERT_TRUE(st) << st.message();
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudnnWorkspaceExecutor,
    ::testing::Values(ExecutorCase{"B1H2T64", 1, 2, 64, true},
                      ExecutorCase{"B4H12T256", 4, 12, 256, true},
                      ExecutorCase{"B8H12T1024", 8, 12, 1024, true},
                      ExecutorCase{"B2H6T512Atomic", 2, 6, 512, false},
                      ExecutorCase{"B8H12T1024Atomic", 8, 12, 1024, false}),
    [](const auto &info) { return std::string(info.param.name); });

} // namespace
