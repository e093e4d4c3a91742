//===- EvalPrecisionTest.cpp - The evaluator on precision-lowered IR ------===//
//
// What llmc-lower-precision relies on (docs/precision.md): a cast to bf16
// rounds to nearest even (subnormals kept, overflow to inf, NaN kept), a
// bf16 matmul accumulates exactly and rounds once, after the bias of a
// linear layer, a GELU (DGELU) epilogue group's gelu (gelu_grad) reads the
// unrounded product, and the mutation test's `llmc.accumulate = bf16`
// rounds every partial sum.
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

TEST_F(Precision, Tf32MatmulReadsOperandsTiesToEven) {
  // --precision tf32 marks the module: each f32 operand is read with 10
  // mantissa bits, ties to even (1024.5 -> 1024, 1025.5 -> 1026),
  // then the products are summed exactly. Unmarked, the same matmul is
  // exact f32.
  const char *ir = R"(
    module attributes {llmc.precision = "tf32"} {
      func.func @f(%x: tensor<4x1xf32>, %w: tensor<1x1xf32>) -> tensor<4x1xf32> {
        %0 = llmc.matmul %x, %w : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
        return %0 : tensor<4x1xf32>
      }
    })";
  RefTensor x = f32({4, 1}, {1024.5, -1025.5, 1024.25, 1 + std::ldexp(1, -11)});
  RefTensor w = f32({1, 1}, {1.0});
  RefTensor r = run1(ir, {x, w});
  ASSERT_EQ(r.kind, ElementKind::F32) << diagnostics;
  EXPECT_EQ(r.floats[0], 1024.0);
  EXPECT_EQ(r.floats[1], -1026.0);
  EXPECT_EQ(r.floats[2], 1024.0);
  EXPECT_EQ(r.floats[3], 1.0);
  std::string plain = ir;
  plain.replace(plain.find("llmc.precision"), 14, "llmc.other_attr");
  RefTensor exact = run1(plain, {x, w});
  EXPECT_EQ(exact.floats[0], 1024.5);
  EXPECT_EQ(exact.floats[3], 1 + std::ldexp(1, -11));
}

TEST_F(Precision, CastToF16OverflowsToInf) {
  // fp16's loss scaling relies on it: 65519.99 rounds down to 65504, 65520
  // (the midpoint to the next binade) and above to inf.
  RefTensor r = run1(R"(
    func.func @f(%x: tensor<5xf32>) -> tensor<5xf16> {
      %0 = llmc.cast %x : tensor<5xf32> -> tensor<5xf16>
      return %0 : tensor<5xf16>
    })",
                     {f32({5}, {65519.0, 65520.0, -1e6, 1e-8, 3e38})});
  ASSERT_EQ(r.kind, ElementKind::F16) << diagnostics;
  EXPECT_EQ(r.floats[0], 65504.0);
  EXPECT_TRUE(std::isinf(r.floats[1]) && r.floats[1] > 0);
  EXPECT_TRUE(std::isinf(r.floats[2]) && r.floats[2] < 0);
  EXPECT_EQ(r.floats[3], 0.0); // below half of the smallest subnormal, 2^-24
  EXPECT_TRUE(std::isinf(r.floats[4]));
}

