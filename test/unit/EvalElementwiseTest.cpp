//===- EvalElementwiseTest.cpp - Evaluator: elementwise ops ---------------===//
#include "EvalTestUtils.h"

#include <cmath>

using namespace llmc;
using namespace llmc::test;

namespace {

using Elementwise = EvalTest;

TEST_F(Elementwise, AddBroadcastsLikeNumpy) {
  RefTensor r = run1(R"(
    func.func @f(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
      %0 = llmc.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    })",
                     {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {10, 20, 30})});
  EXPECT_EQ(r.shape, (std::vector<int64_t>{2, 3}));
  expectNear(r, {11, 22, 33, 14, 25, 36}, 0);
}

TEST_F(Elementwise, BroadcastsBothOperands) {
  // [3, 1] - [4] -> [3, 4]: r[i][j] = a[i] - b[j].
  RefTensor r = run1(R"(
    func.func @f(%a: tensor<3x1xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
      %0 = llmc.sub %a, %b : (tensor<3x1xf32>, tensor<4xf32>) -> tensor<3x4xf32>
      return %0 : tensor<3x4xf32>
    })",
                     {f32({3, 1}, {1, 2, 3}), f32({4}, {0, 1, 2, 3})});
  std::vector<double> want;
  for (int i = 1; i <= 3; ++i)
    for (int j = 0; j < 4; ++j)
      want.push_back(i - j);
  expectNear(r, want, 0);
}

TEST_F(Elementwise, IntegerDivisionTruncatesAndWraps) {
  RefTensor r =
      run1(R"(
    func.func @f(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
      %0 = llmc.div %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
      return %0 : tensor<4xi64>
    })",
           {i64({4}, {-7, 7, 9007199254740993, -9}), i64({4}, {2, -2, 1, 3})});
  // 2^53 + 1 survives: integers never pass through a double.
  EXPECT_EQ(r.ints, (std::vector<int64_t>{-3, -3, 9007199254740993, -3}));
  RefTensor w =
      run1(R"(
    func.func @f(%a: tensor<1xi32>) -> tensor<1xi32> {
      %c = llmc.constant dense<1> : tensor<1xi32>
      %0 = llmc.add %a, %c : (tensor<1xi32>, tensor<1xi32>) -> tensor<1xi32>
      return %0 : tensor<1xi32>
    })",
           {RefTensor::fromInts(ElementKind::I32, {1}, {2147483647})});
  EXPECT_EQ(w.ints[0], -2147483648ll);
}

TEST_F(Elementwise, IntegerDivisionByZeroIsAnError) {
  auto r = run(R"(
    func.func @f(%a: tensor<2xi64>, %b: tensor<2xi64>) -> tensor<2xi64> {
      %0 = llmc.div %a, %b : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
      return %0 : tensor<2xi64>
    })",
               {i64({2}, {1, 2}), i64({2}, {1, 0})});
  EXPECT_TRUE(r.empty());
  EXPECT_NE(diagnostics.find("integer division by zero at result element 1"),
            std::string::npos)
      << diagnostics;
}

TEST_F(Elementwise, UnaryMath) {
  std::vector<double> x = {-1.5, 0.25, 2.0};
  const char *ir = R"(
    func.func @f(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
      %0 = llmc.exp %x : tensor<3xf32>
      %1 = llmc.sigmoid %x : tensor<3xf32>
      %2 = llmc.relu %x : tensor<3xf32>
      %3 = llmc.neg %x : tensor<3xf32>
      %4 = llmc.abs %x : tensor<3xf32>
      %a = llmc.abs %x : tensor<3xf32>
      %5 = llmc.rsqrt %a : tensor<3xf32>
      return %0, %1, %2, %3, %4, %5 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
    })";
  auto r = run(ir, {f32({3}, x)});
  ASSERT_EQ(r.size(), 6u) << diagnostics;
  for (int i = 0; i < 3; ++i) {
    float xf = static_cast<float>(x[i]);
    EXPECT_EQ(r[0].floats[i], static_cast<float>(std::exp(x[i])));
    EXPECT_EQ(r[1].floats[i], static_cast<float>(1 / (1 + std::exp(-x[i]))));
    EXPECT_EQ(r[2].floats[i], xf > 0 ? xf : 0);
    EXPECT_EQ(r[3].floats[i], -xf);
    EXPECT_EQ(r[4].floats[i], std::fabs(xf));
    EXPECT_EQ(r[5].floats[i],
              static_cast<float>(1 / std::sqrt(std::fabs(x[i]))));
  }
}

