//===- EvalPrecisionTest.cpp - The evaluator on precision-lowered IR ------===//
//
// What llmc-lower-precision relies on (docs/precision.md): a cast to bf16
// rounds to nearest even (subnormals kept, overflow to inf, NaN kept), a
// bf16 matmul accumulates exactly and rounds once, after the bias of a
// linear layer, and the mutation test's `llmc.accumulate = bf16` rounds
// every partial sum.
//
//===----------------------------------------------------------------------===//
#include "EvalTestUtils.h"

#include "compiler/eval/Kernels.h"

#include <cmath>
#include <limits>

namespace llmc::test {
namespace {

using Precision = EvalTest;

constexpr const char *kCast = R"(
  func.func @f(%x: tensor<8xf32>) -> tensor<8xbf16> {
    %0 = llmc.cast %x : tensor<8xf32> -> tensor<8xbf16>
    return %0 : tensor<8xbf16>
  })";

TEST_F(Precision, CastToBf16RoundsToNearestEven) {
  double tie = 1 + std::ldexp(1, -8);      // halfway between 1 and 1 + 2^-7
  double tieUp = 1 + 3 * std::ldexp(1, -8); // halfway to the even 1 + 2^-6
  double above = 1 + std::ldexp(1, -8) + std::ldexp(1, -20);
  RefTensor r = run1(kCast, {f32({8}, {tie, tieUp, above, -tie, 0.1, -0.0,
                                       3.14159265, 65504})});
  ASSERT_EQ(r.kind, ElementKind::BF16);
  EXPECT_EQ(r.floats[0], 1.0);
  EXPECT_EQ(r.floats[1], 1 + std::ldexp(1, -6));
  EXPECT_EQ(r.floats[2], 1 + std::ldexp(1, -7));
  EXPECT_EQ(r.floats[3], -1.0);
  EXPECT_EQ(r.floats[4], 0.10009765625); // 0x3DCD
  EXPECT_TRUE(r.floats[5] == 0 && std::signbit(r.floats[5]));
  EXPECT_EQ(r.floats[6], 3.140625);
  EXPECT_EQ(r.floats[7], 65536.0);
}

TEST_F(Precision, CastToBf16SubnormalsInfinityAndNaN) {
  double minSub = std::ldexp(1, -133); // bf16's smallest subnormal
  double fmax = std::numeric_limits<float>::max();
  double inf = std::numeric_limits<double>::infinity();
  RefTensor r = run1(
      kCast, {f32({8}, {minSub, 3 * std::ldexp(1, -134), std::ldexp(1, -135),
                        std::ldexp(1, -126) * 1.5, fmax, -fmax, inf,
                        std::numeric_limits<double>::quiet_NaN()})});
  EXPECT_EQ(r.floats[0], minSub);                 // kept, not flushed
  EXPECT_EQ(r.floats[1], std::ldexp(1, -132));    // tie to the even 2^-132
  EXPECT_EQ(r.floats[2], 0.0);                    // below half the quantum
  EXPECT_EQ(r.floats[3], std::ldexp(1, -126) * 1.5);
  EXPECT_EQ(r.floats[4], inf);                    // past the largest bf16
  EXPECT_EQ(r.floats[5], -inf);
  EXPECT_EQ(r.floats[6], inf);
  EXPECT_TRUE(std::isnan(r.floats[7]));
}

TEST_F(Precision, Bf16LinearRoundsOnceAfterItsBias) {
  // x . w = 1 + 2^-8 exactly: alone it rounds to 1 (a tie, to even); plus the
  // bias 2^-8 it is 1 + 2^-7, representable. Rounding twice would give 1.
  RefTensor x = RefTensor::fromFloats(ElementKind::BF16, {1, 2},
                                      {1, std::ldexp(1, -8)});
  RefTensor w = RefTensor::fromFloats(ElementKind::BF16, {2, 1}, {1, 1});
  RefTensor b = RefTensor::fromFloats(ElementKind::BF16, {1},
                                      {std::ldexp(1, -8)});
  auto r = run(R"(
    func.func @f(%x: tensor<1x2xbf16>, %w: tensor<2x1xbf16>, %b: tensor<1xbf16>) -> (tensor<1x1xbf16>, tensor<1x1xbf16>) {
      %0 = llmc.matmul %x, %w : (tensor<1x2xbf16>, tensor<2x1xbf16>) -> tensor<1x1xbf16>
      %1 = llmc.add %0, %b : (tensor<1x1xbf16>, tensor<1xbf16>) -> tensor<1x1xbf16>
      %2 = llmc.matmul %x, %w : (tensor<1x2xbf16>, tensor<2x1xbf16>) -> tensor<1x1xbf16>
      return %1, %2 : tensor<1x1xbf16>, tensor<1x1xbf16>
    })",
               {x, w, b});
  ASSERT_EQ(r.size(), 2u) << diagnostics;
  EXPECT_EQ(r[0].floats[0], 1 + std::ldexp(1, -7));
  EXPECT_EQ(r[1].floats[0], 1.0);
}

TEST_F(Precision, Bf16AccumulationIsTheMutationsMistake) {
  // 1 + 4 * 2^-8 = 1 + 2^-6 exactly; accumulated in bf16 every 2^-8 is a
  // tie that rounds back to 1.
  RefTensor x = RefTensor::fromFloats(
      ElementKind::BF16, {1, 5},
      {1, std::ldexp(1, -8), std::ldexp(1, -8), std::ldexp(1, -8),
       std::ldexp(1, -8)});
  RefTensor w = RefTensor::fromFloats(ElementKind::BF16, {5, 1},
                                      {1, 1, 1, 1, 1});
  auto r = run(R"(
    func.func @f(%x: tensor<1x5xbf16>, %w: tensor<5x1xbf16>) -> (tensor<1x1xbf16>, tensor<1x1xbf16>) {
      %0 = llmc.matmul %x, %w : (tensor<1x5xbf16>, tensor<5x1xbf16>) -> tensor<1x1xbf16>
      %1 = llmc.matmul %x, %w {llmc.accumulate = bf16} : (tensor<1x5xbf16>, tensor<5x1xbf16>) -> tensor<1x1xbf16>
      return %0, %1 : tensor<1x1xbf16>, tensor<1x1xbf16>
    })",
               {x, w});
  ASSERT_EQ(r.size(), 2u) << diagnostics;
  EXPECT_EQ(r[0].floats[0], 1 + std::ldexp(1, -6));
  EXPECT_EQ(r[1].floats[0], 1.0);
}

TEST(PrecisionProbability, RoundsOnlyNarrowAttention) {
  double p = 1 + std::ldexp(1, -8);
  EXPECT_EQ(roundProbability(p, ElementKind::BF16), 1.0);
  EXPECT_EQ(roundProbability(p, ElementKind::F16), p);
  EXPECT_EQ(roundProbability(p, ElementKind::F32), p);
  EXPECT_EQ(roundProbability(p, ElementKind::F64), p);
}

} // namespace
} // namespace llmc::test
