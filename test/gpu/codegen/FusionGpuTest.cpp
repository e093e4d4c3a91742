//===- FusionGpuTest.cpp - Fused kernels vs the unfused ones --------------===//
//
// One test per fused kernel family (docs/fusion.md): vertical elementwise
// chains (vectorized and not), horizontal groups of many segments, and row
// reductions that load and store through exact casts, in f32 and bf16.
// Each runs on random inputs twice on the GPU, with every fusion and with
// none, and every result must be bitwise equal (a fused kernel rounds where
// the one-op kernels do); the fused plan also runs against the CPU
// reference evaluator, plain and as a CUDA graph replayed twice (bitwise
// equal to the plain run). The last tests run gpt2-tiny's whole bf16
// training step fused and unfused. Without a GPU only the NVRTC checks run.
//
//===----------------------------------------------------------------------===//
#include "test/gpu/codegen/GpuHarness.h"

#include "compiler/Pipeline.h"
#include "dialects/llmc/LlmcDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace llmc::test;

struct FusionCase {
  const char *name;
  const char *mlir;
};
void PrintTo(const FusionCase &c, std::ostream *os) { *os << c.name; }

namespace {

const std::vector<FusionCase> &cases() {
  static const std::vector<FusionCase> all = {
      // Rows of 132: four elements per thread; a row vector, a scalar, a
      // compare/where, gelu and an intermediate read outside.
      {"VerticalF32Vector",
       R"(func.func @forward(%a: tensor<7x132xf32>, %b: tensor<7x132xf32>, %r: tensor<132xf32>, %s: tensor<f32>) -> (tensor<7x132xf32>, tensor<7x132xf32>) {
  %0 = llmc.add %a, %b : (tensor<7x132xf32>, tensor<7x132xf32>) -> tensor<7x132xf32>
  %1 = llmc.mul %0, %r : (tensor<7x132xf32>, tensor<132xf32>) -> tensor<7x132xf32>
  %2 = llmc.mul %1, %s : (tensor<7x132xf32>, tensor<f32>) -> tensor<7x132xf32>
  %3 = llmc.gelu tanh %2 : tensor<7x132xf32>
  %4 = llmc.compare gt, %3, %b : (tensor<7x132xf32>, tensor<7x132xf32>) -> tensor<7x132xi1>
  %5 = llmc.where %4, %3, %a : (tensor<7x132xi1>, tensor<7x132xf32>, tensor<7x132xf32>) -> tensor<7x132xf32>
  %6 = llmc.exp %5 : tensor<7x132xf32>
  return %6, %0 : tensor<7x132xf32>, tensor<7x132xf32>
})"},
      // Op boundaries where NVRTC or ptxas would contract a multiply with
      // the next op's add (docs/fusion.md "No FMA across ops"): mul -> add,
      // exp (ends in a multiply) -> add, tanh -> neg -> gelu (sealed).
      {"NoFmaAcrossOpsF32",
       R"(func.func @forward(%a: tensor<9x64xf32>, %b: tensor<9x64xf32>, %c: tensor<9x64xf32>) -> (tensor<9x64xf32>, tensor<9x64xf32>) {
  %0 = llmc.mul %a, %b : (tensor<9x64xf32>, tensor<9x64xf32>) -> tensor<9x64xf32>
  %1 = llmc.add %0, %c : (tensor<9x64xf32>, tensor<9x64xf32>) -> tensor<9x64xf32>
  %2 = llmc.exp %1 : tensor<9x64xf32>
  %3 = llmc.add %2, %c : (tensor<9x64xf32>, tensor<9x64xf32>) -> tensor<9x64xf32>
  %4 = llmc.tanh %3 : tensor<9x64xf32>
  %5 = llmc.neg %4 : tensor<9x64xf32>
  %6 = llmc.gelu tanh %5 : tensor<9x64xf32>
  %7 = llmc.sub %6, %a : (tensor<9x64xf32>, tensor<9x64xf32>) -> tensor<9x64xf32>
  return %7, %1 : tensor<9x64xf32>, tensor<9x64xf32>
})"},
      // Rows of 129: one element per thread, a column vector broadcast.
      {"VerticalF32Scalar",
       R"(func.func @forward(%a: tensor<7x129xf32>, %c: tensor<7x1xf32>) -> tensor<7x129xf32> {
  %0 = llmc.sub %a, %c : (tensor<7x129xf32>, tensor<7x1xf32>) -> tensor<7x129xf32>
  %1 = llmc.tanh %0 : tensor<7x129xf32>
  %2 = llmc.mul %1, %1 : (tensor<7x129xf32>, tensor<7x129xf32>) -> tensor<7x129xf32>
  %3 = llmc.silu %2 : tensor<7x129xf32>
  return %3 : tensor<7x129xf32>
})"},
      // The residual pattern of a bf16 transformer: a bf16 product widened,
      // added to the f32 stream, the backward's gelu_grad and the cast back.
      {"VerticalBf16",
       R"(func.func @forward(%m: tensor<33x256xbf16>, %res: tensor<33x256xf32>, %x: tensor<33x256xbf16>, %dy: tensor<33x256xbf16>) -> (tensor<33x256xf32>, tensor<33x256xbf16>, tensor<33x256xbf16>) {
  %0 = llmc.cast %m : tensor<33x256xbf16> -> tensor<33x256xf32>
  %1 = llmc.add %res, %0 : (tensor<33x256xf32>, tensor<33x256xf32>) -> tensor<33x256xf32>
  %2 = llmc.cast %1 : tensor<33x256xf32> -> tensor<33x256xbf16>
  %3 = llmc.gelu tanh %2 : tensor<33x256xbf16>
  %4 = llmc.gelu_grad tanh %x, %dy : tensor<33x256xbf16>
  %5 = llmc.add %4, %3 : (tensor<33x256xbf16>, tensor<33x256xbf16>) -> tensor<33x256xbf16>
  return %1, %3, %5 : tensor<33x256xf32>, tensor<33x256xbf16>, tensor<33x256xbf16>
})"},
      // Nine independent casts of assorted shapes (vectors of 4 and not, a
      // scalar): one horizontal kernel of nine segments.
      {"HorizontalCasts",
       R"(func.func @forward(%w0: tensor<64x192xf32>, %b0: tensor<192xf32>, %w1: tensor<50x7xf32>, %b1: tensor<7xf32>, %s: tensor<f32>, %w2: tensor<3x5x8xf32>, %g0: tensor<64x192xbf16>, %g1: tensor<131xbf16>, %g2: tensor<4x4xbf16>) -> (tensor<64x192xbf16>, tensor<192xbf16>, tensor<50x7xbf16>, tensor<7xbf16>, tensor<bf16>, tensor<3x5x8xbf16>, tensor<64x192xf32>, tensor<131xf32>, tensor<4x4xf32>) {
  %0 = llmc.cast %w0 : tensor<64x192xf32> -> tensor<64x192xbf16>
  %1 = llmc.cast %b0 : tensor<192xf32> -> tensor<192xbf16>
  %2 = llmc.cast %w1 : tensor<50x7xf32> -> tensor<50x7xbf16>
  %3 = llmc.cast %b1 : tensor<7xf32> -> tensor<7xbf16>
  %4 = llmc.cast %s : tensor<f32> -> tensor<bf16>
  %5 = llmc.cast %w2 : tensor<3x5x8xf32> -> tensor<3x5x8xbf16>
  %6 = llmc.cast %g0 : tensor<64x192xbf16> -> tensor<64x192xf32>
  %7 = llmc.cast %g1 : tensor<131xbf16> -> tensor<131xf32>
  %8 = llmc.cast %g2 : tensor<4x4xbf16> -> tensor<4x4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<64x192xbf16>, tensor<192xbf16>, tensor<50x7xbf16>, tensor<7xbf16>, tensor<bf16>, tensor<3x5x8xbf16>, tensor<64x192xf32>, tensor<131xf32>, tensor<4x4xf32>
})"},
      // Norms that store bf16 and a norm gradient that loads a bf16
      // cotangent and stores a bf16 dx.
      {"NormCastsBf16",
       R"(func.func @forward(%x: tensor<6x5x96xf32>, %w: tensor<96xf32>, %b: tensor<96xf32>, %dy: tensor<6x5x96xbf16>) -> (tensor<6x5x96xbf16>, tensor<6x5x96xbf16>, tensor<6x5x96xbf16>, tensor<96xf32>, tensor<96xf32>) {
  %0 = llmc.layer_norm %x weight %w bias %b : (tensor<6x5x96xf32>, tensor<96xf32>, tensor<96xf32>) -> tensor<6x5x96xf32>
  %1 = llmc.cast %0 : tensor<6x5x96xf32> -> tensor<6x5x96xbf16>
  %2 = llmc.rms_norm %x weight %w : (tensor<6x5x96xf32>, tensor<96xf32>) -> tensor<6x5x96xf32>
  %3 = llmc.cast %2 : tensor<6x5x96xf32> -> tensor<6x5x96xbf16>
  %4 = llmc.cast %dy : tensor<6x5x96xbf16> -> tensor<6x5x96xf32>
  %5:3 = llmc.layer_norm_grad %x, %4 weight %w {bias_grad} : (tensor<6x5x96xf32>, tensor<6x5x96xf32>, tensor<96xf32>) -> (tensor<6x5x96xf32>, tensor<96xf32>, tensor<96xf32>)
  %6 = llmc.cast %5#0 : tensor<6x5x96xf32> -> tensor<6x5x96xbf16>
  return %1, %3, %6, %5#1, %5#2 : tensor<6x5x96xbf16>, tensor<6x5x96xbf16>, tensor<6x5x96xbf16>, tensor<96xf32>, tensor<96xf32>
})"},
      // The classifier: bf16 logits loaded by the loss and its gradient,
      // the gradient stored as bf16.
      {"CrossEntropyCastsBf16",
       R"(func.func @forward(%logits: tensor<4x9x515xbf16>, %t: tensor<4x9xi64> {gpu_test.range = array<i64: 0, 515>}, %d: tensor<f32>) -> (tensor<f32>, tensor<4x9x515xbf16>) {
  %0 = llmc.cast %logits : tensor<4x9x515xbf16> -> tensor<4x9x515xf32>
  %1 = llmc.cross_entropy mean %0, %t : (tensor<4x9x515xf32>, tensor<4x9xi64>) -> tensor<f32>
  %2 = llmc.cross_entropy_grad mean %0, %t, %d : (tensor<4x9x515xf32>, tensor<4x9xi64>, tensor<f32>) -> tensor<4x9x515xf32>
  %3 = llmc.cast %2 : tensor<4x9x515xf32> -> tensor<4x9x515xbf16>
  return %1, %3 : tensor<f32>, tensor<4x9x515xbf16>
})"},
      // Llama's RoPE under autocast: the bf16 projection (seq-major
      // [B, T, H, D], tables [T, 1, R]) widened, rotated in f32 and
      // rounded back for attention; partial rotary (R 32 of D 64) so the
      // copied features round-trip through the casts too. And the f16,
      // interleaved (GPT-J) pairing with [T, R] tables on [B, H, T, D].
      {"RotaryCastsBf16",
       R"(func.func @forward(%q: tensor<2x17x4x64xbf16>, %c: tensor<17x1x32xf32>, %s: tensor<17x1x32xf32>) -> tensor<2x17x4x64xbf16> {
  %0 = llmc.cast %q : tensor<2x17x4x64xbf16> -> tensor<2x17x4x64xf32>
  %1 = llmc.rotary %0, %c, %s : (tensor<2x17x4x64xf32>, tensor<17x1x32xf32>, tensor<17x1x32xf32>) -> tensor<2x17x4x64xf32>
  %2 = llmc.cast %1 : tensor<2x17x4x64xf32> -> tensor<2x17x4x64xbf16>
  return %2 : tensor<2x17x4x64xbf16>
})"},
      // SwiGLU's backward: d_up = dy * silu(gate) before the up
      // projection's gradient GEMM, d_gate = silu_grad(gate, dy * up)
      // after it; sibling fusion makes them one segment reading dy once
      // (dy a product, so that it dies there: an argument would not).
      {"SwigluBackwardSiblingsBf16",
       R"(func.func @forward(%h: tensor<24x32xbf16>, %wd: tensor<32x96xbf16>, %gate: tensor<24x96xbf16>, %up: tensor<24x96xbf16>, %s: tensor<24x96xbf16>, %w: tensor<96x16xbf16>) -> (tensor<24x16xbf16>, tensor<24x96xbf16>) {
  %dy = llmc.matmul %h, %wd : (tensor<24x32xbf16>, tensor<32x96xbf16>) -> tensor<24x96xbf16>
  %0 = llmc.mul %dy, %s : (tensor<24x96xbf16>, tensor<24x96xbf16>) -> tensor<24x96xbf16>
  %1 = llmc.matmul %0, %w : (tensor<24x96xbf16>, tensor<96x16xbf16>) -> tensor<24x16xbf16>
  %2 = llmc.mul %dy, %up : (tensor<24x96xbf16>, tensor<24x96xbf16>) -> tensor<24x96xbf16>
  %3 = llmc.silu_grad %gate, %2 : tensor<24x96xbf16>
  return %1, %3 : tensor<24x16xbf16>, tensor<24x96xbf16>
})"},
      // SwiGLU forward and backward: silu(gate), kept for d_up = dy *
      // silu(gate), is recomputed in the backward kernel (which reads gate
      // for silu_grad) instead of written and read back.
      {"SwigluRecomputeSiluBf16",
       R"(func.func @forward(%gate: tensor<24x96xbf16>, %up: tensor<24x96xbf16>, %w: tensor<96x96xbf16>) -> (tensor<24x96xbf16>, tensor<24x96xbf16>) {
  %s = llmc.silu %gate : tensor<24x96xbf16>
  %h = llmc.mul %s, %up : (tensor<24x96xbf16>, tensor<24x96xbf16>) -> tensor<24x96xbf16>
  %dy = llmc.matmul %h, %w : (tensor<24x96xbf16>, tensor<96x96xbf16>) -> tensor<24x96xbf16>
  %0 = llmc.mul %dy, %s : (tensor<24x96xbf16>, tensor<24x96xbf16>) -> tensor<24x96xbf16>
  %1 = llmc.mul %dy, %up : (tensor<24x96xbf16>, tensor<24x96xbf16>) -> tensor<24x96xbf16>
  %2 = llmc.silu_grad %gate, %1 : tensor<24x96xbf16>
  return %0, %2 : tensor<24x96xbf16>, tensor<24x96xbf16>
})"},
      {"RotaryCastsF16Interleaved",
       R"(func.func @forward(%q: tensor<3x2x9x16xf16>, %c: tensor<9x16xf32>, %s: tensor<9x16xf32>) -> tensor<3x2x9x16xf16> {
  %0 = llmc.cast %q : tensor<3x2x9x16xf16> -> tensor<3x2x9x16xf32>
  %1 = llmc.rotary %0, %c, %s {interleaved} : (tensor<3x2x9x16xf32>, tensor<9x16xf32>, tensor<9x16xf32>) -> tensor<3x2x9x16xf32>
  %2 = llmc.cast %1 : tensor<3x2x9x16xf32> -> tensor<3x2x9x16xf16>
  return %2 : tensor<3x2x9x16xf16>
})"},
  };
  return all;
}

