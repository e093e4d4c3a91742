//===- RotaryGpuTest.cpp - The vectorized rotary kernel vs the scalar one -===//
//
// The rotary kernel (compiler/codegen/AttentionEmitters.cpp) moves a vector
// of 16 bytes per thread (8 bf16, 4 f32), the rotate-half partner a second
// vector of the same row, when every vector lies in one region of a row;
// LLMC_ROTARY_SCALAR=1 emits the one-element-per-thread kernel instead.
// Both compute each element with the same explicit FMA, so they must be
// bitwise equal: with the casts of autocast in the rotary's loads and
// stores (the default fusion) and as one-op kernels; and both match the
// CPU reference. The timing test prints both at Llama 1B's shape. Without a
// GPU only the NVRTC checks run.
//
//===----------------------------------------------------------------------===//
#include "test/gpu/codegen/GpuHarness.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

using namespace llmc::test;

struct RotaryCase {
  const char *name;
  const char *mlir;
};
void PrintTo(const RotaryCase &c, std::ostream *os) { *os << c.name; }

namespace {

const std::vector<RotaryCase> &cases() {
  static const std::vector<RotaryCase> all = {
      // Llama under autocast (seq-major [B, T, H, D], tables [T, 1, R]):
      // vectors of 8 bf16, the partner 4 vectors away.
      {"Bf16CastsSeqMajor",
       R"(func.func @forward(%q: tensor<2x17x4x64xbf16>, %c: tensor<17x1x64xf32>, %s: tensor<17x1x64xf32>) -> tensor<2x17x4x64xbf16> {
  %0 = llmc.cast %q : tensor<2x17x4x64xbf16> -> tensor<2x17x4x64xf32>
  %1 = llmc.rotary %0, %c, %s : (tensor<2x17x4x64xf32>, tensor<17x1x64xf32>, tensor<17x1x64xf32>) -> tensor<2x17x4x64xf32>
  %2 = llmc.cast %1 : tensor<2x17x4x64xf32> -> tensor<2x17x4x64xbf16>
  return %2 : tensor<2x17x4x64xbf16>
})"},
      // f32, partial rotary (R 32 of D 96: the copied features are whole
      // vectors too), [B, H, T, D] with [T, R] tables.
      {"F32PartialHeadMajor",
       R"(func.func @forward(%q: tensor<3x2x13x96xf32>, %c: tensor<13x32xf32>, %s: tensor<13x32xf32>) -> tensor<3x2x13x96xf32> {
  %0 = llmc.rotary %q, %c, %s : (tensor<3x2x13x96xf32>, tensor<13x32xf32>, tensor<13x32xf32>) -> tensor<3x2x13x96xf32>
  return %0 : tensor<3x2x13x96xf32>
})"},
      // GPT-J's interleaved pairs in f16 with f32 tables: the partner is
      // inside the vector (e ^ 1).
      {"F16CastsInterleaved",
       R"(func.func @forward(%q: tensor<3x2x9x16xf16>, %c: tensor<9x16xf32>, %s: tensor<9x16xf32>) -> tensor<3x2x9x16xf16> {
  %0 = llmc.cast %q : tensor<3x2x9x16xf16> -> tensor<3x2x9x16xf32>
  %1 = llmc.rotary %0, %c, %s {interleaved} : (tensor<3x2x9x16xf32>, tensor<9x16xf32>, tensor<9x16xf32>) -> tensor<3x2x9x16xf32>
  %2 = llmc.cast %1 : tensor<3x2x9x16xf32> -> tensor<3x2x9x16xf16>
  return %2 : tensor<3x2x9x16xf16>
})"},
      // bf16 tables and a per-batch table ([B, T, R], broadcast over
      // heads): table offsets through the broadcast strides.
      {"Bf16TablesPerBatch",
       R"(func.func @forward(%q: tensor<2x3x5x32xbf16>, %c: tensor<2x1x5x32xbf16>, %s: tensor<2x1x5x32xbf16>) -> tensor<2x3x5x32xbf16> {
  %0 = llmc.rotary %q, %c, %s : (tensor<2x3x5x32xbf16>, tensor<2x1x5x32xbf16>, tensor<2x1x5x32xbf16>) -> tensor<2x3x5x32xbf16>
  return %0 : tensor<2x3x5x32xbf16>
})"},
      // R/2 = 6: vectors of 2 (no 4 fit); R/2 = 3: the scalar kernel
      // either way.
      {"F32PairVectors",
       R"(func.func @forward(%q: tensor<2x7x20xf32>, %c: tensor<7x12xf32>, %s: tensor<7x12xf32>) -> tensor<2x7x20xf32> {
  %0 = llmc.rotary %q, %c, %s : (tensor<2x7x20xf32>, tensor<7x12xf32>, tensor<7x12xf32>) -> tensor<2x7x20xf32>
  return %0 : tensor<2x7x20xf32>
})"},
      {"F32ScalarFallback",
       R"(func.func @forward(%q: tensor<2x7x20xf32>, %c: tensor<7x6xf32>, %s: tensor<7x6xf32>) -> tensor<2x7x20xf32> {
  %0 = llmc.rotary %q, %c, %s : (tensor<2x7x20xf32>, tensor<7x6xf32>, tensor<7x6xf32>) -> tensor<2x7x20xf32>
  return %0 : tensor<2x7x20xf32>
})"},
  };
  return all;
}

