//===- AttentionStepTest.cpp - cuDNN attention steps without a GPU --------===//
//
// The plan's AttentionStep (Plan.h): a JSON round trip of both directions,
// every validation error on an otherwise valid plan (one thing broken per
// case, the message checked), what cuDNN's fused engines are said to take
// (checkSupported), the memory report's cuDNN workspace line, and the
// loader's Status when LLMC_LIBCUDNN names nothing.
//
//===----------------------------------------------------------------------===//
#include "runtime/CudnnApi.h"
#include "runtime/DeviceMemory.h"
#include "runtime/Plan.h"
#include "runtime/PlanAttention.h"
#include "runtime/PlanJson.h"

#include <gtest/gtest.h>

using namespace llmc;

namespace {

constexpr int64_t B = 2, H = 4, T = 128, D = 64;

BufferInfo tensor(const std::string &name, DType type, uint64_t offset,
                  std::vector<int64_t> shape) {
  BufferInfo b;
  b.name = name;
  b.dtype = type;
  b.shape = shape;
  b.offset = offset;
  b.bytes = b.elementCount() * dtypeSize(type);
  return b;
}

/// A GPT block's attention: q, k, v head windows of one packed qkv
/// [B, T, 3, H, D], o and do [B, T, H, D], lse [B, H, T], the gradients in
/// one packed dqkv; a forward and a backward step.
Plan attentionPlan() {
  Plan plan;
  plan.name = "attention";
  uint64_t qkvBytes = B * T * 3 * H * D * 2, oBytes = B * T * H * D * 2;
  plan.buffers = {tensor("qkv", DType::BF16, 0, {B, T, 3 * H * D}),
                  tensor("o", DType::BF16, qkvBytes, {B, T, H * D}),
                  tensor("lse", DType::F32, qkvBytes + oBytes, {B, H, T}),
                  tensor("do", DType::BF16, qkvBytes + oBytes + B * H * T * 4,
                         {B, T, H * D}),
                  tensor("dqkv", DType::BF16,
                         qkvBytes + 2 * oBytes + B * H * T * 4,
                         {B, T, 3 * H * D})};
  plan.arenaBytes = 2 * qkvBytes + 2 * oBytes + B * H * T * 4;
  std::array<int64_t, 4> packed = {T * 3 * H * D, D, 3 * H * D, 1};
  std::array<int64_t, 4> rows = {T * H * D, D, H * D, 1};
  AttentionStep f;
  f.dtype = DType::BF16;
  f.causal = true;
  f.scale = 0.125;
  f.b = B, f.hq = H, f.hkv = H, f.sq = T, f.skv = T, f.d = D;
  f.q = {"qkv", 0, packed};
  f.k = {"qkv", static_cast<uint64_t>(H * D * 2), packed};
  f.v = {"qkv", static_cast<uint64_t>(2 * H * D * 2), packed};
  f.o = {"o", 0, rows};
  f.stats = {"lse", 0, {H * T, T, 1, 1}};
  AttentionStep g = f;
  g.backward = true;
  g.dO = {"do", 0, rows};
  g.dQ = {"dqkv", 0, packed};
  g.dK = {"dqkv", static_cast<uint64_t>(H * D * 2), packed};
  g.dV = {"dqkv", static_cast<uint64_t>(2 * H * D * 2), packed};
  plan.steps = {{f, "attention_lse_0", StepPhase::Forward},
                {g, "attention_grad_1", StepPhase::Backward}};
  return plan;
}

AttentionStep &forwardOf(Plan &plan) {
  return std::get<AttentionStep>(plan.steps[0].op);
}
AttentionStep &backwardOf(Plan &plan) {
  return std::get<AttentionStep>(plan.steps[1].op);
}

void expectError(const Plan &plan, const std::string &needle) {
  Status status = validatePlan(plan);
  ASSERT_FALSE(status.isOk()) << "expected an error containing: " << needle;
  EXPECT_NE(status.message().find(needle), std::string::npos)
      << status.message();
}

TEST(AttentionStep, ValidPlanPasses) {
  Status status = validatePlan(attentionPlan());
  EXPECT_TRUE(status.isOk()) << status.message();
}

TEST(AttentionStep, JsonRoundTrip) {
  Plan plan = attentionPlan();
  backwardOf(plan).deterministic = false;
  std::vector<BlobRef> blobs;
  nlohmann::json j = planToJson(plan, blobs);
  EXPECT_EQ(j["steps"][0]["kind"], "attention");
  EXPECT_EQ(j["steps"][1]["direction"], "backward");
  Plan back;
  auto load = [](uint64_t, std::vector<uint8_t> &) { return Status::ok(); };
  Status status = planFromJson(j, load, back);
  ASSERT_TRUE(status.isOk()) << status.message();
  ASSERT_EQ(back.steps.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const auto &want = std::get<AttentionStep>(plan.steps[i].op);
    const auto *got = std::get_if<AttentionStep>(&back.steps[i].op);
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(got->backward, want.backward);
    EXPECT_EQ(got->dtype, want.dtype);
    EXPECT_EQ(got->causal, want.causal);
    EXPECT_EQ(got->deterministic, want.deterministic);
    EXPECT_EQ(got->scale, want.scale);
    EXPECT_EQ(got->b, want.b);
    EXPECT_EQ(got->hkv, want.hkv);
    EXPECT_EQ(got->skv, want.skv);
    auto views = attentionViews(*got), wantViews = attentionViews(want);
    ASSERT_EQ(views.size(), wantViews.size());
    for (size_t v = 0; v < views.size(); ++v) {
      EXPECT_EQ(views[v].second->buffer, wantViews[v].second->buffer);
      EXPECT_EQ(views[v].second->offset, wantViews[v].second->offset);
      EXPECT_EQ(views[v].second->strides, wantViews[v].second->strides);
    }
  }
  EXPECT_TRUE(validatePlan(back).isOk());
  // And the JSON of the read plan is the JSON written.
  std::vector<BlobRef> again;
  EXPECT_EQ(planToJson(back, again), j);
}

TEST(AttentionStep, JsonErrorsSayWhere) {
  Plan plan = attentionPlan();
  std::vector<BlobRef> blobs;
  nlohmann::json j = planToJson(plan, blobs);
  auto load = [](uint64_t, std::vector<uint8_t> &) { return Status::ok(); };
  auto expectJsonError = [&](nlohmann::json bad, const std::string &needle) {
    Plan back;
    Status status = planFromJson(bad, load, back);
    ASSERT_FALSE(status.isOk()) << needle;
    EXPECT_NE(status.message().find(needle), std::string::npos)
        << status.message();
  };
  nlohmann::json bad = j;
  bad["steps"][1].erase("dK");
  expectJsonError(bad, "steps[1]: missing 'dK'");
  bad = j;
  bad["steps"][0]["direction"] = "sideways";
  expectJsonError(bad, "'direction' must be forward or backward");
  bad = j;
  bad["steps"][0]["q"]["strides"] = {1, 2, 3};
  expectJsonError(bad, "steps[0].q: 'strides' must be an array of 4");
  bad = j;
  bad["steps"][0].erase("scale");
  expectJsonError(bad, "steps[0]: missing 'scale'");
}

TEST(AttentionStep, UnknownBuffer) {
  Plan plan = attentionPlan();
  forwardOf(plan).v.buffer = "nope";
  expectError(plan, "view 'v' names unknown buffer 'nope'");
}

TEST(AttentionStep, WrongBufferType) {
  Plan plan = attentionPlan();
  backwardOf(plan).stats.buffer = "o";
  expectError(plan, "view 'stats' buffer 'o' is bf16, the step expects f32");
}

TEST(AttentionStep, ViewPastTheBuffer) {
  Plan plan = attentionPlan();
  backwardOf(plan).dV.offset += 64 * 2;
  expectError(plan, "view 'dV' reaches past the end of buffer 'dqkv'");
}

TEST(AttentionStep, MisalignedView) {
  Plan plan = attentionPlan();
  forwardOf(plan).k.offset = 2;
  expectError(plan, "view 'k' starts 2 bytes into its buffer");
}

TEST(AttentionStep, StatsMustBeDense) {
  Plan plan = attentionPlan();
  forwardOf(plan).stats.strides = {T, H * T, 1, 1};
  expectError(plan, "stats must be a dense [b, hq, sq] f32 tensor");
}

TEST(AttentionStep, OnlyBf16AndF16) {
  Plan plan = attentionPlan();
  forwardOf(plan).dtype = DType::F32;
  expectError(plan, "cudnn attention needs bf16 or f16, not f32");
}

TEST(AttentionStep, HeadDimCuDnnTakes) {
  Plan plan = attentionPlan();
  forwardOf(plan).d = 60; // the views stay inside their buffers
  expectError(plan, "head dim that is a multiple of 8 and at most 128");
}

TEST(AttentionStep, HeadsMustGroup) {
  Plan plan = attentionPlan();
  forwardOf(plan).hkv = 3;
  expectError(plan, "query heads must be a multiple of the key/value heads");
}

TEST(AttentionStep, HeadDimContiguous) {
  Plan plan = attentionPlan();
  forwardOf(plan).o.strides[3] = 0; // inside the buffer, not contiguous
  expectError(plan, "the head dim must be contiguous");
}

TEST(AttentionStep, ScalePositive) {
  Plan plan = attentionPlan();
  backwardOf(plan).scale = 0;
  expectError(plan, "the scale must be positive and finite");
}

TEST(AttentionStep, DescribedInMessages) {
  Plan plan = attentionPlan();
  EXPECT_EQ(plan.describeStep(1),
            "step 1 (cudnn attention backward) \"attention_grad_1\"");
  EXPECT_EQ(describe(attentionDesc(forwardOf(plan))),
            "cudnn attention fwd bf16 causal [2, 4/4, 128x128, 64]");
}

// Without a GPU the report models the workspace from the plan's attention
// steps (the largest: here the deterministic backward's dP and row sums);
// once the executor made the plans, their own number replaces it. Either
// way it is part of the arena's one allocation.
TEST(AttentionStep, MemoryReportHasTheWorkspace) {
  Plan plan = attentionPlan();
  DeviceFacts facts;
  DeviceMemoryPlan before = planDeviceMemory(plan, facts, 0);
  uint64_t dP = B * H * T * T * 2, rowSums = B * H * T * 4;
  EXPECT_EQ(before.bytesOf("cuDNN workspace"), dP + rowSums + 256);
  std::string text = formatDeviceMemory(before);
  EXPECT_NE(text.find("260.25 KiB  (modelled: cudnn attention bwd bf16 "
                      "causal [2, 4/4, 128x128, 64]: its dP (2 bytes a "
                      "score) and f32 row sums)"),
            std::string::npos)
      << text;
  facts.cudnnWorkspaceBytes = 3u << 20;
  DeviceMemoryPlan after = planDeviceMemory(plan, facts, 0);
  EXPECT_EQ(after.bytesOf("cuDNN workspace"), 3u << 20);
  EXPECT_GE(after.total(), before.total() + (3u << 20) - dP - rowSums - 256 -
                               (2u << 20));
  text = formatDeviceMemory(after);
  EXPECT_NE(text.find("the largest attention plan's; modelled 260.25 KiB"),
            std::string::npos)
      << text;
  // The arena's allocation (buffers, both workspaces, rounding): exact.
  EXPECT_EQ(after.pageBounds().low % (2u << 20), 0u);
  EXPECT_GE(after.pageBounds().low, plan.arenaBytes + (3u << 20));
}

// The model (CudnnAttention.h) at GPT-2 124M's shape: the deterministic
// backward keeps dP, B x H x T x T in bf16 (session 8 measured 385 MiB at B
// 16 on the H100), the atomic one f32 row sums and an f32 dQ accumulator,
// each with 256 bytes of cuDNN's own, the forward only those. T pads to 64
// rows and 128 columns (GPT-2 124M at B 1 x 72: 128 x 128 scores a head).
TEST(AttentionStep, WorkspaceModelAtGpt2Shapes) {
  CudnnAttentionDesc d;
  d.backward = true;
  d.causal = true;
  d.b = 16, d.hq = 12, d.hkv = 12, d.sq = 1024, d.skv = 1024, d.d = 64;
  EXPECT_EQ(modelledWorkspaceBytes(d), 402653184u + 786432u + 256u);
  d.b = 256;
  EXPECT_EQ(modelledWorkspaceBytes(d), 6442450944u + 12582912u + 256u);
  d.deterministic = false;
  EXPECT_EQ(modelledWorkspaceBytes(d), 12582912u + 805306368u + 256u);
  d.b = 16;
  EXPECT_EQ(modelledWorkspaceBytes(d), 786432u + 50331648u + 256u);
  d.backward = false;
  EXPECT_EQ(modelledWorkspaceBytes(d), 256u);
  // Measured on the H100 (KiB in the report): 387.75 at [1, 12, 72x72, 64]
  // and 64.75 at [1, 4, 24x24, 16].
  d.backward = d.deterministic = true;
  d.b = 1, d.sq = d.skv = 72;
  EXPECT_EQ(modelledWorkspaceBytes(d), 397056u);
  d.hq = d.hkv = 4, d.sq = d.skv = 24, d.d = 16;
  EXPECT_EQ(modelledWorkspaceBytes(d), 66304u);
  // The largest step of a plan decides; it is 256-aligned.
  Plan plan = attentionPlan();
  backwardOf(plan).deterministic = false;
  CudnnWorkspaceModel m = modelCudnnWorkspace(plan);
  EXPECT_EQ(m.bytes, uint64_t(B * H * T * 4 + B * H * T * D * 4 + 256));
  EXPECT_EQ(m.largest, &backwardOf(plan));
  plan.steps.pop_back();
  m = modelCudnnWorkspace(plan);
  EXPECT_EQ(m.bytes, 256u);
  EXPECT_EQ(m.largest, &forwardOf(plan));
}

TEST(AttentionStep, NoWorkspaceLineWithoutAttention) {
  Plan plan = attentionPlan();
  plan.steps.clear();
  for (const DeviceMemoryItem &item :
       planDeviceMemory(plan, DeviceFacts(), 0).items)
    EXPECT_NE(item.name, "cuDNN workspace");
}

} // namespace

namespace {

// A set LLMC_LIBCUDNN that does not load is an error naming it, never a
// quiet fallback (the one cuDNN load of this process).
TEST(CudnnLoader, BadOverrideIsAnError) {
  setenv("LLMC_LIBCUDNN", "/nonexistent/libcudnn.so.9", 1);
  const cuda::CudnnApi *api = nullptr;
  Status status = cuda::loadCudnn(api);
  unsetenv("LLMC_LIBCUDNN");
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(api, nullptr);
  EXPECT_NE(status.message().find("cuDNN not found: LLMC_LIBCUDNN="
                                  "/nonexistent/libcudnn.so.9 cannot be "
                                  "loaded"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("unset LLMC_LIBCUDNN"), std::string::npos);
}

} // namespace
