//===- ColumnSumGpuTest.cpp - Bias gradients in the norm-gradient kernel --===//
//
// The column sums of llmc-fuse-elementwise (docs/fusion.md "Column sums in
// the norm-gradient kernel"): a bias gradient of a norm gradient's row
// value (the residual gradient, or dx) summed in the norm's row kernel
// next to dweight and dbias, instead of cuBLASLt's BGRADA epilogue on the
// weight gradient (bf16) or a column-sum kernel (f32, or n not a multiple
// of 8). Each case runs fused and with `--no-fuse=colsum` on the same
// random inputs (the sums add in another order, so within tolerance; every
// other result bitwise equal), and against the CPU reference evaluator,
// plain and as a CUDA graph replayed twice (bitwise equal: fixed order, no
// atomics on data). The timing test prints both plans at GPT-2 124M's
// attention-projection shape. For bf16 at n a multiple of 8 both plans have
// two launches (BGRADA runs inside the matmul's), so SumJoinsNormGroup
// checks on the CPU that the sum is in the norm's group. Without a GPU only
// that and the NVRTC checks run.
//
//===----------------------------------------------------------------------===//
#include "test/gpu/codegen/GpuHarness.h"

#include "dialects/llmc/LlmcDialect.h"
#include "dialects/llmc/LlmcOps.h"

#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

using namespace llmc::test;

namespace {

llmc::FusionConfig colSumsOff() {
  llmc::FusionConfig c;
  c.colSums = false;
  return c;
}

/// HF GPT-2's ln_2 backward and the attention projection's weight and
/// bias gradients: rows x n, the residual gradient `dres`, `xin` the
/// projection's input [rows, k]. `t` is the activation type (bf16 or f32).
std::string residualBlock(int64_t b, int64_t s, int64_t n, int64_t k,
                          const std::string &t) {
  std::string rows = std::to_string(b * s), bs = std::to_string(b) + "x" +
                                                 std::to_string(s);
  std::string N = std::to_string(n), K = std::to_string(k);
  std::string row3 = "tensor<" + bs + "x" + N + "x";
  std::string f = row3 + "f32>", a = row3 + t + ">";
  std::string flat = "tensor<" + rows + "x" + N + "x" + t + ">";
  std::string xin = "tensor<" + rows + "x" + K + "x" + t + ">";
  std::string dw = "tensor<" + K + "x" + N + "x" + t + ">";
  std::string vec = "tensor<" + N + "xf32>", bias = "tensor<" + N + "x" + t + ">";
  std::string cast = t == "f32" ? "" : "  %c = llmc.cast %dy : " + a + " -> " + f + "\n";
  std::string dyv = t == "f32" ? "%dy" : "%c";
  std::string out = t == "f32" ? "%r" : "%rc";
  std::string castOut = t == "f32" ? "" : "  %rc = llmc.cast %r : " + f + " -> " + a + "\n";
  return "func.func @forward(%x: " + f + ", %dy: " + a + ", %w: " + vec +
         ", %dres: " + f + ", %xin: " + xin + ") -> (" + f + ", " + vec +
         ", " + vec + ", " + bias + ", " + dw + ") {\n" + cast +
         "  %g:3 = llmc.layer_norm_grad %x, " + dyv +
         " weight %w {axis = 2 : i64, bias_grad} : (" + f + ", " + f + ", " +
         vec + ") -> (" + f + ", " + vec + ", " + vec + ")\n" +
         "  %r = llmc.add %dres, %g#0 : (" + f + ", " + f + ") -> " + f +
         "\n" + castOut + "  %s = llmc.reduce_sum " + out +
         " axes [0, 1] : (" + a + ") -> " + bias + "\n" +
         "  %v = llmc.reshape " + out + " : " + a + " -> " + flat + "\n" +
         "  %m = llmc.matmul %xin, %v {transpose_lhs} : (" + xin + ", " +
         flat + ") -> " + dw + "\n" + "  return %r, %g#1, %g#2, %s, %m : " +
         f + ", " + vec + ", " + vec + ", " + bias + ", " + dw + "\n}\n";
}

struct ColumnSumCase {
  const char *name;
  int64_t b, s, n, k;
  const char *type;
};
void PrintTo(const ColumnSumCase &c, std::ostream *os) { *os << c.name; }

const std::vector<ColumnSumCase> &cases() {
  static const std::vector<ColumnSumCase> all = {
      // GPT-2 124M's attention projection at B 16 x T 1024.
      {"Gpt2Bf16", 16, 1024, 768, 768, "bf16"},
      {"Gpt2F32", 16, 1024, 768, 768, "f32"},
      // Rows not a multiple of the 1024 warps' stride, n not a multiple of
      // 8 (no BGRADA: the unfused sum is a column-sum kernel), lanes
      // without a chunk (25 chunks of 4).
      {"OddBf16", 3, 1001, 100, 40, "bf16"},
      {"OddF32", 7, 333, 100, 40, "f32"},
      // 1000 warps: 125 blocks, 16 ticket runs, the last of 5 blocks (the
      // GPT-2 shapes give 128 blocks, whole runs of 8).
      {"UnevenRunsBf16", 2, 500, 256, 48, "bf16"},
  };
  return all;
}

class ColumnSumGpu : public ::testing::TestWithParam<ColumnSumCase> {};

std::string mlirOf(const ColumnSumCase &c) {
  return residualBlock(c.b, c.s, c.n, c.k, c.type);
}

/// Whether the kernel pipeline with `fusion` puts the bias gradient's
/// reduce_sum into the layer_norm_grad's group.
bool sumInNormGroup(const std::string &mlir,
                    const llmc::FusionConfig &fusion) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(mlir, &context);
  EXPECT_TRUE(module) << "test IR does not parse";
  if (!module || mlir::failed(llmc::runKernelPipeline(*module, fusion)))
    return false;
  bool joined = false;
  module->walk([&](mlir::llmc::ReduceSumOp sum) {
    for (mlir::Operation &op : sum->getBlock()->getOperations())
      joined = joined || mlir::isa<mlir::llmc::LayerNormGradOp>(op);
  });
  return joined;
}

