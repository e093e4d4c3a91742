//===- RowFusionGpuTest.cpp - Norms with their prologue/epilogue vs apart -===//
//
// The norm prologues and epilogues of llmc-fuse-elementwise (docs/fusion.md,
// compiler/codegen/RowFusedEmitters.cpp): a layer or RMS norm that computes
// its input (the residual add of a block) and a norm gradient that stores
// the residual-gradient add and its cast, in f32 and bf16. Each case runs on
// random inputs with the default fusion and with the norm rewrites off
// (`--no-fuse=norm-prologue,norm-epilogue`): fewer launches and every
// result bitwise equal; and against the CPU reference evaluator. The
// timing tests print both plans' kernel times at GPT-2 124M's shapes.
// Without a GPU only the NVRTC checks run.
//
//===----------------------------------------------------------------------===//
#include "test/gpu/codegen/GpuHarness.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace llmc::test;

struct RowFusionCase {
  const char *name;
  const char *mlir;
};
void PrintTo(const RowFusionCase &c, std::ostream *os) { *os << c.name; }

namespace {

/// The norm prologue and epilogue both on (the default; the epilogue was
/// off while its bf16 kernel contracted the gradient's last multiply with
/// the residual add into an FMA: docs/fusion.md "No FMA across ops").
llmc::FusionConfig normFusionOn() {
  llmc::FusionConfig c;
  c.normPrologue = c.normEpilogue = true;
  return c;
}

llmc::FusionConfig withoutNormFusion() {
  llmc::FusionConfig c;
  c.normPrologue = c.normEpilogue = false;
  return c;
}

const std::vector<RowFusionCase> &cases() {
  static const std::vector<RowFusionCase> all = {
      // A bf16 block's residual add into the next layer norm: the new f32
      // residual and the bf16 normalized output; rows of 96 (24 vectors,
      // lanes without a chunk) over 3 x 37 rows.
      {"ResidualNormBf16",
       R"(func.func @forward(%mm: tensor<3x37x96xbf16>, %res: tensor<3x37x96xf32>, %w: tensor<96xf32>, %b: tensor<96xf32>) -> (tensor<3x37x96xf32>, tensor<3x37x96xbf16>) {
  %0 = llmc.cast %mm : tensor<3x37x96xbf16> -> tensor<3x37x96xf32>
  %1 = llmc.add %res, %0 : (tensor<3x37x96xf32>, tensor<3x37x96xf32>) -> tensor<3x37x96xf32>
  %2 = llmc.layer_norm %1 weight %w bias %b {axis = 2 : i64} : (tensor<3x37x96xf32>, tensor<96xf32>, tensor<96xf32>) -> tensor<3x37x96xf32>
  %3 = llmc.cast %2 : tensor<3x37x96xf32> -> tensor<3x37x96xbf16>
  return %1, %3 : tensor<3x37x96xf32>, tensor<3x37x96xbf16>
})"},
      // f32: no cast; a gelu in the prologue whose value is also returned;
      // rows of 768 (GPT-2's width).
      {"ResidualNormF32",
       R"(func.func @forward(%x: tensor<19x768xf32>, %h: tensor<19x768xf32>, %w: tensor<768xf32>) -> (tensor<19x768xf32>, tensor<19x768xf32>) {
  %0 = llmc.gelu tanh %h : tensor<19x768xf32>
  %1 = llmc.add %x, %0 : (tensor<19x768xf32>, tensor<19x768xf32>) -> tensor<19x768xf32>
  %2 = llmc.layer_norm %1 weight %w : (tensor<19x768xf32>, tensor<768xf32>) -> tensor<19x768xf32>
  return %2, %0 : tensor<19x768xf32>, tensor<19x768xf32>
})"},
      // The backward of a bf16 block: the widened cotangent, the layer
      // norm gradient with both parameter gradients, the residual-gradient
      // add and its bf16 copy; dx itself is not written.
      {"NormGradEpilogueBf16",
       R"(func.func @forward(%x: tensor<5x41x128xf32>, %dy: tensor<5x41x128xbf16>, %w: tensor<128xf32>, %dres: tensor<5x41x128xf32>) -> (tensor<5x41x128xf32>, tensor<5x41x128xbf16>, tensor<128xf32>, tensor<128xf32>) {
  %0 = llmc.cast %dy : tensor<5x41x128xbf16> -> tensor<5x41x128xf32>
  %1:3 = llmc.layer_norm_grad %x, %0 weight %w {axis = 2 : i64, bias_grad} : (tensor<5x41x128xf32>, tensor<5x41x128xf32>, tensor<128xf32>) -> (tensor<5x41x128xf32>, tensor<128xf32>, tensor<128xf32>)
  %2 = llmc.add %dres, %1#0 : (tensor<5x41x128xf32>, tensor<5x41x128xf32>) -> tensor<5x41x128xf32>
  %3 = llmc.cast %2 : tensor<5x41x128xf32> -> tensor<5x41x128xbf16>
  return %2, %3, %1#1, %1#2 : tensor<5x41x128xf32>, tensor<5x41x128xbf16>, tensor<128xf32>, tensor<128xf32>
})"},
      // f32 RMS norm gradient (Llama's) read by a cast and an add, and
      // returned itself: dx is written too.
      {"RmsNormGradEpilogueF32",
       R"(func.func @forward(%x: tensor<23x256xf32>, %dy: tensor<23x256xf32>, %w: tensor<256xf32>, %dres: tensor<23x256xf32>) -> (tensor<23x256xf32>, tensor<23x256xbf16>, tensor<256xf32>, tensor<23x256xf32>) {
  %0:2 = llmc.rms_norm_grad %x, %dy weight %w : (tensor<23x256xf32>, tensor<23x256xf32>, tensor<256xf32>) -> (tensor<23x256xf32>, tensor<256xf32>)
  %1 = llmc.cast %0#0 : tensor<23x256xf32> -> tensor<23x256xbf16>
  %2 = llmc.add %dres, %0#0 : (tensor<23x256xf32>, tensor<23x256xf32>) -> tensor<23x256xf32>
  return %2, %1, %0#1, %0#0 : tensor<23x256xf32>, tensor<23x256xbf16>, tensor<256xf32>, tensor<23x256xf32>
})"},
      // Llama's residual add into the next RMS norm (issue 19), at Llama
      // 1B's width and tokens (B 8 x T 1024 = 8192 rows of 2048, 64 floats
      // a lane): bf16 as the step runs it, and f32.
      {"ResidualRmsNormBf16Llama1B",
       R"(func.func @forward(%mm: tensor<8192x2048xbf16>, %res: tensor<8192x2048xf32>, %w: tensor<2048xf32>) -> (tensor<8192x2048xf32>, tensor<8192x2048xbf16>) {
  %0 = llmc.cast %mm : tensor<8192x2048xbf16> -> tensor<8192x2048xf32>
  %1 = llmc.add %res, %0 : (tensor<8192x2048xf32>, tensor<8192x2048xf32>) -> tensor<8192x2048xf32>
  %2 = llmc.rms_norm %1 weight %w {epsilon = 1.0e-05 : f64} : (tensor<8192x2048xf32>, tensor<2048xf32>) -> tensor<8192x2048xf32>
  %3 = llmc.cast %2 : tensor<8192x2048xf32> -> tensor<8192x2048xbf16>
  return %1, %3 : tensor<8192x2048xf32>, tensor<8192x2048xbf16>
})"},
      {"ResidualRmsNormF32Llama1B",
       R"(func.func @forward(%h: tensor<8192x2048xf32>, %res: tensor<8192x2048xf32>, %w: tensor<2048xf32>) -> (tensor<8192x2048xf32>, tensor<8192x2048xf32>) {
  %0 = llmc.add %res, %h : (tensor<8192x2048xf32>, tensor<8192x2048xf32>) -> tensor<8192x2048xf32>
  %1 = llmc.rms_norm %0 weight %w {epsilon = 1.0e-05 : f64} : (tensor<8192x2048xf32>, tensor<2048xf32>) -> tensor<8192x2048xf32>
  return %0, %1 : tensor<8192x2048xf32>, tensor<8192x2048xf32>
})"},
      // An odd shape: rows of 360 (90 vectors: the third pass of the lanes
      // is partial) over 5 x 29 rows, no weight, and an epilogue (a bf16
      // gate product) after the norm's rounded result.
      {"ResidualRmsNormOddBf16",
       R"(func.func @forward(%mm: tensor<5x29x360xbf16>, %res: tensor<5x29x360xf32>, %g: tensor<5x29x360xbf16>) -> (tensor<5x29x360xf32>, tensor<5x29x360xbf16>) {
  %0 = llmc.cast %mm : tensor<5x29x360xbf16> -> tensor<5x29x360xf32>
  %1 = llmc.add %res, %0 : (tensor<5x29x360xf32>, tensor<5x29x360xf32>) -> tensor<5x29x360xf32>
  %2 = llmc.rms_norm %1 {axis = 2 : i64} : (tensor<5x29x360xf32>) -> tensor<5x29x360xf32>
  %3 = llmc.cast %2 : tensor<5x29x360xf32> -> tensor<5x29x360xbf16>
  %4 = llmc.mul %3, %g : (tensor<5x29x360xbf16>, tensor<5x29x360xbf16>) -> tensor<5x29x360xbf16>
  return %1, %4 : tensor<5x29x360xf32>, tensor<5x29x360xbf16>
})"},
      // Open values at a norm's row (docs/fusion.md "No FMA across ops"):
      // exp's value as the norm's row operand, and the f32 gradient read by
      // a gelu in the epilogue, both sealed.
      {"SealedPrologueF32",
       R"(func.func @forward(%h: tensor<13x128xf32>, %w: tensor<128xf32>) -> tensor<13x128xf32> {
  %0 = llmc.exp %h : tensor<13x128xf32>
  %1 = llmc.layer_norm %0 weight %w {axis = 1 : i64} : (tensor<13x128xf32>, tensor<128xf32>) -> tensor<13x128xf32>
  return %1 : tensor<13x128xf32>
})"},
      {"SealedEpilogueF32",
       R"(func.func @forward(%x: tensor<13x128xf32>, %dy: tensor<13x128xf32>, %w: tensor<128xf32>) -> (tensor<13x128xf32>, tensor<128xf32>) {
  %0:2 = llmc.rms_norm_grad %x, %dy weight %w : (tensor<13x128xf32>, tensor<13x128xf32>, tensor<128xf32>) -> (tensor<13x128xf32>, tensor<128xf32>)
  %1 = llmc.gelu tanh %0#0 : tensor<13x128xf32>
  return %1, %0#1 : tensor<13x128xf32>, tensor<128xf32>
})"},
  };
  return all;
}

