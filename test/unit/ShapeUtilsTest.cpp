//===- ShapeUtilsTest.cpp - numpy broadcasting and axis helpers -----------===//
#include "dialects/llmc/ShapeUtils.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"

#include <gtest/gtest.h>

using namespace mlir::llmc;
using llvm::SmallVector;

static constexpr int64_t kDyn = mlir::ShapedType::kDynamic;

TEST(BroadcastShapes, AlignsAtTheRight) {
  auto r = broadcastShapes({4, 1, 8}, {3, 1});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, (SmallVector<int64_t>{4, 3, 8}));
}

TEST(BroadcastShapes, ScalarBroadcastsToAnything) {
  auto r = broadcastShapes({}, {2, 5});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, (SmallVector<int64_t>{2, 5}));
}

TEST(BroadcastShapes, RejectsIncompatibleDims) {
  EXPECT_FALSE(broadcastShapes({4, 3}, {4, 2}).has_value());
  EXPECT_FALSE(broadcastShapes({2, 3}, {3, 3, 2}).has_value());
}

TEST(BroadcastShapes, DynamicDims) {
  // ? against 1 stays ?, ? against n becomes n, ? against ? stays ?.
  auto r = broadcastShapes({kDyn, kDyn, kDyn}, {1, 7, kDyn});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, (SmallVector<int64_t>{kDyn, 7, kDyn}));
}

TEST(IsBroadcastableTo, FollowsNumpy) {
  EXPECT_TRUE(isBroadcastableTo({1, 8}, {4, 8}));
  EXPECT_TRUE(isBroadcastableTo({8}, {2, 4, 8}));
  EXPECT_FALSE(isBroadcastableTo({4, 8}, {8}));
  EXPECT_FALSE(isBroadcastableTo({3, 8}, {4, 8}));
}

TEST(ShapeToString, PrintsDynamicAsQuestionMark) {
  EXPECT_EQ(shapeToString({2, kDyn, 768}), "[2, ?, 768]");
  EXPECT_EQ(shapeToString({}), "[]");
}

TEST(StaticElementCount, CountsOrGivesUp) {
  EXPECT_EQ(staticElementCount({2, 3, 4}), 24);
  EXPECT_EQ(staticElementCount({}), 1);
  EXPECT_FALSE(staticElementCount({2, kDyn}).has_value());
}

TEST(NormalizeAxis, HandlesNegativeAndOutOfRange) {
  EXPECT_EQ(normalizeAxis(-1, 3), 2);
  EXPECT_EQ(normalizeAxis(0, 3), 0);
  EXPECT_FALSE(normalizeAxis(3, 3).has_value());
  EXPECT_FALSE(normalizeAxis(-4, 3).has_value());
}