TEST_F(Elementwise, GeluFormsAndSilu) {
  std::vector<double> x = {-2, -0.5, 0, 1, 3};
  auto r = run(R"(
    func.func @f(%x: tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>) {
      %0 = llmc.gelu erf %x : tensor<5xf32>
      %1 = llmc.gelu tanh %x : tensor<5xf32>
      %2 = llmc.silu %x : tensor<5xf32>
      return %0, %1, %2 : tensor<5xf32>, tensor<5xf32>, tensor<5xf32>
    })",
               {f32({5}, x)});
  ASSERT_EQ(r.size(), 3u) << diagnostics;
  for (int i = 0; i < 5; ++i) {
    double v = x[i];
    // Phi(x) = (1 + erf(x / sqrt 2)) / 2 is the normal CDF.
    EXPECT_NEAR(r[0].floats[i], v * 0.5 * std::erfc(-v / std::sqrt(2.0)), 1e-6);
    double inner = std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v);
    EXPECT_NEAR(r[1].floats[i], 0.5 * v * (1 + std::tanh(inner)), 1e-6);
    EXPECT_NEAR(r[2].floats[i], v / (1 + std::exp(-v)), 1e-6);
  }
  // The two gelu forms are different functions (by ~1e-4 at x = -2).
  EXPECT_GT(std::fabs(r[0].floats[0] - r[1].floats[0]), 5e-5);
}

TEST_F(Elementwise, Bf16ResultsRoundToNearestEven) {
  // 256 + 1 = 257 lies halfway between bf16's 256 and 258: ties to 256.
  // 256 + 3 = 259 lies halfway between 258 and 260: ties to 260.
  RefTensor r = run1(R"(
    func.func @f(%a: tensor<2xbf16>, %b: tensor<2xbf16>) -> tensor<2xbf16> {
      %0 = llmc.add %a, %b : (tensor<2xbf16>, tensor<2xbf16>) -> tensor<2xbf16>
      return %0 : tensor<2xbf16>
    })",
                     {RefTensor::fromFloats(ElementKind::BF16, {2}, {256, 256}),
                      RefTensor::fromFloats(ElementKind::BF16, {2}, {1, 3})});
  expectNear(r, {256, 260}, 0);
}

TEST_F(Elementwise, MaxMinPropagateNaN) {
  auto r = run(R"(
    func.func @f(%a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xi1>) {
      %0 = llmc.max %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      %1 = llmc.min %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      %2 = llmc.isnan %0 : tensor<2xf32> -> tensor<2xi1>
      return %0, %1, %2 : tensor<2xf32>, tensor<2xf32>, tensor<2xi1>
    })",
               {f32({2}, {NAN, 1}), f32({2}, {0, 2})});
  ASSERT_EQ(r.size(), 3u) << diagnostics;
  expectNear(r[0], {NAN, 2}, 0);
  expectNear(r[1], {NAN, 1}, 0);
  EXPECT_EQ(r[2].ints, (std::vector<int64_t>{1, 0}));
}

