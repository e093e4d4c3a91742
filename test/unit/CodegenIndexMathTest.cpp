//===- CodegenIndexMathTest.cpp - Index arithmetic of emitted kernels -----===//
//
// collapseDims must keep every tensor's offset of every linear index; the
// emitted coordinate and offset expressions must compute those offsets. The
// expressions are checked by evaluating them here with a tiny interpreter of
// the forms emitCoordinates/offsetExpression produce.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/IndexMath.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

using namespace llmc::codegen;

namespace {

/// Offset of linear index `i` for `strides` over `shape` (the definition).
int64_t offsetOf(const Shape &shape, const Strides &strides, int64_t i) {
  int64_t off = 0;
  for (size_t d = shape.size(); d-- > 0;) {
    off += (i % shape[d]) * strides[d];
    i /= shape[d];
  }
  return off;
}

TEST(CodegenIndexMath, BroadcastStridesAlignRight) {
  EXPECT_EQ(broadcastStrides({64}, {2, 16, 64}), (Strides{0, 0, 1}));
  EXPECT_EQ(broadcastStrides({16, 1}, {2, 16, 64}), (Strides{0, 1, 0}));
  EXPECT_EQ(broadcastStrides({}, {3, 4}), (Strides{0, 0}));
  EXPECT_EQ(broadcastStrides({2, 3, 4}, {2, 3, 4}), (Strides{12, 4, 1}));
}

TEST(CodegenIndexMath, CollapseMergesWhatEveryTensorAllows) {
  // A bias add: the same-shape operand would merge everything, the bias
  // keeps the last dim apart.
  IndexSpace s = collapseDims(
      {{2, 16, 64},
       {rowMajorStrides({2, 16, 64}), broadcastStrides({64}, {2, 16, 64})}});
  EXPECT_EQ(s.shape, (Shape{32, 64}));
  EXPECT_EQ(s.strides[0], (Strides{64, 1}));
  EXPECT_EQ(s.strides[1], (Strides{0, 1}));
  // Size-1 dims vanish; a scalar space has no dims at all.
  EXPECT_EQ(collapseDims({{1, 5, 1}, {{5, 1, 1}}}).shape, (Shape{5}));
  EXPECT_TRUE(collapseDims({{1, 1}, {{0, 0}}}).shape.empty());
}

TEST(CodegenIndexMath, CollapseKeepsEveryOffset) {
  Shape shape = {3, 1, 4, 5, 2};
  std::vector<Strides> tensors = {rowMajorStrides(shape),
                                  broadcastStrides({4, 1, 2}, shape),
                                  {7, 0, 70, 280, 1400}}; // a permutation
  IndexSpace c = collapseDims({shape, tensors});
  for (int64_t i = 0; i < numElements(shape); ++i)
    for (size_t t = 0; t < tensors.size(); ++t)
      EXPECT_EQ(offsetOf(c.shape, c.strides[t], i),
                offsetOf(shape, tensors[t], i))
          << "tensor " << t << " index " << i;
}

/// Evaluates the statements of emitCoordinates and an offsetExpression for
/// a linear index: "const index_t x_cD = (x / M) % N;" lines and
/// "x_c0 * S + x_c1 + ..." sums.
int64_t evaluate(const std::string &coords, const std::string &expr,
                 int64_t linear) {
  std::map<std::string, int64_t> vars;
  std::istringstream lines(coords);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::string kw, type, name, eq;
    in >> kw >> type >> name >> eq;
    std::string rest;
    std::getline(in, rest);
    int64_t v = linear, div = 1, mod = 0;
    size_t slash = rest.find(" / ");
    if (slash != std::string::npos)
      div = std::stoll(rest.substr(slash + 3));
    size_t pct = rest.find(" % ");
    if (pct != std::string::npos)
      mod = std::stoll(rest.substr(pct + 3));
    v /= div;
    if (mod)
      v %= mod;
    vars[name] = v;
  }
  if (expr == "0")
    return 0;
  int64_t total = 0;
  std::istringstream terms(expr);
  std::string term;
  while (std::getline(terms, term, '+')) {
    std::istringstream t(term);
    std::string var, star;
    int64_t scale = 1;
    t >> var >> star >> scale;
    total += (vars.count(var) ? vars[var] : linear) * (star == "*" ? scale : 1);
  }
  return total;
}

TEST(CodegenIndexMath, EmittedExpressionsComputeTheOffsets) {
  Shape shape = {3, 4, 5};
  std::vector<Strides> tensors = {
      rowMajorStrides(shape), {0, 1, 0}, {1, 15, 3}, {0, 0, 0}};
  std::string coords =
      emitCoordinates("i", "i", shape, neededCoordinates(shape, tensors), "");
  for (const Strides &s : tensors) {
    std::string expr = offsetExpression("i", "i", shape, s);
    for (int64_t i = 0; i < numElements(shape); ++i)
      EXPECT_EQ(evaluate(coords, expr, i), offsetOf(shape, s, i))
          << expr << " at " << i;
  }
  // A contiguous tensor is addressed by the linear index itself.
  EXPECT_EQ(offsetExpression("i", "i", shape, rowMajorStrides(shape)), "i");
  EXPECT_EQ(offsetExpression("i", "i", shape, {0, 0, 0}), "0");
}

TEST(CodegenIndexMath, CoordinatesOnlyWhereNeeded) {
  Shape shape = {32, 64};
  std::vector<Strides> tensors = {rowMajorStrides(shape), {0, 1}};
  std::vector<bool> needed = neededCoordinates(shape, tensors);
  EXPECT_EQ(needed, (std::vector<bool>{false, true}));
  EXPECT_EQ(emitCoordinates("i", "i", shape, needed, "  "),
            "  const index_t i_c1 = i % 64;\n");
}

} // namespace
