//===- FloatFormatsTest.cpp - Rounding to bf16, f16, f8 -------------------===//
//
// Hand-picked ties, overflows and subnormals, then exhaustive and swept
// comparisons against LLVM's APFloat, an independent implementation.
//
//===----------------------------------------------------------------------===//
#include "compiler/common/FloatFormats.h"

#include "llvm/ADT/APFloat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace llmc;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

TEST(FloatFormats, Bf16TiesToEven) {
  // 1 + 2^-8 lies halfway between 1 (even) and 1 + 2^-7 (odd).
  EXPECT_EQ(roundToFormat(1 + std::ldexp(1, -8), FloatFormat::BF16), 1.0);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  EXPECT_EQ(roundToFormat(1 + 3 * std::ldexp(1, -8), FloatFormat::BF16),
            1 + std::ldexp(1, -6));
  // Just above the tie rounds up.
  EXPECT_EQ(roundToFormat(1 + std::ldexp(1, -8) + std::ldexp(1, -20),
                          FloatFormat::BF16),
            1 + std::ldexp(1, -7));
  EXPECT_EQ(roundToFormat(-3.14159265, FloatFormat::BF16), -3.140625);
  EXPECT_EQ(floatToBits(1.0, FloatFormat::BF16), 0x3F80u);
  EXPECT_EQ(floatToBits(-2.0, FloatFormat::BF16), 0xC000u);
  EXPECT_EQ(floatToBits(3.14159265, FloatFormat::BF16), 0x4049u);
  // FLT_MAX rounds up to 2^128 in bf16's 8 bits of precision: overflow.
  EXPECT_EQ(roundToFormat(std::numeric_limits<float>::max(), FloatFormat::BF16),
            kInf);
  EXPECT_EQ(bitsToFloat(0x7F7F, FloatFormat::BF16),
            maxFinite(FloatFormat::BF16));
}

TEST(FloatFormats, F16RangeAndSubnormals) {
  EXPECT_EQ(roundToFormat(65519, FloatFormat::F16), 65504);
  EXPECT_EQ(roundToFormat(65520, FloatFormat::F16), kInf); // tie goes to even
  EXPECT_EQ(roundToFormat(-1e6, FloatFormat::F16), -kInf);
  double tiny = std::ldexp(1, -24); // smallest subnormal
  EXPECT_EQ(roundToFormat(tiny / 2, FloatFormat::F16), 0.0);
  EXPECT_EQ(roundToFormat(tiny * 0.75, FloatFormat::F16), tiny);
  EXPECT_TRUE(std::signbit(roundToFormat(-tiny / 4, FloatFormat::F16)));
  EXPECT_EQ(floatToBits(1.0, FloatFormat::F16), 0x3C00u);
  EXPECT_EQ(floatToBits(tiny, FloatFormat::F16), 0x0001u);
  EXPECT_EQ(floatToBits(65504, FloatFormat::F16), 0x7BFFu);
  EXPECT_EQ(floatToBits(kInf, FloatFormat::F16), 0x7C00u);
  EXPECT_EQ(bitsToFloat(0x3555, FloatFormat::F16), 0.333251953125);
}

TEST(FloatFormats, F8E4M3FNHasNoInfinity) {
  EXPECT_EQ(roundToFormat(448, FloatFormat::F8E4M3FN), 448);
  EXPECT_EQ(roundToFormat(464, FloatFormat::F8E4M3FN), 448); // tie to even
  EXPECT_TRUE(std::isnan(roundToFormat(465, FloatFormat::F8E4M3FN)));
  EXPECT_TRUE(std::isnan(roundToFormat(kInf, FloatFormat::F8E4M3FN)));
  EXPECT_EQ(roundToFormat(0.3, FloatFormat::F8E4M3FN), 0.3125);
  EXPECT_EQ(roundToFormat(std::ldexp(1, -9), FloatFormat::F8E4M3FN),
            std::ldexp(1, -9)); // smallest subnormal
  EXPECT_EQ(floatToBits(1.0, FloatFormat::F8E4M3FN), 0x38u);
  EXPECT_EQ(floatToBits(448, FloatFormat::F8E4M3FN), 0x7Eu);
  EXPECT_EQ(floatToBits(-448, FloatFormat::F8E4M3FN), 0xFEu);
  EXPECT_TRUE(std::isnan(bitsToFloat(0x7F, FloatFormat::F8E4M3FN)));
  EXPECT_EQ(bitsToFloat(0x78, FloatFormat::F8E4M3FN), 256); // exp field 15
}

TEST(FloatFormats, F8E5M2) {
  EXPECT_EQ(roundToFormat(57344, FloatFormat::F8E5M2), 57344);
  EXPECT_EQ(roundToFormat(61440, FloatFormat::F8E5M2), kInf); // tie to even
  EXPECT_EQ(roundToFormat(1.2, FloatFormat::F8E5M2), 1.25);
  EXPECT_EQ(floatToBits(1.0, FloatFormat::F8E5M2), 0x3Cu);
  EXPECT_EQ(floatToBits(-kInf, FloatFormat::F8E5M2), 0xFCu);
  EXPECT_TRUE(std::isnan(bitsToFloat(0x7D, FloatFormat::F8E5M2)));
}

