//===- EvalNNTest.cpp - Evaluator: matmul, norms, softmax -----------------===//
#include "EvalTestUtils.h"

#include <cmath>

using namespace llmc;
using namespace llmc::test;

namespace {

using NN = EvalTest;

std::vector<double> ramp(int n, double scale, double offset) {
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = scale * i + offset;
  return v;
}

TEST_F(NN, MatmulWithTransposeFlags) {
  // a: [2, 3], b: [3, 2]; the same products through transposed storage.
  std::vector<double> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12};
  std::vector<double> aT = {1, 4, 2, 5, 3, 6}, bT = {7, 9, 11, 8, 10, 12};
  auto r =
      run(R"(
    func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>, %aT: tensor<3x2xf32>, %bT: tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
      %0 = llmc.matmul %a, %b : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
      %1 = llmc.matmul %aT, %bT {transpose_lhs, transpose_rhs} : (tensor<3x2xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
      return %0, %1 : tensor<2x2xf32>, tensor<2x2xf32>
    })",
          {f32({2, 3}, a), f32({3, 2}, b), f32({3, 2}, aT), f32({2, 3}, bT)});
  ASSERT_EQ(r.size(), 2u) << diagnostics;
  // [1 2 3; 4 5 6] [7 8; 9 10; 11 12] = [58 64; 139 154]
  expectNear(r[0], {58, 64, 139, 154}, 0);
  expectNear(r[1], {58, 64, 139, 154}, 0);
}

TEST_F(NN, MatmulBroadcastsBatchDims) {
  // a: [2, 1, 2, 2], b: [3, 2, 2] -> [2, 3, 2, 2].
  std::vector<double> a = ramp(8, 1, 1), b = ramp(12, 0.5, -2);
  RefTensor r = run1(R"(
    func.func @f(%a: tensor<2x1x2x2xf32>, %b: tensor<3x2x2xf32>) -> tensor<2x3x2x2xf32> {
      %0 = llmc.matmul %a, %b : (tensor<2x1x2x2xf32>, tensor<3x2x2xf32>) -> tensor<2x3x2x2xf32>
      return %0 : tensor<2x3x2x2xf32>
    })",
                     {f32({2, 1, 2, 2}, a), f32({3, 2, 2}, b)});
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int m = 0; m < 2; ++m)
        for (int n = 0; n < 2; ++n) {
          double s = 0;
          for (int k = 0; k < 2; ++k)
            s += a[i * 4 + m * 2 + k] * b[j * 4 + k * 2 + n];
          want.push_back(s);
        }
  expectNear(r, want, 0);
}

TEST_F(NN, IntegerMatmulIsExact) {
  RefTensor r = run1(R"(
    func.func @f(%a: tensor<1x2xi64>, %b: tensor<2x1xi64>) -> tensor<1x1xi64> {
      %0 = llmc.matmul %a, %b : (tensor<1x2xi64>, tensor<2x1xi64>) -> tensor<1x1xi64>
      return %0 : tensor<1x1xi64>
    })",
                     {i64({1, 2}, {4294967296, 1}), i64({2, 1}, {4194304, 1})});
  EXPECT_EQ(r.ints[0], 18014398509481985ll); // 2^54 + 1: not a double
}

/// Reference layer norm over rows of `inner` elements.
std::vector<double> layerNorm(const std::vector<double> &x, int inner,
                              const std::vector<double> &w,
                              const std::vector<double> &b, double eps) {
  std::vector<double> y(x.size());
  for (size_t row = 0; row < x.size() / inner; ++row) {
    double mean = 0, var = 0;
    for (int j = 0; j < inner; ++j)
      mean += x[row * inner + j] / inner;
    for (int j = 0; j < inner; ++j)
      var += std::pow(x[row * inner + j] - mean, 2) / inner; // biased
    for (int j = 0; j < inner; ++j)
      y[row * inner + j] = (x[row * inner + j] - mean) / std::sqrt(var + eps) *
                               (w.empty() ? 1 : w[j]) +
                           (b.empty() ? 0 : b[j]);
  }
  return y;
}