class FusionGpu : public ::testing::TestWithParam<FusionCase> {};

TEST_P(FusionGpu, BitwiseEqualToUnfused) {
  LLMC_REQUIRE_GPU();
  checkFusedMatchesUnfused(GetParam().mlir);
}

TEST_P(FusionGpu, MatchesReference) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(GetParam().mlir);
}

TEST_P(FusionGpu, CompilesWithNvrtc) { checkCompiles(GetParam().mlir); }

INSTANTIATE_TEST_SUITE_P(Families, FusionGpu, ::testing::ValuesIn(cases()),
                         [](const auto &info) {
                           return std::string(info.param.name);
                         });

/// gpt2-tiny's whole training step in bf16 (the pipeline `llmc compile
/// --precision bf16` runs), as IR text with the test attributes set.
std::string gpt2TinyBf16Step() {
  std::string text = readTestModel("gpt2-tiny.mlir");
  if (text.empty())
    return "";
  mlir::MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  llmc::PrecisionConfig precision;
  precision.precision = "bf16";
  if (!module ||
      mlir::failed(llmc::runTrainingPipeline(*module, llmc::OptimizerConfig(),
                                             precision)))
    return "";
  auto func = module->lookupSymbol<mlir::func::FuncOp>("train_step");
  if (!func)
    return "";
  markTrainStepArguments(func);
  std::string out;
  llvm::raw_string_ostream os(out);
  module->print(os);
  return out;
}

