//===- RaiseUtils.h - Matching helpers of the raising passes ------*- C++ -*-===//
//
// The raising passes recognize the decomposed forms that exporters emit for
// composite ops. Exporters vary the operand order of commutative ops, write
// constants as splats of any rank or as small constant subgraphs, and
// associate products differently, so the matchers share these helpers:
// scalar and dense constant evaluation (in f64, as the reference evaluator
// computes), flattening of product trees into a coefficient times factors,
// and single-use checks that keep a pattern from duplicating work that
// another user still needs.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_RAISEUTILS_H
#define LLMC_PASSES_RAISEUTILS_H

#include "dialects/llmc/LlmcOps.h"

#include "mlir/IR/PatternMatch.h"

#include <optional>
#include <vector>

namespace mlir::llmc::raise {

/// Relative tolerance for the constants of a decomposed formula (0.044715,
/// sqrt(2/pi), 0.5, ...): exporters write them in f32 or recompute them.
constexpr double kConstantTolerance = 1e-6;

/// A value at or below this counts as -inf in an additive mask: exp() of it
/// is exactly 0 in f32 and f64 for any finite score (finfo.min masks).
constexpr double kMaskedScore = -1e30;

/// The single value of `v` when it is a constant subgraph whose elements are
/// all equal (a splat of any shape, a one-element tensor, or scalar
/// arithmetic of such constants, through cast/reshape/broadcast_to).
std::optional<double> getScalarConstant(Value v);

/// True when `v` is a scalar constant within kConstantTolerance of `expected`
/// (relative; absolute for expected == 0).
bool isScalarConstant(Value v, double expected);

/// True when `a` is within kConstantTolerance of `b` (relative).
bool nearlyEqual(double a, double b);

/// A constant tensor evaluated in f64 (booleans are 0/1), row-major.
struct ConstTensor {
  SmallVector<int64_t> shape;
  std::vector<double> values;
};

/// Evaluates `v` when it depends on constants only (constant, iota, cast,
/// reshape, broadcast_to, transpose, compare, where, elementwise arithmetic)
/// and has at most `maxElements` elements; std::nullopt otherwise.
std::optional<ConstTensor> evalConstant(Value v,
                                        int64_t maxElements = 1 << 22);

/// `v` written as coefficient * factors[0] * factors[1] * ...: flattens mul,
/// neg and division by constants through ops whose result has a single use
/// (the root itself may have several). `ops` lists the flattened ops.
struct Product {
  double coefficient = 1.0;
  SmallVector<Value> factors;
  SmallVector<Operation *> ops;
};
Product collectProduct(Value root);

/// Replaces every factor `pow(x, n)` (n a small positive integer constant,
/// single use) by n copies of x.
void expandPowers(Product &product);

/// True when the value has exactly one use (one operand slot).
bool hasOneUse(Value v);

/// True when every use of `v` is by one of `users`.
bool onlyUsedBy(Value v, ArrayRef<Operation *> users);

/// For a binary op, the operand that is not `known`, or null when `known`
/// is neither operand.
Value otherOperand(Operation *binary, Value known);

/// The reduction axes of a reduce op when they are exactly the trailing dims
/// `first ..< rank` of the input, as `first`; std::nullopt otherwise.
template <typename ReduceOp> std::optional<int64_t> trailingAxes(ReduceOp op) {
  auto axes = op.getAxes();
  int64_t rank = op.getInput().getType().getRank();
  if (axes.empty())
    return std::nullopt;
  SmallVector<int64_t> sorted(axes.begin(), axes.end());
  llvm::sort(sorted);
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != rank - static_cast<int64_t>(sorted.size() - i))
      return std::nullopt;
  return sorted.front();
}

/// True when `w` has exactly the shape of dims `axis ..< rank` of `x` (axis
/// may be -1) and x's element type: a norm's weight or bias.
bool isNormParam(Value w, Value x, int64_t axis);

/// The axis attribute of a norm/softmax over dims `first ..< rank`: -1 for
/// the last dim (as ONNX and PyTorch write it), else `first`.
int64_t normAxisAttr(int64_t first, int64_t rank);

/// `value` rounded to the shortest decimal that still reads back as the same
/// number of `type` (an f32 epsilon of 1e-5 becomes 1.0e-05, not
/// 9.99999974e-06).
double shortestDecimal(double value, Type type);

/// The element type of a tensor value.
Type elementTypeOf(Value v);

} // namespace mlir::llmc::raise

#endif // LLMC_PASSES_RAISEUTILS_H