double geluTanh(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

// cuBLASLt's GELU epilogue (a `llmc.epilogue = "gelu"` group) applies gelu
// to the unrounded acc + b and rounds once; the aux output is round(acc +
// b). The same ops outside a group round acc + b first (autocast's order).
// Columns j: x . w_j = 1.5 + c_j 2^-8, which bf16 rounds by up to half an
// ulp (2^-8), enough to move some gelu results by one ulp.
TEST_F(Precision, GeluEpilogueReadsTheUnroundedProduct) {
  const std::vector<double> c = {0.25, 0.5, 0.75, 1.25, 1.5, 1.75, 2.5, 3.5};
  std::vector<double> w(16);
  for (size_t j = 0; j < c.size(); ++j) {
    w[j] = 1;                    // row 0
    w[8 + j] = c[j];             // row 1
  }
  RefTensor x = RefTensor::fromFloats(ElementKind::BF16, {1, 2},
                                      {1.5, std::ldexp(1, -8)});
  RefTensor wt = RefTensor::fromFloats(ElementKind::BF16, {2, 8}, w);
  RefTensor b = RefTensor::fromFloats(ElementKind::BF16, {8},
                                      std::vector<double>(8, std::ldexp(1, -10)));
  auto r = run(R"(
    func.func @f(%x: tensor<1x2xbf16>, %w: tensor<2x8xbf16>, %b: tensor<8xbf16>) -> (tensor<1x8xbf16>, tensor<1x8xbf16>, tensor<1x8xbf16>, tensor<1x8xbf16>, tensor<1x8xbf16>) {
      %k:2 = llmc.kernel -> (tensor<1x8xbf16>, tensor<1x8xbf16>) attributes {llmc.epilogue = "gelu"} {
        %0 = llmc.matmul %x, %w : (tensor<1x2xbf16>, tensor<2x8xbf16>) -> tensor<1x8xbf16>
        %1 = llmc.add %0, %b : (tensor<1x8xbf16>, tensor<8xbf16>) -> tensor<1x8xbf16>
        %2 = llmc.gelu tanh %1 : tensor<1x8xbf16>
        llmc.yield %2, %1 : tensor<1x8xbf16>, tensor<1x8xbf16>
      }
      %n:2 = llmc.kernel -> (tensor<1x8xbf16>, tensor<1x8xbf16>) attributes {llmc.epilogue = "gelu"} {
        %0 = llmc.matmul %x, %w : (tensor<1x2xbf16>, tensor<2x8xbf16>) -> tensor<1x8xbf16>
        %1 = llmc.gelu tanh %0 : tensor<1x8xbf16>
        llmc.yield %1, %0 : tensor<1x8xbf16>, tensor<1x8xbf16>
      }
      %3 = llmc.matmul %x, %w : (tensor<1x2xbf16>, tensor<2x8xbf16>) -> tensor<1x8xbf16>
      %4 = llmc.add %3, %b : (tensor<1x8xbf16>, tensor<8xbf16>) -> tensor<1x8xbf16>
      %5 = llmc.gelu tanh %4 : tensor<1x8xbf16>
      return %k#0, %k#1, %n#0, %n#1, %5 : tensor<1x8xbf16>, tensor<1x8xbf16>, tensor<1x8xbf16>, tensor<1x8xbf16>, tensor<1x8xbf16>
    })",
               {x, wt, b});
  ASSERT_EQ(r.size(), 5u) << diagnostics;
  int moved = 0;
  for (size_t j = 0; j < c.size(); ++j) {
    double acc = 1.5 + c[j] * std::ldexp(1, -8);
    double z = acc + std::ldexp(1, -10);
    double zr = roundToKind(z, ElementKind::BF16);
    EXPECT_EQ(r[0].floats[j], roundToKind(geluTanh(z), ElementKind::BF16)) << j;
    EXPECT_EQ(r[1].floats[j], zr) << j; // the aux: what gelu_grad reads
    EXPECT_EQ(r[2].floats[j], roundToKind(geluTanh(acc), ElementKind::BF16))
        << j;
    EXPECT_EQ(r[3].floats[j], roundToKind(acc, ElementKind::BF16)) << j;
    EXPECT_EQ(r[4].floats[j], roundToKind(geluTanh(zr), ElementKind::BF16))
        << j;
    moved += r[0].floats[j] != r[4].floats[j];
  }
  // The data must tell the two orders apart, or the test shows nothing.
  EXPECT_GT(moved, 0);
}