TEST(FloatFormats, Tf32RoundsToNearestTiesToEven) {
  // TF32's ulp is 1 at 2^10: 1024.5 is a tie (away: 1025; even and
  // truncation: 1024), 1025.5 a tie both modes send up, 1024.25 rounds down.
  EXPECT_EQ(roundToTf32(1024.5), 1024.0);
  EXPECT_EQ(roundToTf32(-1024.5), -1024.0);
  EXPECT_EQ(roundToTf32(1025.5), 1026.0);
  EXPECT_EQ(roundToTf32(1024.25), 1024.0);
  EXPECT_EQ(roundToTf32(1024.75), 1025.0);
  EXPECT_EQ(roundToTf32(1 + std::ldexp(1, -11)), 1.0);
  EXPECT_EQ(roundToTf32(1 + 3 * std::ldexp(1, -11)), 1 + std::ldexp(1, -9));
  EXPECT_EQ(roundToTf32(1 + std::ldexp(1, -12)), 1.0);
  // The value is first an f32: 1 + 2^-30 is 1.
  EXPECT_EQ(roundToTf32(1 + std::ldexp(1, -30)), 1.0);
  EXPECT_EQ(roundToTf32(0.1), 0.0999755859375); // 0x3DCCC000
  EXPECT_TRUE(std::isinf(roundToTf32(INFINITY)));
  EXPECT_TRUE(std::isnan(roundToTf32(NAN)));
  EXPECT_TRUE(std::signbit(roundToTf32(-0.0)));
  // A carry out of f32's largest binade: inf.
  EXPECT_TRUE(std::isinf(roundToTf32(std::numeric_limits<float>::max())));
  // TF32 keeps f32's range, subnormals with 10 bits: 2^-130 stays, 2^-140
  // (below half of TF32's smallest subnormal, 2^-136) goes to 0.
  EXPECT_EQ(roundToTf32(std::ldexp(1.0, -130)), std::ldexp(1.0, -130));
  EXPECT_EQ(roundToTf32(std::ldexp(1.0, -140)), 0.0);
}

TEST(FloatFormats, NaNAndSignedZero) {
  for (FloatFormat f : {FloatFormat::F32, FloatFormat::F16, FloatFormat::BF16,
                        FloatFormat::F8E4M3FN, FloatFormat::F8E5M2}) {
    EXPECT_TRUE(std::isnan(roundToFormat(NAN, f)));
    EXPECT_TRUE(std::signbit(roundToFormat(-0.0, f)));
    EXPECT_TRUE(std::isnan(bitsToFloat(floatToBits(NAN, f), f)));
  }
}

const llvm::fltSemantics &semantics(FloatFormat f) {
  switch (f) {
  case FloatFormat::F16:
    return llvm::APFloat::IEEEhalf();
  case FloatFormat::BF16:
    return llvm::APFloat::BFloat();
  case FloatFormat::F8E4M3FN:
    return llvm::APFloat::Float8E4M3FN();
  case FloatFormat::F8E5M2:
    return llvm::APFloat::Float8E5M2();
  default:
    return llvm::APFloat::IEEEsingle();
  }
}

/// Every bit pattern decodes as APFloat decodes it and re-encodes to itself.
TEST(FloatFormats, AllBitPatternsMatchAPFloat) {
  for (auto [f, bits] : {std::pair{FloatFormat::F16, 16},
                         {FloatFormat::BF16, 16},
                         {FloatFormat::F8E4M3FN, 8},
                         {FloatFormat::F8E5M2, 8}}) {
    for (uint32_t b = 0; b < (1u << bits); ++b) {
      llvm::APFloat ref(semantics(f), llvm::APInt(bits, b));
      double mine = bitsToFloat(b, f);
      if (ref.isNaN()) {
        EXPECT_TRUE(std::isnan(mine)) << std::hex << b;
        continue;
      }
      ASSERT_EQ(mine, ref.convertToDouble()) << std::hex << b;
      EXPECT_EQ(floatToBits(mine, f), b) << std::hex << b;
    }
  }
}

/// Rounding agrees with APFloat's round-to-nearest-even conversion over
/// values spread across every binade, ties included.
TEST(FloatFormats, RoundingMatchesAPFloat) {
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 11;
  };
  for (FloatFormat f : {FloatFormat::F32, FloatFormat::F16, FloatFormat::BF16,
                        FloatFormat::F8E4M3FN, FloatFormat::F8E5M2}) {
    for (int i = 0; i < 20000; ++i) {
      int exponent = static_cast<int>(next() % 80) - 40;
      double mantissa = 1.0 + static_cast<double>(next() % 4096) / 4096.0;
      double x = std::ldexp(mantissa, exponent) * (next() % 2 ? -1 : 1);
      llvm::APFloat ref(x);
      bool lost;
      ref.convert(semantics(f), llvm::APFloat::rmNearestTiesToEven, &lost);
      double mine = roundToFormat(x, f);
      if (ref.isNaN())
        EXPECT_TRUE(std::isnan(mine)) << x;
      else
        ASSERT_EQ(mine, ref.convertToDouble()) << x;
    }
  }
}

} // namespace