class RowFusionGpu : public ::testing::TestWithParam<RowFusionCase> {};

TEST_P(RowFusionGpu, BitwiseEqualToUnfused) {
  LLMC_REQUIRE_GPU();
  checkFusionConfigsMatch(GetParam().mlir, "forward", normFusionOn(),
                          withoutNormFusion());
  checkFusedMatchesUnfused(GetParam().mlir);
}

TEST_P(RowFusionGpu, MatchesReference) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(GetParam().mlir);
}

TEST_P(RowFusionGpu, CompilesWithNvrtc) { checkCompiles(GetParam().mlir); }

INSTANTIATE_TEST_SUITE_P(Families, RowFusionGpu, ::testing::ValuesIn(cases()),
                         [](const auto &info) {
                           return std::string(info.param.name);
                         });

/// Prints every launch step of both plans, fused and with the norm
/// rewrites off, with its time (best of 20 replays), and the totals against
/// the bytes each must move.
void reportSteps(const char *what, const std::string &mlir, double fusedBytes,
                 double unfusedBytes) {
  double totals[2] = {0, 0};
  const llmc::FusionConfig configs[2] = {normFusionOn(),
                                         withoutNormFusion()};
  const char *names[2] = {"fused", "apart"};
  for (int k = 0; k < 2; ++k) {
    auto steps = stepReplayMs(mlir, 20, configs[k]);
    ASSERT_FALSE(steps.empty()) << "the timing run failed";
    for (const auto &[label, ms] : steps) {
      std::printf("[ row fusion ] %s %s: %s %.4f ms\n", what, names[k],
                  label.c_str(), ms);
      totals[k] += ms;
    }
  }
  std::printf("[ row fusion ] %s: fused %.4f ms (%.1f MB, %.0f GB/s), apart "
              "%.4f ms (%.1f MB, %.0f GB/s), saved %.4f ms\n",
              what, totals[0], fusedBytes / 1e6,
              fusedBytes / (totals[0] * 1e-3) / 1e9, totals[1],
              unfusedBytes / 1e6, unfusedBytes / (totals[1] * 1e-3) / 1e9,
              totals[1] - totals[0]);
}