double geluTanhGrad(double x) {
  const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
  double t = std::tanh(k * (x + c * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * c * x * x);
}

// cuBLASLt's DGELU (a `llmc.epilogue = "gelu_grad"` group) multiplies
// gelu'(aux) by the unrounded product and rounds once; the same ops outside
// a group round the product first. The products are those of the GELU case
// above, 1.5 + c_j 2^-8; the aux (the pre-activation) is a bf16 input.
TEST_F(Precision, DGeluEpilogueReadsTheUnroundedProduct) {
  const std::vector<double> c = {0.25, 0.5, 0.75, 1.25, 1.5, 1.75, 2.5, 3.5};
  const std::vector<double> pre = {-2.5, -1.0, -0.5, 0.25,
                                   0.5,  0.75, 1.25, 2.0};
  std::vector<double> w(16);
  for (size_t j = 0; j < c.size(); ++j) {
    w[j] = 1;
    w[8 + j] = c[j];
  }
  RefTensor x = RefTensor::fromFloats(ElementKind::BF16, {1, 2},
                                      {1.5, std::ldexp(1, -8)});
  RefTensor wt = RefTensor::fromFloats(ElementKind::BF16, {2, 8}, w);
  RefTensor p = RefTensor::fromFloats(ElementKind::BF16, {1, 8}, pre);
  auto r = run(R"(
    func.func @f(%x: tensor<1x2xbf16>, %w: tensor<2x8xbf16>, %p: tensor<1x8xbf16>) -> (tensor<1x8xbf16>, tensor<1x8xbf16>) {
      %k = llmc.kernel -> (tensor<1x8xbf16>) attributes {llmc.epilogue = "gelu_grad"} {
        %0 = llmc.matmul %x, %w : (tensor<1x2xbf16>, tensor<2x8xbf16>) -> tensor<1x8xbf16>
        %1 = llmc.gelu_grad tanh %p, %0 : tensor<1x8xbf16>
        llmc.yield %1 : tensor<1x8xbf16>
      }
      %2 = llmc.matmul %x, %w : (tensor<1x2xbf16>, tensor<2x8xbf16>) -> tensor<1x8xbf16>
      %3 = llmc.gelu_grad tanh %p, %2 : tensor<1x8xbf16>
      return %k, %3 : tensor<1x8xbf16>, tensor<1x8xbf16>
    })",
               {x, wt, p});
  ASSERT_EQ(r.size(), 2u) << diagnostics;
  int moved = 0;
  for (size_t j = 0; j < c.size(); ++j) {
    double acc = 1.5 + c[j] * std::ldexp(1, -8);
    double g = geluTanhGrad(pre[j]);
    EXPECT_EQ(r[0].floats[j], roundToKind(g * acc, ElementKind::BF16)) << j;
    EXPECT_EQ(r[1].floats[j],
              roundToKind(g * roundToKind(acc, ElementKind::BF16),
                          ElementKind::BF16))
        << j;
    moved += r[0].floats[j] != r[1].floats[j];
  }
  EXPECT_GT(moved, 0); // the data tells the two orders apart
}

// bf16 and f16 attention round P to their type (the 16-bit tensor-core
// kernels feed it to the mma that way); f32 and f64 keep it.
TEST(PrecisionProbability, RoundsOnlyNarrowAttention) {
  double p = 1 + std::ldexp(1, -8); // bf16's ulp at 1 is 2^-7, f16's 2^-10
  EXPECT_EQ(roundProbability(p, ElementKind::BF16), 1.0);
  EXPECT_EQ(roundProbability(p, ElementKind::F16), p);
  double q = 1 + std::ldexp(1, -12);
  EXPECT_EQ(roundProbability(q, ElementKind::F16), 1.0);
  EXPECT_EQ(roundProbability(q, ElementKind::F32), q);
  EXPECT_EQ(roundProbability(q, ElementKind::F64), q);
  // f16 keeps subnormals and flushes below half the smallest one, 2^-24.
  EXPECT_EQ(roundProbability(std::ldexp(3, -25), ElementKind::F16),
            std::ldexp(1, -23));
  EXPECT_EQ(roundProbability(std::ldexp(1, -26), ElementKind::F16), 0.0);
}

} // namespace
} // namespace llmc::test
