//===- EvalDropoutTest.cpp - llmc.dropout_mask in the evaluator -----------===//
//
// Philox4x32-10 against the known-answer vectors of its authors' Random123
// (kat_vectors), the keep rate and the mean-preserving scale of the mask,
// that the mask depends on exactly (seed, offset, step, index), and that the
// gradient of x * mask is the cotangent times the same mask.
//
//===----------------------------------------------------------------------===//
#include "EvalTestUtils.h"
#include "GradCheckUtils.h"

#include "compiler/common/Philox.h"

#include <cmath>

using namespace llmc;
using namespace llmc::test;

namespace {

TEST(Philox, KnownAnswers) {
  using W = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}),
            (W{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                       {0xffffffff, 0xffffffff}),
            (W{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                       {0xa4093822, 0x299f31d0}),
            (W{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

constexpr int64_t kN = 200000;

std::string maskIR(double ratio, int64_t seed, int64_t offset) {
  char attrs[160];
  std::snprintf(attrs, sizeof(attrs),
                "{ratio = %.17g : f64, seed = %lld : i64, offset = %lld : i64}",
                ratio, static_cast<long long>(seed),
                static_cast<long long>(offset));
  std::string t = "tensor<" + std::to_string(kN) + "xf32>";
  return "func.func @f(%step: tensor<i64>) -> " + t +
         " {\n  %m = llmc.dropout_mask %step " + attrs +
         " : (tensor<i64>) -> " + t + "\n  return %m : " + t + "\n}\n";
}

class EvalDropout : public EvalTest {
protected:
  RefTensor mask(double ratio, int64_t step, int64_t seed = 7,
                 int64_t offset = 0) {
    return run1(maskIR(ratio, seed, offset), {i64({}, {step})});
  }
};

TEST_F(EvalDropout, KeepRateAndScale) {
  for (double ratio : {0.1, 0.5, 0.9}) {
    RefTensor m = mask(ratio, 3);
    ASSERT_EQ(m.numElements(), kN);
    double scale = static_cast<float>(1.0 / (1.0 - ratio));
    int64_t kept = 0;
    double sum = 0;
    for (double v : m.floats) {
      ASSERT_TRUE(v == 0 || v == scale) << v;
      kept += v != 0;
      sum += v;
    }
    // Binomial(kN, 1 - ratio): 5 standard deviations.
    double keep = 1 - ratio;
    double sigma = std::sqrt(keep * ratio / kN);
    EXPECT_NEAR(double(kept) / kN, keep, 5 * sigma) << "ratio " << ratio;
    // Mean-preserving: E[mask] = 1.
    EXPECT_NEAR(sum / kN, 1.0, 5 * sigma * scale) << "ratio " << ratio;
  }
}

TEST_F(EvalDropout, SameCounterSameMaskOtherCounterOtherMask) {
  RefTensor a = mask(0.5, 11), again = mask(0.5, 11);
  EXPECT_EQ(a.floats, again.floats) << "a replay must draw the same mask";
  auto differing = [&](const RefTensor &b) {
    int64_t d = 0;
    for (int64_t i = 0; i < kN; ++i)
      d += a.floats[i] != b.floats[i];
    return double(d) / kN;
  };
  // Independent masks of ratio 1/2 differ in half of the elements.
  EXPECT_NEAR(differing(mask(0.5, 12)), 0.5, 0.01) << "next step";
  EXPECT_NEAR(differing(mask(0.5, 11, 8)), 0.5, 0.01) << "other seed";
  EXPECT_NEAR(differing(mask(0.5, 11, 7, 1)), 0.5, 0.01) << "other site";
  // Steps past 2^32 use the counter's high word.
  EXPECT_NEAR(differing(mask(0.5, 11 + (int64_t(1) << 32))), 0.5, 0.01);
}

TEST_F(EvalDropout, MatchesPhiloxElementByElement) {
  RefTensor m = mask(0.25, 5, 42, 9);
  uint32_t threshold = dropoutThreshold(0.25);
  for (int64_t i = 0; i < 1000; ++i)
    EXPECT_EQ(m.floats[i] != 0, dropoutKeeps(42, 9, 5, uint32_t(i), threshold))
        << "element " << i;
}

TEST_F(EvalDropout, WithoutAStepItIsStepZero) {
  std::string t = "tensor<64xf32>";
  std::string ir = "func.func @f() -> " + t +
                   " {\n  %m = llmc.dropout_mask {ratio = 0.5 : f64, seed = 7 "
                   ": i64, offset = 0 : i64} : () -> " +
                   t + "\n  return %m : " + t + "\n}\n";
  RefTensor noStep = run1(ir, {});
  std::string withStep = "func.func @f(%s: tensor<i64>) -> " + t +
                         " {\n  %m = llmc.dropout_mask %s {ratio = 0.5 : f64, "
                         "seed = 7 : i64, offset = 0 : i64} : (tensor<i64>) -> " +
                         t + "\n  return %m : " + t + "\n}\n";
  EXPECT_EQ(noStep.floats, run1(withStep, {i64({}, {0})}).floats);
}

// The backward pass multiplies the cotangent by the same mask: d/dx of
// sum(x * mask * r) is r * mask, exactly, and agrees with central
// differences.
TEST_F(GradCheck, DropoutGradientUsesTheForwardMask) {
  std::string body =
      "  %m = llmc.dropout_mask {ratio = 0.3 : f64, seed = 1 : i64, offset = 2 "
      ": i64} : () -> tensor<4x8xf64>\n"
      "  %y = llmc.mul %x, %m : (tensor<4x8xf64>, tensor<4x8xf64>) -> "
      "tensor<4x8xf64>";
  std::string ir =
      lossOf({param("x", "tensor<4x8xf64>")}, body, "tensor<4x8xf64>");
  EXPECT_EQ(check(ir), 32) << diagnostics;

  std::vector<double> ones(32, 1.0), r(32);
  for (int i = 0; i < 32; ++i)
    r[i] = 0.5 + i;
  auto grads = gradients(
      ir, {{"x", RefTensor::fromFloats(ElementKind::F64, {4, 8}, ones)},
           {"r", RefTensor::fromFloats(ElementKind::F64, {4, 8}, r)}});
  ASSERT_EQ(grads.size(), 1u) << diagnostics;
  uint32_t threshold = dropoutThreshold(0.3);
  int kept = 0;
  for (int i = 0; i < 32; ++i) {
    bool keep = dropoutKeeps(1, 2, 0, uint32_t(i), threshold);
    kept += keep;
    EXPECT_EQ(grads[0].floats[i], keep ? r[i] * (1.0 / 0.7) : 0.0) << "element " << i;
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 32);
}

} // namespace