constexpr double kElems = 16384.0 * 768; // GPT-2 124M, B 16, T 1024

// Forward: read 2 + 4, write 4 + 2 bytes per element fused; apart the add
// writes the residual (4) and the norm reads it back (4).
TEST(RowFusionGpuTiming, Gpt2ResidualNorm) {
  LLMC_REQUIRE_GPU();
  reportSteps(
      "cast+add+layer_norm+cast [16384, 768]",
      R"(func.func @forward(%mm: tensor<16384x768xbf16>, %res: tensor<16384x768xf32>, %w: tensor<768xf32>, %b: tensor<768xf32>) -> (tensor<16384x768xf32>, tensor<16384x768xbf16>) {
  %0 = llmc.cast %mm : tensor<16384x768xbf16> -> tensor<16384x768xf32>
  %1 = llmc.add %res, %0 : (tensor<16384x768xf32>, tensor<16384x768xf32>) -> tensor<16384x768xf32>
  %2 = llmc.layer_norm %1 weight %w bias %b : (tensor<16384x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<16384x768xf32>
  %3 = llmc.cast %2 : tensor<16384x768xf32> -> tensor<16384x768xbf16>
  return %1, %3 : tensor<16384x768xf32>, tensor<16384x768xbf16>
})",
      kElems * 12, kElems * 16);
}

