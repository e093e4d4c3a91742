//===- EvalShapeTest.cpp - Evaluator: data movement and reductions --------===//
#include "EvalTestUtils.h"

#include <cmath>

using namespace llmc;
using namespace llmc::test;

namespace {

using Shape = EvalTest;

std::vector<double> iotaValues(int n) {
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = i;
  return v;
}

TEST_F(Shape, ConstantAndIota) {
  auto r = run(R"(
    func.func @f() -> (tensor<2x2xf32>, tensor<3xi64>, tensor<2x3xf32>, tensor<2x3xi64>) {
      %0 = llmc.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
      %1 = llmc.constant dense<7> : tensor<3xi64>
      %2 = llmc.iota dim 1 {start = 0.5, step = 2.0} : tensor<2x3xf32>
      %3 = llmc.iota dim 0 : tensor<2x3xi64>
      return %0, %1, %2, %3 : tensor<2x2xf32>, tensor<3xi64>, tensor<2x3xf32>, tensor<2x3xi64>
    })",
               {});
  ASSERT_EQ(r.size(), 4u) << diagnostics;
  expectNear(r[0], {1, 2, 3, 4}, 0);
  EXPECT_EQ(r[1].ints, (std::vector<int64_t>{7, 7, 7}));
  expectNear(r[2], {0.5, 2.5, 4.5, 0.5, 2.5, 4.5}, 0);
  EXPECT_EQ(r[3].ints, (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
}

TEST_F(Shape, TransposeMatchesNaiveLoops) {
  // y[a][b][c] = x[b][c][a] for permutation [2, 0, 1] of x: [2, 3, 4].
  RefTensor r = run1(R"(
    func.func @f(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
      %0 = llmc.transpose %x [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
      return %0 : tensor<4x2x3xf32>
    })",
                     {f32({2, 3, 4}, iotaValues(24))});
  std::vector<double> want;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c)
        want.push_back(b * 12 + c * 4 + a);
  expectNear(r, want, 0);
}

TEST_F(Shape, ReshapeAndBroadcastTo) {
  auto r = run(R"(
    func.func @f(%x: tensor<3x1xi64>) -> (tensor<1x3xi64>, tensor<2x3x4xi64>) {
      %0 = llmc.reshape %x : tensor<3x1xi64> -> tensor<1x3xi64>
      %1 = llmc.broadcast_to %x : tensor<3x1xi64> -> tensor<2x3x4xi64>
      return %0, %1 : tensor<1x3xi64>, tensor<2x3x4xi64>
    })",
               {i64({3, 1}, {5, 6, 7})});
  ASSERT_EQ(r.size(), 2u) << diagnostics;
  EXPECT_EQ(r[0].ints, (std::vector<int64_t>{5, 6, 7}));
  std::vector<int64_t> want;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c)
        want.push_back(5 + b);
  EXPECT_EQ(r[1].ints, want);
}

TEST_F(Shape, StridedSlice) {
  // x[1:3, 0:5:2] of a 3x5 iota.
  RefTensor r = run1(R"(
    func.func @f(%x: tensor<3x5xf32>) -> tensor<2x3xf32> {
      %0 = llmc.slice %x starts [1, 0] limits [3, 5] strides [1, 2] : (tensor<3x5xf32>) -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    })",
                     {f32({3, 5}, iotaValues(15))});
  expectNear(r, {5, 7, 9, 10, 12, 14}, 0);
}

TEST_F(Shape, ConcatAndSplitAreInverse) {
  auto r = run(R"(
    func.func @f(%a: tensor<2x1xf32>, %b: tensor<2x2xf32>) -> (tensor<2x3xf32>, tensor<2x2xf32>, tensor<2x1xf32>) {
      %0 = llmc.concat %a, %b axis 1 : (tensor<2x1xf32>, tensor<2x2xf32>) -> tensor<2x3xf32>
      %1, %2 = llmc.split %0 axis 1 sizes [2, 1] : (tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x1xf32>)
      return %0, %1, %2 : tensor<2x3xf32>, tensor<2x2xf32>, tensor<2x1xf32>
    })",
               {f32({2, 1}, {1, 2}), f32({2, 2}, {3, 4, 5, 6})});
  ASSERT_EQ(r.size(), 3u) << diagnostics;
  expectNear(r[0], {1, 3, 4, 2, 5, 6}, 0);
  expectNear(r[1], {1, 3, 2, 5}, 0);
  expectNear(r[2], {4, 6}, 0);
}