// Every kernel of the step is deterministic and the fused ones round as the
// one-op ones do, so the fused step (53 launches) is bitwise equal to the
// unfused one (99: a bf16 linear layer's bias add stays with its matmul,
// docs/fusion.md; split, it rounded twice and 50 of 51 results differed).
TEST(FusionGpuModel, Gpt2TinyBf16StepFusedVsUnfused) {
  LLMC_REQUIRE_GPU();
  std::string mlir = gpt2TinyBf16Step();
  ASSERT_FALSE(mlir.empty()) << "cannot build gpt2-tiny's bf16 @train_step";
  checkFusedMatchesUnfused(mlir, "train_step", 0.1, /*bitwise=*/true);
}

TEST(FusionGpuModel, Gpt2TinyBf16StepCompilesWithNvrtc) {
  std::string mlir = gpt2TinyBf16Step();
  ASSERT_FALSE(mlir.empty()) << "cannot build gpt2-tiny's bf16 @train_step";
  mlir::MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(mlir, &context);
  ASSERT_TRUE(module);
  checkFunctionCompiles(module->lookupSymbol<mlir::func::FuncOp>("train_step"));
}

} // namespace

namespace {

/// Prints the fused kernel's effective bandwidth on GPT-2 124M-sized
/// tensors (docs/fusion.md; the BENCHMARKS table): `bytes` is what the
/// kernel must move, the time the best of 20 graph replays of its plan.
void reportBandwidth(const char *what, const std::string &mlir, double bytes) {
  double ms = bestReplayMs(mlir, 20);
  ASSERT_GT(ms, 0.0) << "the timing run failed";
  std::printf("[ bandwidth ] %s: %.1f MB in %.4f ms = %.0f GB/s\n", what,
              bytes / 1e6, ms, bytes / (ms * 1e-3) / 1e9);
}

// The residual add of a bf16 block, B 16 x T 1024 x d 768: a bf16 product
// widened, added to the f32 stream, written f32 and cast to bf16 for the
// next matmul (read 2 + 4, write 4 + 2 bytes per element).
TEST(FusionGpuBandwidth, ResidualChain) {
  LLMC_REQUIRE_GPU();
  reportBandwidth(
      "residual cast+add+cast [16384, 768]",
      R"(func.func @forward(%m: tensor<16384x768xbf16>, %r: tensor<16384x768xf32>) -> (tensor<16384x768xf32>, tensor<16384x768xbf16>) {
  %0 = llmc.cast %m : tensor<16384x768xbf16> -> tensor<16384x768xf32>
  %1 = llmc.add %r, %0 : (tensor<16384x768xf32>, tensor<16384x768xf32>) -> tensor<16384x768xf32>
  %2 = llmc.cast %1 : tensor<16384x768xf32> -> tensor<16384x768xbf16>
  return %1, %2 : tensor<16384x768xf32>, tensor<16384x768xbf16>
})",
      16384.0 * 768 * 12);
}