class RotaryGpu : public ::testing::TestWithParam<RotaryCase> {};

TEST_P(RotaryGpu, VectorBitwiseEqualToScalar) {
  LLMC_REQUIRE_GPU();
  checkEnvVariantsBitwiseEqual(GetParam().mlir, "LLMC_ROTARY_SCALAR", nullptr,
                               "1", llmc::FusionConfig::exact());
  checkEnvVariantsBitwiseEqual(GetParam().mlir, "LLMC_ROTARY_SCALAR", nullptr,
                               "1", llmc::FusionConfig::none());
}

TEST_P(RotaryGpu, MatchesReference) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(GetParam().mlir);
}

TEST_P(RotaryGpu, CompilesWithNvrtc) { checkCompiles(GetParam().mlir); }

INSTANTIATE_TEST_SUITE_P(Shapes, RotaryGpu, ::testing::ValuesIn(cases()),
                         [](const auto &info) {
                           return std::string(info.param.name);
                         });

// Llama 1B's query RoPE under autocast (B 8, T 1024, 32 heads of 64; the
// casts in the loads and stores): 2 + 2 bytes per element must move, the
// tables (256 KB each) stay in L2. Prints the vector and the scalar kernel
// (the session-7 profile: 49% of copy speed) and checks them bitwise equal.
TEST(RotaryGpuBandwidth, Llama1BQueryBf16) {
  LLMC_REQUIRE_GPU();
  const char *ir =
      R"(func.func @forward(%q: tensor<8x1024x32x64xbf16>, %c: tensor<1024x1x64xf32>, %s: tensor<1024x1x64xf32>) -> tensor<8x1024x32x64xbf16> {
  %0 = llmc.cast %q : tensor<8x1024x32x64xbf16> -> tensor<8x1024x32x64xf32>
  %1 = llmc.rotary %0, %c, %s : (tensor<8x1024x32x64xf32>, tensor<1024x1x64xf32>, tensor<1024x1x64xf32>) -> tensor<8x1024x32x64xf32>
  %2 = llmc.cast %1 : tensor<8x1024x32x64xf32> -> tensor<8x1024x32x64xbf16>
  return %2 : tensor<8x1024x32x64xbf16>
})";
  checkEnvVariantsBitwiseEqual(ir, "LLMC_ROTARY_SCALAR", nullptr, "1",
                               llmc::FusionConfig::exact());
  const double bytes = 8.0 * 1024 * 32 * 64 * 4;
  double ms[2] = {0, 0};
  for (int scalar = 0; scalar < 2; ++scalar) {
    if (scalar)
      ::setenv("LLMC_ROTARY_SCALAR", "1", 1);
    ms[scalar] = bestReplayMs(ir, 20);
    if (scalar)
      ::unsetenv("LLMC_ROTARY_SCALAR");
    ASSERT_GT(ms[scalar], 0.0) << "the timing run failed";
  }
  std::printf("[ rotary ] bf16 [8, 1024, 32, 64]: vector %.4f ms (%.0f GB/s), "
              "scalar %.4f ms (%.0f GB/s), saved %.4f ms\n",
              ms[0], bytes / (ms[0] * 1e-3) / 1e9, ms[1],
              bytes / (ms[1] * 1e-3) / 1e9, ms[1] - ms[0]);
}

} // namespace
