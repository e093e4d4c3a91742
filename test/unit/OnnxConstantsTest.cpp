//===- OnnxConstantsTest.cpp - Import-time evaluation of ONNX ops ---------===//
//
// The constant evaluator folds exporters' shape arithmetic, so it must agree
// with ONNX semantics exactly: broadcasting, negative indices, Slice
// clamping with INT64_MAX/INT64_MIN bounds, Range lengths, Trilu diagonals.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxConstants.h"

#include <gtest/gtest.h>

#include <limits>

using namespace llmc::onnximport;

namespace {

TensorData ints(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return TensorData::fromInts(DType::Int64, std::move(shape), v);
}

TEST(EvalBinary, BroadcastsAsNumpy) {
  auto r = evalBinary(BinaryKind::Add, ints({2, 1}, {10, 20}),
                      ints({3}, {1, 2, 3}));
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->shape().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r->toInts(), (std::vector<int64_t>{11, 12, 13, 21, 22, 23}));
}

TEST(EvalBinary, ComparisonsYieldBool) {
  auto r = evalBinary(BinaryKind::LessOrEqual, ints({3}, {1, 2, 3}),
                      ints({}, {2}));
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->dtype(), DType::Bool);
  EXPECT_EQ(r->toInts(), (std::vector<int64_t>{1, 1, 0}));
}

TEST(EvalBinary, IntegerDivisionErrors) {
  auto r = evalBinary(BinaryKind::Div, ints({1}, {4}), ints({1}, {0}));
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(llvm::toString(r.takeError()), "divides an integer by zero");
  auto m = evalBinary(BinaryKind::Mod, ints({2}, {-7, 7}), ints({}, {3}));
  ASSERT_TRUE(static_cast<bool>(m));
  // Mod takes the divisor's sign (Python's %).
  EXPECT_EQ(m->toInts(), (std::vector<int64_t>{2, 1}));
}

TEST(EvalBinary, FloatResultsRoundToF32) {
  auto one = TensorData::fromDoubles(DType::Float, {}, {1.0});
  auto three = TensorData::fromDoubles(DType::Float, {}, {3.0});
  auto r = evalBinary(BinaryKind::Div, one, three);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->getDouble(0), static_cast<double>(1.0f / 3.0f));
}

TEST(EvalGather, NegativeIndicesCountFromTheEnd) {
  auto shape = ints({4}, {2, 4, 16, 64});
  auto r = evalGather(shape, ints({}, {-1}), 0);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->rank(), 0);
  EXPECT_EQ(r->getInt(0), 64);
  auto bad = evalGather(shape, ints({1}, {4}), 0);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "index 4 is out of range for a dim of size 4");
}

TEST(EvalGather, AlongAnInnerAxis) {
  auto data = ints({2, 3}, {0, 1, 2, 3, 4, 5});
  auto r = evalGather(data, ints({2}, {2, 0}), 1);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->toInts(), (std::vector<int64_t>{2, 0, 5, 3}));
}

TEST(EvalGatherElements, PicksOneElementPerIndex) {
  auto data = ints({2, 3}, {0, 1, 2, 3, 4, 5});
  auto r = evalGatherElements(data, ints({2, 2}, {2, 0, -1, 1}), 1);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->toInts(), (std::vector<int64_t>{2, 0, 5, 4}));
  EXPECT_FALSE(static_cast<bool>(
      evalGatherElements(data, ints({1, 1}, {3}), 1)));
}

TEST(SliceBounds, ClampsAsTheSpecSays) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  // x[-1:] of a [4] shape tensor (exporters' "last dim").
  SliceBounds a = sliceBounds(-1, kMax, 1, 4);
  EXPECT_EQ(a.start, 3);
  EXPECT_EQ(a.count, 1);
  // x[:-2] with INT64_MIN as "from the beginning".
  SliceBounds b = sliceBounds(kMin, -2, 1, 4);
  EXPECT_EQ(b.start, 0);
  EXPECT_EQ(b.count, 2);
  // x[::-1]: reversed, all elements.
  SliceBounds c = sliceBounds(-1, kMin, -1, 4);
  EXPECT_EQ(c.start, 3);
  EXPECT_EQ(c.count, 4);
  // Stride 2 from 1: elements 1 and 3.
  SliceBounds d = sliceBounds(1, kMax, 2, 4);
  EXPECT_EQ(d.count, 2);
  // Empty dims and empty windows.
  EXPECT_EQ(sliceBounds(0, 5, 1, 0).count, 0);
  EXPECT_EQ(sliceBounds(3, 1, 1, 4).count, 0);
}