TEST_F(NN, LayerNorm) {
  std::vector<double> x = {1, 2, 4, -1, 0, 7}, w = {0.5, 1, 2}, b = {0, 1, -1};
  auto r = run(R"(
    func.func @f(%x: tensor<2x3xf32>, %w: tensor<3xf32>, %b: tensor<3xf32>, %x3: tensor<2x1x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x1x3xf32>) {
      %0 = llmc.layer_norm %x weight %w bias %b {epsilon = 1.0e-05 : f64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      %1 = llmc.layer_norm %x {epsilon = 0.5 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %2 = llmc.layer_norm %x3 {axis = 1 : i64} : (tensor<2x1x3xf32>) -> tensor<2x1x3xf32>
      return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x1x3xf32>
    })",
               {f32({2, 3}, x), f32({3}, w), f32({3}, b), f32({2, 1, 3}, x)});
  ASSERT_EQ(r.size(), 3u) << diagnostics;
  expectNear(r[0], layerNorm(x, 3, w, b, 1e-5), 1e-6);
  expectNear(r[1], layerNorm(x, 3, {}, {}, 0.5), 1e-6);
  // axis 1 of [2, 1, 3] normalizes the trailing [1, 3]: the same rows.
  expectNear(r[2], layerNorm(x, 3, {}, {}, 1e-5), 1e-6);
}

TEST_F(NN, LayerNormOverTwoDims) {
  std::vector<double> x = ramp(8, 1.5, -3);
  RefTensor r = run1(R"(
    func.func @f(%x: tensor<2x2x2xf32>) -> tensor<2x2x2xf32> {
      %0 = llmc.layer_norm %x {axis = 1 : i64} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
      return %0 : tensor<2x2x2xf32>
    })",
                     {f32({2, 2, 2}, x)});
  expectNear(r, layerNorm(x, 4, {}, {}, 1e-5), 1e-6);
}

TEST_F(NN, RmsNorm) {
  std::vector<double> x = {3, -4, 1, 2}, w = {2, 0.5};
  RefTensor r = run1(R"(
    func.func @f(%x: tensor<2x2xf32>, %w: tensor<2xf32>) -> tensor<2x2xf32> {
      %0 = llmc.rms_norm %x weight %w {epsilon = 1.0e-06 : f64} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
      return %0 : tensor<2x2xf32>
    })",
                     {f32({2, 2}, x), f32({2}, w)});
  // rms(3, -4) = sqrt(12.5); rms(1, 2) = sqrt(2.5).
  double a = 1 / std::sqrt(12.5 + 1e-6), c = 1 / std::sqrt(2.5 + 1e-6);
  expectNear(r, {3 * a * 2, -4 * a * 0.5, 1 * c * 2, 2 * c * 0.5}, 1e-6);
}

TEST_F(NN, SoftmaxAlongAnyAxis) {
  auto r = run(R"(
    func.func @f(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
      %0 = llmc.softmax %x {axis = 0 : i64} : tensor<2x3xf32>
      %1 = llmc.log_softmax %x : tensor<2x3xf32>
      return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
    })",
               {f32({2, 3}, {1, 2, 3, 1, 0, 1000})});
  ASSERT_EQ(r.size(), 2u) << diagnostics;
  double e1 = 1 / (1 + std::exp(-2.0)); // softmax of (2, 0) along axis 0
  expectNear(r[0], {0.5, e1, 0, 0.5, 1 - e1, 1}, 1e-6);
  double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  // Row (1, 0, 1000): the max subtraction keeps it finite.
  expectNear(r[1], {1 - lse, 2 - lse, 3 - lse, -999, -1000, 0}, 1e-5);
}

TEST_F(NN, SoftmaxOfAllMinusInfRowIsNaN) {
  RefTensor r = run1(R"(
    func.func @f(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
      %0 = llmc.softmax %x : tensor<2x2xf32>
      return %0 : tensor<2x2xf32>
    })",
                     {f32({2, 2}, {-INFINITY, -INFINITY, 0, -INFINITY})});
  expectNear(r, {NAN, NAN, 1, 0}, 0);
}

} // namespace
