//===- PlanTest.cpp - Plan validation -------------------------------------===//
//
// Every check of validatePlan has a case here that breaks exactly one thing in
// an otherwise valid plan and looks for the message naming it.
//
//===----------------------------------------------------------------------===//
#include "runtime/Plan.h"
#include "runtime/PlanJson.h"

#include <gtest/gtest.h>

#include <cstdint>

using namespace llmc;

namespace {

BufferInfo buffer(const std::string &name, uint64_t offset, uint64_t elems,
                  BufferRole role = BufferRole::Activation) {
  BufferInfo b;
  b.name = name;
  b.role = role;
  b.dtype = DType::F32;
  b.shape = {static_cast<int64_t>(elems)};
  b.offset = offset;
  b.bytes = elems * 4;
  return b;
}

/// x[16], y[16], w[4x4] param, lr slot; kernel + launch, matmul, memset.
Plan validPlan() {
  Plan plan;
  plan.name = "test";
  plan.arenaBytes = 4096;
  plan.buffers = {buffer("x", 0, 16), buffer("y", 256, 16),
                  buffer("w", 512, 16, BufferRole::Param)};
  plan.buffers[2].shape = {4, 4};
  plan.buffers[2].init.assign(64, 1);
  plan.scalars = {{"lr", DType::F32, 1024, 0.1}};
  KernelInfo k;
  k.name = "scale";
  k.entry = "scale";
  k.source = "extern \"C\" __global__ void scale(float *x) {}";
  plan.kernels = {k};
  LaunchStep launch;
  launch.kernel = 0;
  launch.grid = {1, 1, 1};
  launch.block = {16, 1, 1};
  launch.args = {KernelArg::buffer("x"), KernelArg::scalar("lr"),
                 KernelArg::i32(16)};
  MatmulStep mm;
  mm.m = 4;
  mm.n = 4;
  mm.k = 4;
  mm.a = "x";
  mm.b = "w";
  mm.d = "y";
  plan.steps = {{launch, "scale x"}, {mm, ""}, {MemsetStep{"y", 0}, ""}};
  return plan;
}

void expectError(const Plan &plan, const std::string &needle) {
  Status status = validatePlan(plan);
  ASSERT_FALSE(status.isOk()) << "expected an error containing: " << needle;
  EXPECT_NE(status.message().find(needle), std::string::npos)
      << status.message();
}

TEST(Plan, ValidPlanPasses) {
  Status status = validatePlan(validPlan());
  EXPECT_TRUE(status.isOk()) << status.message();
}

TEST(Plan, DTypeAndRoleNamesRoundTrip) {
  for (DType t :
       {DType::F32, DType::F16, DType::BF16, DType::F8E4M3, DType::F8E5M2,
        DType::I32, DType::I64, DType::U8, DType::U16}) {
    DType back;
    ASSERT_TRUE(parseDType(dtypeName(t), back)) << dtypeName(t);
    EXPECT_EQ(back, t);
    EXPECT_GT(dtypeSize(t), 0u);
  }
  DType t;
  EXPECT_FALSE(parseDType("float", t));
  BufferRole role;
  ASSERT_TRUE(parseRole("optimizer_state", role));
  EXPECT_EQ(role, BufferRole::OptimizerState);
  EXPECT_STREQ(roleName(BufferRole::Grad), "grad");
  EXPECT_FALSE(parseRole("weights", role));
}

TEST(Plan, BufferOutsideArena) {
  Plan plan = validPlan();
  plan.buffers[1].offset = 3840;
  plan.buffers[1].bytes = 512;
  expectError(plan, "buffer 'y': bytes [3840, 4352) lie outside the arena of "
                    "4096 bytes");
}

TEST(Plan, BufferMisaligned) {
  Plan plan = validPlan();
  plan.buffers[1].offset = 260;
  expectError(plan, "buffer 'y': offset 260 is not a multiple of its "
                    "alignment 256");
  plan.buffers[1].alignment = 3;
  expectError(plan, "alignment 3 is not a power of two");
}

TEST(Plan, ShapeLargerThanBytes) {
  Plan plan = validPlan();
  plan.buffers[0].shape = {17};
  expectError(plan, "buffer 'x': shape needs 68 bytes but the buffer has 64");
}

// A shape of [2^32, 2^32] has 0 elements modulo 2^64: it must not pass as
// fitting in 64 bytes.
TEST(Plan, ShapeWhoseElementCountOverflows) {
  Plan plan = validPlan();
  plan.buffers[0].shape = {int64_t(1) << 32, int64_t(1) << 32};
  expectError(plan, "buffer 'x': shape [4294967296, 4294967296] has about "
                    "1.8e+19 elements, more than a 64-bit count holds");
  plan.buffers[0].shape = {5, 3689348814741910324};
  expectError(plan, "buffer 'x': shape [5, 3689348814741910324] has about "
                    "1.8e+19 elements");
}

TEST(Plan, ArenaBeyondTheLimit) {
  Plan plan = validPlan();
  plan.arenaBytes = UINT64_MAX;
  expectError(plan, "the arena of 18446744073709551615 bytes (16.0 EiB) is "
                    "more than the 1.0 TiB llmc allows");
  plan.arenaBytes = (uint64_t(1) << 40) + 1;
  expectError(plan, "the arena of 1099511627777 bytes (1.0 TiB) is more than");
  plan = validPlan();
  plan.workspaceBytes = UINT64_MAX - 100;
  expectError(plan, "the cuBLASLt workspace of 18446744073709551515 bytes");
  // Each fits, their sum does not (Executor::allocateArena adds them).
  plan = validPlan();
  plan.arenaBytes = uint64_t(1) << 40;
  plan.workspaceBytes = 32ull << 20;
  expectError(plan, "the arena with its cuBLASLt workspace of 1099545182208 "
                    "bytes");
}

TEST(Plan, BufferEndBeyond2To64IsNotPrintedWrapped) {
  Plan plan = validPlan();
  plan.buffers[1].offset = 256;
  plan.buffers[1].bytes = UINT64_MAX - 100;
  expectError(plan, "buffer 'y': bytes [256, beyond 2^64) lie outside");
}

TEST(Plan, InitialDataOfWrongSize) {
  Plan plan = validPlan();
  plan.buffers[2].init.resize(10);
  expectError(plan, "buffer 'w': initial data has 10 bytes, the buffer 64");
}

TEST(Plan, DuplicateNames) {
  Plan plan = validPlan();
  plan.scalars[0].name = "x";
  expectError(plan, "two buffers or scalar slots are named 'x'");
  plan = validPlan();
  plan.kernels.push_back(plan.kernels[0]);
  expectError(plan, "two kernels are named 'scale'");
}

TEST(Plan, ScalarSlotChecks) {
  Plan plan = validPlan();
  plan.scalars[0].offset = 1026;
  expectError(plan, "scalar slot 'lr': offset 1026 is not aligned to 4");
  plan.scalars[0].offset = 4096;
  expectError(plan, "scalar slot 'lr': offset 4096 lies outside the arena");
  plan.scalars[0].offset = 1024;
  plan.scalars[0].dtype = DType::BF16;
  expectError(plan, "scalar slot 'lr': dtype bf16 is not f32, i32 or i64");
}

TEST(Plan, KernelNeedsCodeAndEntry) {
  Plan plan = validPlan();
  plan.kernels[0].source.clear();
  expectError(plan, "kernel 'scale' has neither a cubin nor CUDA source");
  plan.kernels[0].cubin = {1, 2, 3};
  expectError(plan, "kernel 'scale' has a cubin but no arch");
  plan = validPlan();
  plan.kernels[0].entry.clear();
  expectError(plan, "kernel 'scale' has no entry symbol");
}

TEST(Plan, LaunchArgumentsMustExist) {
  Plan plan = validPlan();
  std::get<LaunchStep>(plan.steps[0].op).args[0] = KernelArg::buffer("nope");
  expectError(plan, "step 0 (launch 'scale') \"scale x\": argument 0 names "
                    "unknown buffer 'nope'");
  plan = validPlan();
  std::get<LaunchStep>(plan.steps[0].op).args[1] = KernelArg::scalar("step");
  expectError(plan, "argument 1 names unknown scalar slot 'step'");
  plan = validPlan();
  std::get<LaunchStep>(plan.steps[0].op).args[0] = KernelArg::buffer("x", 65);
  expectError(plan, "argument 0: offset 65 lies past the end of buffer 'x'");
}

TEST(Plan, LaunchDimensions) {
  Plan plan = validPlan();
  std::get<LaunchStep>(plan.steps[0].op).kernel = 3;
  expectError(plan, "kernel index 3 is out of range (the plan has 1 kernels)");
  plan = validPlan();
  std::get<LaunchStep>(plan.steps[0].op).block = {32, 64, 1};
  expectError(plan, "block of 2048 threads exceeds 1024");
  plan = validPlan();
  std::get<LaunchStep>(plan.steps[0].op).grid = {1, 0, 1};
  expectError(plan, "grid and block dimensions must be positive");
  plan = validPlan();
  std::get<LaunchStep>(plan.steps[0].op).grid = {2147483648u, 1, 1};
  expectError(plan, "grid x of 2147483648 exceeds 2147483647");
  std::get<LaunchStep>(plan.steps[0].op).grid = {2147483647u, 1, 1};
  EXPECT_TRUE(validatePlan(plan).isOk());
}

TEST(Plan, MatmulOperands) {
  Plan plan = validPlan();
  std::get<MatmulStep>(plan.steps[1].op).k = 5;
  expectError(plan, "step 1 (matmul): operand A needs 80 bytes but buffer "
                    "'x' has 64");
  plan = validPlan();
  std::get<MatmulStep>(plan.steps[1].op).b = "missing";
  expectError(plan, "operand B names unknown buffer 'missing'");
  plan = validPlan();
  std::get<MatmulStep>(plan.steps[1].op).typeA = DType::BF16;
  expectError(plan, "operand A buffer 'x' is f32, the matmul expects bf16");
  plan = validPlan();
  std::get<MatmulStep>(plan.steps[1].op).batch = 2;
  expectError(plan, "operand A needs 128 bytes");
  // Stride 0 broadcasts one matrix to every batch: it needs no extra bytes.
  auto &mm = std::get<MatmulStep>(plan.steps[1].op);
  mm.strideA = 0;
  mm.strideB = 0;
  mm.strideD = 0;
  EXPECT_TRUE(validatePlan(plan).isOk()) << validatePlan(plan).message();
  mm.typeD = DType::I32;
  expectError(plan, "matmul on i32 is not supported");
}

// Sizes from a damaged bundle must fail validation without overflowing
// (found by the bundle fuzzer: m = 2^63 - 1 overflowed m * k, which UBSan
// reports as undefined behaviour).
TEST(Plan, MatmulSizesThatOverflow) {
  Plan plan = validPlan();
  std::get<MatmulStep>(plan.steps[1].op).m = INT64_MAX;
  expectError(plan, "step 1 (matmul): operand A of m=9223372036854775807 n=4 "
                    "k=4 batch=1 spans more than 2^63 elements");
  plan = validPlan();
  std::get<MatmulStep>(plan.steps[1].op).batch = INT64_MAX;
  expectError(plan, "spans more than 2^63 elements");
  plan = validPlan();
  auto &mm = std::get<MatmulStep>(plan.steps[1].op);
  mm.batch = 3;
  mm.strideA = INT64_MAX / 2;
  expectError(plan, "operand A of m=4 n=4 k=4 batch=3 spans more than 2^63");
  // An element count that fits 63 bits whose byte size wraps 2^64.
  plan = validPlan();
  std::get<MatmulStep>(plan.steps[1].op).m = int64_t(1) << 60;
  expectError(plan, "operand A needs more than 2^64 bytes but buffer 'x' has 64");
}

TEST(Plan, MemsetBufferMustExist) {
  Plan plan = validPlan();
  std::get<MemsetStep>(plan.steps[2].op).buffer = "z";
  expectError(plan, "step 2 (memset): memset names unknown buffer 'z'");
}

} // namespace