TEST(EvalSlice, ReversesWithNegativeSteps) {
  auto a = ints({4}, {1, 2, 3, 4});
  SliceBounds b = sliceBounds(-1, std::numeric_limits<int64_t>::min(), -2, 4);
  auto r = evalSlice(a, {b.start}, {b.step}, {b.count});
  EXPECT_EQ(r.toInts(), (std::vector<int64_t>{4, 2}));
}

TEST(EvalConcat, JoinsAlongAnAxis) {
  auto a = ints({2, 1}, {1, 2}), b = ints({2, 2}, {3, 4, 5, 6});
  auto r = evalConcat({&a, &b}, 1);
  EXPECT_EQ(r.shape().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r.toInts(), (std::vector<int64_t>{1, 3, 4, 2, 5, 6}));
}

TEST(EvalRange, LengthIsCeilOfTheSpan) {
  auto r = evalRange(ints({}, {0}), ints({}, {5}), ints({}, {2}));
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->toInts(), (std::vector<int64_t>{0, 2, 4}));
  auto down = evalRange(ints({}, {3}), ints({}, {0}), ints({}, {-1}));
  ASSERT_TRUE(static_cast<bool>(down));
  EXPECT_EQ(down->toInts(), (std::vector<int64_t>{3, 2, 1}));
  auto empty = evalRange(ints({}, {3}), ints({}, {0}), ints({}, {1}));
  ASSERT_TRUE(static_cast<bool>(empty));
  EXPECT_EQ(empty->numElements(), 0);
  EXPECT_FALSE(static_cast<bool>(
      evalRange(ints({}, {0}), ints({}, {5}), ints({}, {0}))));
}

TEST(EvalTrilu, LowerAndUpperWithOffsets) {
  auto ones = ints({3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  EXPECT_EQ(evalTrilu(ones, 0, false).toInts(),
            (std::vector<int64_t>{1, 0, 0, 1, 1, 0, 1, 1, 1}));
  EXPECT_EQ(evalTrilu(ones, 1, true).toInts(),
            (std::vector<int64_t>{0, 1, 1, 0, 0, 1, 0, 0, 0}));
}

TEST(EvalWhere, BroadcastsAllThree) {
  auto cond = TensorData::fromInts(DType::Bool, {2, 1}, {1, 0});
  auto x = TensorData::fromDoubles(DType::Float, {}, {0.0});
  auto y = TensorData::fromDoubles(DType::Float, {3}, {-1, -2, -3});
  auto r = evalWhere(cond, x, y);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->shape().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r->getDouble(0), 0.0);
  EXPECT_EQ(r->getDouble(5), -3.0);
}

TEST(EvalReduce, KeepsOrDropsDims) {
  auto a = TensorData::fromDoubles(DType::Float, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto sum = evalReduce(ReduceKind::Sum, a, {1}, false);
  EXPECT_EQ(sum.shape().vec(), (std::vector<int64_t>{2}));
  EXPECT_EQ(sum.getDouble(1), 15.0);
  auto mean = evalReduce(ReduceKind::Mean, a, {0, 1}, true);
  EXPECT_EQ(mean.shape().vec(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(mean.getDouble(0), 3.5);
  auto max = evalReduce(ReduceKind::Max, a, {0}, false);
  EXPECT_EQ(max.getDouble(2), 6.0);
}

TEST(EvalTranspose, PermutesDims) {
  auto a = ints({2, 3}, {0, 1, 2, 3, 4, 5});
  auto r = evalTranspose(a, {1, 0});
  EXPECT_EQ(r.shape().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(r.toInts(), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
}

} // namespace
