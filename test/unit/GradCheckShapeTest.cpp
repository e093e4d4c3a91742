//===- GradCheckShapeTest.cpp - Gradient rules of data movement and matmul
//-===//
//
// reshape, transpose, broadcast_to, strided slice, concat, split with an
// unused piece, gather and gather_elements with repeated indices (the
// scatter-add must sum them), the reductions, and matmul in every transpose
// combination with broadcast batch dims, against central differences.
//
//===----------------------------------------------------------------------===//
#include "GradCheckUtils.h"

using namespace llmc;
using namespace llmc::test;

namespace {

RefTensor i64(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return RefTensor::fromInts(ElementKind::I64, std::move(shape), std::move(v));
}

TEST_F(GradCheck, Reshape) {
  std::string body = "  %y = llmc.reshape %x : tensor<2x6xf64> -> "
                     "tensor<3x4xf64>";
  EXPECT_EQ(
      check(lossOf({param("x", "tensor<2x6xf64>")}, body, "tensor<3x4xf64>")),
      12);
}

TEST_F(GradCheck, Transpose) {
  std::string body = "  %y = llmc.transpose %x [2, 0, 1] : "
                     "(tensor<2x3x4xf64>) -> tensor<4x2x3xf64>";
  EXPECT_EQ(check(lossOf({param("x", "tensor<2x3x4xf64>")}, body,
                         "tensor<4x2x3xf64>")),
            24);
}

TEST_F(GradCheck, BroadcastTo) {
  std::string body = "  %y = llmc.broadcast_to %x : tensor<3x1xf64> -> "
                     "tensor<2x3x4xf64>";
  EXPECT_EQ(
      check(lossOf({param("x", "tensor<3x1xf64>")}, body, "tensor<2x3x4xf64>")),
      3);
}

TEST_F(GradCheck, StridedSlice) {
  std::string body = "  %y = llmc.slice %x starts [1, 0] limits [4, 6] "
                     "strides [2, 3] : (tensor<4x6xf64>) -> tensor<2x2xf64>";
  EXPECT_EQ(
      check(lossOf({param("x", "tensor<4x6xf64>")}, body, "tensor<2x2xf64>")),
      24);
}

TEST_F(GradCheck, ConcatWithARepeatedOperand) {
  std::string body = "  %y = llmc.concat %a, %b, %a axis 1 : "
                     "(tensor<2x3xf64>, tensor<2x2xf64>, tensor<2x3xf64>) -> "
                     "tensor<2x8xf64>";
  EXPECT_EQ(check(lossOf(
                {param("a", "tensor<2x3xf64>"), param("b", "tensor<2x2xf64>")},
                body, "tensor<2x8xf64>")),
            10);
}

TEST_F(GradCheck, SplitWithAnUnusedPiece) {
  std::string body = "  %p:3 = llmc.split %x axis 1 sizes [2, 1, 3] : "
                     "(tensor<2x6xf64>) -> (tensor<2x2xf64>, tensor<2x1xf64>, "
                     "tensor<2x3xf64>)\n"
                     "  %y = llmc.mul %p#2, %p#1 : (tensor<2x3xf64>, "
                     "tensor<2x1xf64>) -> tensor<2x3xf64>";
  EXPECT_EQ(
      check(lossOf({param("x", "tensor<2x6xf64>")}, body, "tensor<2x3xf64>")),
      12);
}

TEST_F(GradCheck, GatherSumsRepeatedIndices) {
  // An embedding lookup where tokens 0 and 4 occur several times.
  std::string body = "  %y = llmc.gather %t, %i axis 0 : (tensor<5x3xf64>, "
                     "tensor<2x3xi64>) -> tensor<2x3x3xf64>";
  EXPECT_EQ(check(lossOf({param("t", "tensor<5x3xf64>"),
                          input("i", "tensor<2x3xi64>")},
                         body, "tensor<2x3x3xf64>"),
                  {{"i", i64({2, 3}, {0, 4, 0, 2, 4, -1})}}),
            15);
}

TEST_F(GradCheck, GatherOnAnInnerAxis) {
  std::string body = "  %y = llmc.gather %d, %i axis 1 : (tensor<2x5x3xf64>, "
                     "tensor<4xi64>) -> tensor<2x4x3xf64>";
  EXPECT_EQ(check(lossOf({param("d", "tensor<2x5x3xf64>"),
                          input("i", "tensor<4xi64>")},
                         body, "tensor<2x4x3xf64>"),
                  {{"i", i64({4}, {3, 1, 3, 0})}}),
            30);
}

TEST_F(GradCheck, GatherElementsSumsRepeatedIndices) {
  std::string body = "  %y = llmc.gather_elements %d, %i axis 1 : "
                     "(tensor<3x5xf64>, tensor<3x2xi64>) -> tensor<3x2xf64>";
  EXPECT_EQ(check(lossOf({param("d", "tensor<3x5xf64>"),
                          input("i", "tensor<3x2xi64>")},
                         body, "tensor<3x2xf64>"),
                  {{"i", i64({3, 2}, {1, 1, 4, 0, 2, 3})}}),
            15);
}

TEST_F(GradCheck, Reductions) {
  std::string body = R"(
  %s = llmc.reduce_sum %x axes [0, 2] keepdims : (tensor<2x3x4xf64>) -> tensor<1x3x1xf64>
  %m = llmc.reduce_mean %x axes [1] keepdims : (tensor<2x3x4xf64>) -> tensor<2x1x4xf64>
  %x2 = llmc.mul %x, %x : (tensor<2x3x4xf64>, tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
  %mx = llmc.reduce_max %x2 axes [0] : (tensor<2x3x4xf64>) -> tensor<3x4xf64>
  %a = llmc.add %s, %m : (tensor<1x3x1xf64>, tensor<2x1x4xf64>) -> tensor<2x3x4xf64>
  %y = llmc.add %a, %mx : (tensor<2x3x4xf64>, tensor<3x4xf64>) -> tensor<2x3x4xf64>)";
  EXPECT_EQ(check(lossOf({param("x", "tensor<2x3x4xf64>")}, body,
                         "tensor<2x3x4xf64>")),
            24);
}

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

struct MatmulCase {
  const char *name, *lhs, *rhs, *attrs, *result;
};

class MatmulGrad : public GradCheck,
                   public ::testing::WithParamInterface<MatmulCase> {};

TEST_P(MatmulGrad, MatchesFiniteDifferences) {
  MatmulCase c = GetParam();
  std::string body = std::string("  %y = llmc.matmul %a, %b ") + c.attrs +
                     " : (" + c.lhs + ", " + c.rhs + ") -> " + c.result;
  EXPECT_GT(
      check(lossOf({param("a", c.lhs), param("b", c.rhs)}, body, c.result)), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Transposes, MatmulGrad,
    ::testing::Values(
        MatmulCase{"plain", "tensor<3x4xf64>", "tensor<4x5xf64>", "",
                   "tensor<3x5xf64>"},
        MatmulCase{"rhsT", "tensor<3x4xf64>", "tensor<5x4xf64>",
                   "{transpose_rhs}", "tensor<3x5xf64>"},
        MatmulCase{"lhsT", "tensor<4x3xf64>", "tensor<4x5xf64>",
                   "{transpose_lhs}", "tensor<3x5xf64>"},
        MatmulCase{"bothT", "tensor<4x3xf64>", "tensor<5x4xf64>",
                   "{transpose_lhs, transpose_rhs}", "tensor<3x5xf64>"},
        // A linear layer: the weight's gradient folds the batch into rows.
        MatmulCase{"linear", "tensor<2x3x4xf64>", "tensor<4x5xf64>", "",
                   "tensor<2x3x5xf64>"},
        MatmulCase{"linearT", "tensor<2x3x4xf64>", "tensor<5x4xf64>",
                   "{transpose_rhs}", "tensor<2x3x5xf64>"},
        // Batch dims [2, 1] and [3] broadcast to [2, 3].
        MatmulCase{"batchBroadcast", "tensor<2x1x3x4xf64>", "tensor<3x4x5xf64>",
                   "", "tensor<2x3x3x5xf64>"},
        MatmulCase{"batchBroadcastT", "tensor<2x1x4x3xf64>",
                   "tensor<3x5x4xf64>", "{transpose_lhs, transpose_rhs}",
                   "tensor<2x3x3x5xf64>"},
        MatmulCase{"weightBatched", "tensor<3x4xf64>", "tensor<2x4x5xf64>", "",
                   "tensor<2x3x5xf64>"}),
    [](const auto &info) { return std::string(info.param.name); });

} // namespace