// The GELU / bias-gradient epilogues (docs/codegen.md): the combinations
// cuBLASLt accepts, checked before anything reaches it.
TEST(Plan, MatmulEpilogues) {
  auto epiloguePlan = [](MatmulEpilogue e) {
    Plan plan = validPlan();
    auto &mm = std::get<MatmulStep>(plan.steps[1].op);
    mm.m = 2; // A [2,2] in x, B [2,8] in w, D [2,8] in y
    mm.n = 8;
    mm.k = 2;
    mm.epilogue = e;
    return plan;
  };
  auto mm = [](Plan &plan) -> MatmulStep & {
    return std::get<MatmulStep>(plan.steps[1].op);
  };
  Plan plan = epiloguePlan(MatmulEpilogue::None);
  mm(plan).aux = "x";
  expectError(plan, "aux and biasGrad need an epilogue");

  plan = epiloguePlan(MatmulEpilogue::Gelu);
  mm(plan).aux = "x";
  EXPECT_TRUE(validatePlan(plan).isOk()) << validatePlan(plan).message();
  mm(plan).aux = "missing";
  expectError(plan, "operand aux names unknown buffer 'missing'");
  mm(plan).aux = "x";
  mm(plan).biasGrad = "x";
  expectError(plan, "epilogue 'gelu' writes no bias gradient");
  plan = epiloguePlan(MatmulEpilogue::Gelu);
  mm(plan).aux = "x";
  mm(plan).batch = 2;
  mm(plan).strideA = mm(plan).strideB = mm(plan).strideD = 0; // fits
  expectError(plan, "epilogue 'gelu' needs one GEMM (batch 1) and no C");

  plan = epiloguePlan(MatmulEpilogue::Gelu);
  mm(plan).m = 4;
  mm(plan).n = 4; // aux ld 4
  mm(plan).k = 4;
  mm(plan).aux = "x";
  expectError(plan, "needs n a multiple of 8 (the aux ld), got 4");

  plan = epiloguePlan(MatmulEpilogue::GeluGrad);
  expectError(plan, "epilogue 'gelu_grad' needs an aux matrix");
  mm(plan).aux = "x";
  mm(plan).biasGrad = "x";
  EXPECT_TRUE(validatePlan(plan).isOk()) << validatePlan(plan).message();
  mm(plan).bias = "x";
  expectError(plan, "epilogue 'gelu_grad' adds no bias");

  plan = epiloguePlan(MatmulEpilogue::BiasGradA);
  mm(plan).biasGrad = "x";
  expectError(plan, "needs biasGrad, transA and not transB");
  mm(plan).transA = true; // A stored [k, m] = [2, 2]
  EXPECT_TRUE(validatePlan(plan).isOk()) << validatePlan(plan).message();
  mm(plan).aux = "x";
  expectError(plan, "epilogue 'bias_grad_a' takes no aux matrix");

  // BGRADA (HF Conv1D's wgrad, dW = x^T c): the [n] sum of B over k, in
  // the same layout; a 4-element vector holds A's [m] sum but not B's [n].
  plan = epiloguePlan(MatmulEpilogue::BiasGradB);
  plan.buffers.push_back(buffer("g", 768, 4));
  mm(plan).biasGrad = "x";
  expectError(plan, "epilogue 'bias_grad_b' needs biasGrad, transA and not "
                    "transB");
  mm(plan).transA = true;
  EXPECT_TRUE(validatePlan(plan).isOk()) << validatePlan(plan).message();
  mm(plan).transB = true; // B stored [n, k] = [8, 2]: fits, wrong layout
  expectError(plan, "needs biasGrad, transA and not transB");
  mm(plan).transB = false;
  mm(plan).bias = "x";
  expectError(plan, "epilogue 'bias_grad_b' adds no bias");
  mm(plan).bias.clear();
  mm(plan).biasGrad = "g"; // [n] = 8 elements
  expectError(plan, "buffer 'g' has 16");
  plan = epiloguePlan(MatmulEpilogue::BiasGradA);
  plan.buffers.push_back(buffer("g", 768, 4));
  mm(plan).transA = true;
  mm(plan).biasGrad = "g"; // [m] = 2 elements fit
  EXPECT_TRUE(validatePlan(plan).isOk()) << validatePlan(plan).message();
}