// A horizontal group of casts the size of GPT-2 124M's matrices (one
// layer's four, the embedding): read 4, write 2 bytes per element.
TEST(FusionGpuBandwidth, HorizontalWeightCasts) {
  LLMC_REQUIRE_GPU();
  reportBandwidth(
      "horizontal casts f32->bf16, 45.6M elements",
      R"(func.func @forward(%e: tensor<50304x768xf32>, %a: tensor<768x2304xf32>, %p: tensor<768x768xf32>, %f: tensor<768x3072xf32>, %g: tensor<3072x768xf32>) -> (tensor<50304x768xbf16>, tensor<768x2304xbf16>, tensor<768x768xbf16>, tensor<768x3072xbf16>, tensor<3072x768xbf16>) {
  %0 = llmc.cast %e : tensor<50304x768xf32> -> tensor<50304x768xbf16>
  %1 = llmc.cast %a : tensor<768x2304xf32> -> tensor<768x2304xbf16>
  %2 = llmc.cast %p : tensor<768x768xf32> -> tensor<768x768xbf16>
  %3 = llmc.cast %f : tensor<768x3072xf32> -> tensor<768x3072xbf16>
  %4 = llmc.cast %g : tensor<3072x768xf32> -> tensor<3072x768xbf16>
  return %0, %1, %2, %3, %4 : tensor<50304x768xbf16>, tensor<768x2304xbf16>, tensor<768x768xbf16>, tensor<768x3072xbf16>, tensor<3072x768xbf16>
})",
      (50304.0 * 768 + 768.0 * 2304 + 768.0 * 768 + 2 * 768.0 * 3072) * 6);
}