/// bf16 with n a multiple of 8: without the fusion the sum rides in the
/// weight gradient's cuBLASLt BGRADA epilogue, inside the matmul's launch,
/// so the fused plan has as many launches (2); otherwise the unfused sum is
/// a launch of its own.
bool sumHasOwnLaunch(const ColumnSumCase &c) {
  return std::string(c.type) == "f32" || c.n % 8 != 0;
}

// Needs no GPU: what FusedMatchesUnfused compares is the fused sum against
// the unfused one (the launch counts cannot tell them apart for bf16).
TEST_P(ColumnSumGpu, SumJoinsNormGroup) {
  const ColumnSumCase &c = GetParam();
  std::string mlir = residualBlock(2, 16, c.n, c.k, c.type);
  EXPECT_TRUE(sumInNormGroup(mlir, llmc::FusionConfig()));
  EXPECT_FALSE(sumInNormGroup(mlir, colSumsOff()));
}

TEST_P(ColumnSumGpu, FusedMatchesUnfused) {
  LLMC_REQUIRE_GPU();
  // The bias gradient is summed in another order (f32 per warp, then the
  // warps in a fixed order; cuBLASLt's or the column kernel's otherwise):
  // bf16 results within a rounding, f32 within float sums' error.
  Tolerance tol;
  tol.f32 = 1e-5;
  tol.low = 1e-2;
  checkFusionConfigsMatch(mlirOf(GetParam()), "forward", llmc::FusionConfig(),
                          colSumsOff(), 1.0, /*bitwise=*/false, tol,
                          sumHasOwnLaunch(GetParam()));
}

TEST_P(ColumnSumGpu, MatchesReference) {
  LLMC_REQUIRE_GPU();
  const ColumnSumCase &c = GetParam();
  // The reference's float64 matmul at GPT-2's shape takes minutes: the
  // small shapes there, the large ones against the unfused plan above.
  if (c.b * c.s > 8192)
    GTEST_SKIP() << "checked against the unfused plan only";
  checkAgainstReference(mlirOf(c));
}

// checkCompiles also runs the reference: GPT-2's width at 1024 rows (the
// same kernels, fewer rows) keeps that to seconds on the CPU.
TEST_P(ColumnSumGpu, CompilesWithNvrtc) {
  const ColumnSumCase &c = GetParam();
  if (c.b * c.s > 8192)
    checkCompiles(residualBlock(2, 512, c.n, c.k, c.type));
  else
    checkCompiles(mlirOf(c));
}

INSTANTIATE_TEST_SUITE_P(Shapes, ColumnSumGpu, ::testing::ValuesIn(cases()),
                         [](const auto &info) {
                           return std::string(info.param.name);
                         });

/// Prints every launch step of both plans (the row kernel with the column
/// sum and its parameter-sum kernel; the row kernel and the GEMM with
/// BGRADA, which cuBLASLt runs as a GEMM and a bias-gradient kernel) with
/// its time, best of 20 replays.
void reportSteps(const char *what, const std::string &mlir) {
  double totals[2] = {0, 0};
  const llmc::FusionConfig configs[2] = {llmc::FusionConfig(), colSumsOff()};
  const char *names[2] = {"fused", "bgrada"};
  for (int k = 0; k < 2; ++k) {
    auto steps = stepReplayMs(mlir, 20, configs[k]);
    ASSERT_FALSE(steps.empty()) << "the timing run failed";
    for (const auto &[label, ms] : steps) {
      std::printf("[ column sums ] %s %s: %s %.4f ms\n", what, names[k],
                  label.c_str(), ms);
      totals[k] += ms;
    }
  }
  std::printf("[ column sums ] %s: fused %.4f ms, with the sum in the "
              "weight gradient %.4f ms, saved %.4f ms\n",
              what, totals[0], totals[1], totals[1] - totals[0]);
}

TEST(ColumnSumGpuTiming, Gpt2AttentionProjection) {
  LLMC_REQUIRE_GPU();
  reportSteps("ln_2 grad + c_proj dW, db [16384, 768] bf16",
              residualBlock(16, 1024, 768, 768, "bf16"));
}

} // namespace