TEST_F(Elementwise, CompareAndWhere) {
  // Causal mask: keep[i][j] = j <= i, then where(keep, x, -inf).
  auto r = run(R"(
    func.func @f(%i: tensor<3x1xi64>, %j: tensor<3xi64>, %x: tensor<3x3xf32>) -> (tensor<3x3xi1>, tensor<3x3xf32>) {
      %m = llmc.compare le, %j, %i : (tensor<3xi64>, tensor<3x1xi64>) -> tensor<3x3xi1>
      %n = llmc.constant dense<0xFF800000> : tensor<f32>
      %y = llmc.where %m, %x, %n : (tensor<3x3xi1>, tensor<3x3xf32>, tensor<f32>) -> tensor<3x3xf32>
      return %m, %y : tensor<3x3xi1>, tensor<3x3xf32>
    })",
               {i64({3, 1}, {0, 1, 2}), i64({3}, {0, 1, 2}),
                f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})});
  ASSERT_EQ(r.size(), 2u) << diagnostics;
  std::vector<int64_t> keep;
  std::vector<double> y;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      keep.push_back(j <= i);
      y.push_back(j <= i ? 3 * i + j + 1 : -INFINITY);
    }
  EXPECT_EQ(r[0].ints, keep);
  expectNear(r[1], y, 0);
}

TEST_F(Elementwise, CompareFloatsWithNaN) {
  auto r = run(R"(
    func.func @f(%a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xi1>, tensor<2xi1>) {
      %0 = llmc.compare eq, %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
      %1 = llmc.compare ne, %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
      return %0, %1 : tensor<2xi1>, tensor<2xi1>
    })",
               {f32({2}, {NAN, 1}), f32({2}, {NAN, 1})});
  ASSERT_EQ(r.size(), 2u) << diagnostics;
  EXPECT_EQ(r[0].ints, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(r[1].ints, (std::vector<int64_t>{1, 0}));
}

TEST_F(Elementwise, CastConversions) {
  auto r = run(R"(
    func.func @f(%x: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xi1>, tensor<4xbf16>) {
      %0 = llmc.cast %x : tensor<4xf32> -> tensor<4xi32>
      %1 = llmc.cast %x : tensor<4xf32> -> tensor<4xi1>
      %2 = llmc.cast %x : tensor<4xf32> -> tensor<4xbf16>
      return %0, %1, %2 : tensor<4xi32>, tensor<4xi1>, tensor<4xbf16>
    })",
               {f32({4}, {-2.7, 0, 3.9, 1.00390625})});
  ASSERT_EQ(r.size(), 3u) << diagnostics;
  EXPECT_EQ(r[0].ints, (std::vector<int64_t>{-2, 0, 3, 1}));
  EXPECT_EQ(r[1].ints, (std::vector<int64_t>{1, 0, 1, 1}));
  // bf16 keeps 8 significant bits: 3.9 -> 3.90625, 1 + 2^-8 -> 1 (tie).
  expectNear(r[2], {-2.703125, 0, 3.90625, 1}, 0);
}

TEST_F(Elementwise, CastOfNaNToIntegerIsAnError) {
  auto r = run(R"(
    func.func @f(%x: tensor<2xf32>) -> tensor<2xi64> {
      %0 = llmc.cast %x : tensor<2xf32> -> tensor<2xi64>
      return %0 : tensor<2xi64>
    })",
               {f32({2}, {1, NAN})});
  EXPECT_TRUE(r.empty());
  EXPECT_NE(diagnostics.find("cannot cast nan (element 1) to i64"),
            std::string::npos)
      << diagnostics;
}

TEST_F(Elementwise, UnknownOpIsAnErrorNamingIt) {
  context.allowUnregisteredDialects();
  auto r = run(R"(
    func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
      %0 = "mystery.op"(%x) : (tensor<2xf32>) -> tensor<2xf32>
      return %0 : tensor<2xf32>
    })",
               {f32({2}, {1, 2})});
  EXPECT_TRUE(r.empty());
  EXPECT_NE(diagnostics.find("no kernel for op 'mystery.op'"),
            std::string::npos)
      << diagnostics;
}

TEST_F(Elementwise, ArgumentTypeMismatchIsAnError) {
  auto r = run(R"(
    func.func @f(%x: tensor<2xf32> {llmc.input = "x"}) -> tensor<2xf32> {
      return %x : tensor<2xf32>
    })",
               {f32({3}, {1, 2, 3})});
  EXPECT_TRUE(r.empty());
  EXPECT_NE(diagnostics.find("argument 'x' expects f32[2], got f32[3]"),
            std::string::npos)
      << diagnostics;
}

} // namespace