// The classifier's gradient on 1024 rows of the padded vocabulary: bf16
// logits loaded, bf16 gradients stored: 2 + 2 bytes per element must move
// (the emitter reads each row twice; the second read may hit L2).
TEST(FusionGpuBandwidth, CrossEntropyGradBf16) {
  LLMC_REQUIRE_GPU();
  reportBandwidth(
      "cross_entropy_grad bf16 in/out [1024, 50304]",
      R"(func.func @forward(%logits: tensor<1024x50304xbf16>, %t: tensor<1024xi64> {gpu_test.range = array<i64: 0, 50304>}, %d: tensor<f32>) -> tensor<1024x50304xbf16> {
  %0 = llmc.cast %logits : tensor<1024x50304xbf16> -> tensor<1024x50304xf32>
  %1 = llmc.cross_entropy_grad mean %0, %t, %d : (tensor<1024x50304xf32>, tensor<1024xi64>, tensor<f32>) -> tensor<1024x50304xf32>
  %2 = llmc.cast %1 : tensor<1024x50304xf32> -> tensor<1024x50304xbf16>
  return %2 : tensor<1024x50304xbf16>
})",
      1024.0 * 50304 * 4);
}

// Llama 1B's query RoPE under autocast (B 8, T 1024, 32 heads of 64): with
// the casts in its load and store the rotary moves 2 + 2 bytes per element
// (the tables, 256 KB each, stay in L2); unfused it was cast (2 + 4),
// rotary (4 + 4), cast (4 + 2): 20 bytes.
TEST(FusionGpuBandwidth, RotaryCastsBf16) {
  LLMC_REQUIRE_GPU();
  reportBandwidth(
      "rotary bf16 in/out [8, 1024, 32, 64]",
      R"(func.func @forward(%q: tensor<8x1024x32x64xbf16>, %c: tensor<1024x1x64xf32>, %s: tensor<1024x1x64xf32>) -> tensor<8x1024x32x64xbf16> {
  %0 = llmc.cast %q : tensor<8x1024x32x64xbf16> -> tensor<8x1024x32x64xf32>
  %1 = llmc.rotary %0, %c, %s : (tensor<8x1024x32x64xf32>, tensor<1024x1x64xf32>, tensor<1024x1x64xf32>) -> tensor<8x1024x32x64xf32>
  %2 = llmc.cast %1 : tensor<8x1024x32x64xf32> -> tensor<8x1024x32x64xbf16>
  return %2 : tensor<8x1024x32x64xbf16>
})",
      8.0 * 1024 * 32 * 64 * 4);
}

} // namespace