TEST_F(Shape, GatherIsAnEmbeddingLookup) {
  // wte: [4, 2] with row r = (10 r, 10 r + 1); idx [2, 2] (one negative).
  auto r = run(R"(
    func.func @f(%w: tensor<4x2xf32>, %i: tensor<2x2xi64>) -> (tensor<2x2x2xf32>, tensor<4x2x2xf32>) {
      %0 = llmc.gather %w, %i axis 0 : (tensor<4x2xf32>, tensor<2x2xi64>) -> tensor<2x2x2xf32>
      %c = llmc.constant dense<[[1, 0], [1, 1]]> : tensor<2x2xi64>
      %1 = llmc.gather %w, %c axis 1 : (tensor<4x2xf32>, tensor<2x2xi64>) -> tensor<4x2x2xf32>
      return %0, %1 : tensor<2x2x2xf32>, tensor<4x2x2xf32>
    })",
               {f32({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31}),
                i64({2, 2}, {3, 0, -1, 2})});
  ASSERT_EQ(r.size(), 2u) << diagnostics;
  expectNear(r[0], {30, 31, 0, 1, 30, 31, 20, 21}, 0);
  std::vector<double> want;
  for (int row = 0; row < 4; ++row)
    for (int col : {1, 0, 1, 1})
      want.push_back(10 * row + col);
  expectNear(r[1], want, 0);
}

TEST_F(Shape, GatherOutOfRangeNamesTheIndex) {
  auto r = run(R"(
    func.func @f(%w: tensor<4x2xf32>, %i: tensor<2xi64>) -> tensor<2x2xf32> {
      %0 = llmc.gather %w, %i axis 0 : (tensor<4x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
      return %0 : tensor<2x2xf32>
    })",
               {f32({4, 2}, iotaValues(8)), i64({2}, {1, 4})});
  EXPECT_TRUE(r.empty());
  EXPECT_NE(diagnostics.find("index 4 (indices element 1) is out of range for "
                             "size 4"),
            std::string::npos)
      << diagnostics;
}

TEST_F(Shape, GatherElementsPicksTargets) {
  // r[i][j] = x[i][t[i][j]] (axis 1).
  RefTensor r = run1(R"(
    func.func @f(%x: tensor<3x4xf32>, %t: tensor<3x1xi64>) -> tensor<3x1xf32> {
      %0 = llmc.gather_elements %x, %t axis 1 : (tensor<3x4xf32>, tensor<3x1xi64>) -> tensor<3x1xf32>
      return %0 : tensor<3x1xf32>
    })",
                     {f32({3, 4}, iotaValues(12)), i64({3, 1}, {2, 0, 3})});
  expectNear(r, {2, 4, 11}, 0);
}

TEST_F(Shape, Reductions) {
  auto r = run(
      R"(
    func.func @f(%x: tensor<2x3xf32>, %n: tensor<2x3xi64>) -> (tensor<2x1xf32>, tensor<3xf32>, tensor<2xi64>, tensor<f32>, tensor<2xi64>) {
      %0 = llmc.reduce_sum %x axes [1] keepdims : (tensor<2x3xf32>) -> tensor<2x1xf32>
      %1 = llmc.reduce_mean %x axes [0] : (tensor<2x3xf32>) -> tensor<3xf32>
      %2 = llmc.reduce_max %n axes [1] : (tensor<2x3xi64>) -> tensor<2xi64>
      %3 = llmc.reduce_max %x axes [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
      %4 = llmc.reduce_mean %n axes [1] : (tensor<2x3xi64>) -> tensor<2xi64>
      return %0, %1, %2, %3, %4 : tensor<2x1xf32>, tensor<3xf32>, tensor<2xi64>, tensor<f32>, tensor<2xi64>
    })",
      {f32({2, 3}, {1, 2, 3, 4, 5, -6}), i64({2, 3}, {-5, -2, -9, 4, 8, 1})});
  ASSERT_EQ(r.size(), 5u) << diagnostics;
  EXPECT_EQ(r[0].shape, (std::vector<int64_t>{2, 1}));
  expectNear(r[0], {6, 3}, 0);
  expectNear(r[1], {2.5, 3.5, -1.5}, 0);
  EXPECT_EQ(r[2].ints, (std::vector<int64_t>{-2, 8}));
  expectNear(r[3], {5}, 0);
  EXPECT_EQ(r[4].ints, (std::vector<int64_t>{-5, 4})); // -16/3, 13/3 truncated
}

TEST_F(Shape, ReduceMaxPropagatesNaN) {
  RefTensor r = run1(R"(
    func.func @f(%x: tensor<2x2xf32>) -> tensor<2xf32> {
      %0 = llmc.reduce_max %x axes [1] : (tensor<2x2xf32>) -> tensor<2xf32>
      return %0 : tensor<2xf32>
    })",
                     {f32({2, 2}, {1, NAN, NAN, 2})});
  expectNear(r, {NAN, NAN}, 0);
}

} // namespace