// Backward: read x 4, dy 2, dres 4, write 4 + 2 bytes per element fused;
// apart dx is written (4) and read back (4).
TEST(RowFusionGpuTiming, Gpt2NormGradResidual) {
  LLMC_REQUIRE_GPU();
  reportSteps(
      "cast+layer_norm_grad+add+cast [16384, 768]",
      R"(func.func @forward(%x: tensor<16384x768xf32>, %dy: tensor<16384x768xbf16>, %w: tensor<768xf32>, %dres: tensor<16384x768xf32>) -> (tensor<16384x768xf32>, tensor<16384x768xbf16>, tensor<768xf32>, tensor<768xf32>) {
  %0 = llmc.cast %dy : tensor<16384x768xbf16> -> tensor<16384x768xf32>
  %1:3 = llmc.layer_norm_grad %x, %0 weight %w {bias_grad} : (tensor<16384x768xf32>, tensor<16384x768xf32>, tensor<768xf32>) -> (tensor<16384x768xf32>, tensor<768xf32>, tensor<768xf32>)
  %2 = llmc.add %dres, %1#0 : (tensor<16384x768xf32>, tensor<16384x768xf32>) -> tensor<16384x768xf32>
  %3 = llmc.cast %2 : tensor<16384x768xf32> -> tensor<16384x768xbf16>
  return %2, %3, %1#1, %1#2 : tensor<16384x768xf32>, tensor<16384x768xbf16>, tensor<768xf32>, tensor<768xf32>
})",
      kElems * 16, kElems * 24);
}

// Llama 1B's (B 8, T 1024): read 2 + 4, write 4 + 2 bytes per element
// fused; apart the add writes the residual (4) and the RMS norm reads it
// back (4). Before issue 19's warp kernel the RMS norm ran one block per row
// (73% of copy speed in the bench's profile); "apart" is now the warp
// kernel too, so the difference is the prologue's alone.
TEST(RowFusionGpuTiming, Llama1BResidualRmsNorm) {
  LLMC_REQUIRE_GPU();
  constexpr double elems = 8192.0 * 2048;
  reportSteps(
      "cast+add+rms_norm+cast [8192, 2048]",
      R"(func.func @forward(%mm: tensor<8192x2048xbf16>, %res: tensor<8192x2048xf32>, %w: tensor<2048xf32>) -> (tensor<8192x2048xf32>, tensor<8192x2048xbf16>) {
  %0 = llmc.cast %mm : tensor<8192x2048xbf16> -> tensor<8192x2048xf32>
  %1 = llmc.add %res, %0 : (tensor<8192x2048xf32>, tensor<8192x2048xf32>) -> tensor<8192x2048xf32>
  %2 = llmc.rms_norm %1 weight %w {epsilon = 1.0e-05 : f64} : (tensor<8192x2048xf32>, tensor<2048xf32>) -> tensor<8192x2048xf32>
  %3 = llmc.cast %2 : tensor<8192x2048xf32> -> tensor<8192x2048xbf16>
  return %1, %3 : tensor<8192x2048xf32>, tensor<8192x2048xbf16>
})",
      elems * 12, elems * 16);
}

} // namespace