TEST(Plan, MatmulEpilogueJson) {
  Plan plan = validPlan();
  auto &mm = std::get<MatmulStep>(plan.steps[1].op);
  mm.m = 2;
  mm.n = 8;
  mm.k = 2;
  mm.epilogue = MatmulEpilogue::GeluGrad;
  mm.aux = "x";
  mm.biasGrad = "x";
  std::vector<BlobRef> blobs;
  nlohmann::json j = planToJson(plan, blobs);
  auto load = [&](uint64_t i, std::vector<uint8_t> &bytes) {
    bytes.assign(blobs[i].data, blobs[i].data + blobs[i].size);
    return Status::ok();
  };
  Plan back;
  ASSERT_TRUE(planFromJson(j, load, back).isOk());
  const auto &got = std::get<MatmulStep>(back.steps[1].op);
  EXPECT_EQ(got.epilogue, MatmulEpilogue::GeluGrad);
  EXPECT_EQ(got.aux, "x");
  EXPECT_EQ(got.biasGrad, "x");

  j["steps"][1]["epilogue"] = "bias_grad_b";
  Plan rhs;
  ASSERT_TRUE(planFromJson(j, load, rhs).isOk());
  EXPECT_EQ(std::get<MatmulStep>(rhs.steps[1].op).epilogue,
            MatmulEpilogue::BiasGradB);

  j["steps"][1]["epilogue"] = "relu";
  Status status = planFromJson(j, load, back);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("epilogue 'relu' is not none, gelu, "
                                  "gelu_grad, bias_grad_a or bias_grad_b"),
            std::string::npos)
      << status.message();
}
