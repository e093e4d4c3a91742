//===- LlmcElementwiseVjps.cpp - Gradient rules of elementwise ops --------===//
//
// DifferentiableOpInterface for the unary, binary, where and cast ops. With
// `g` the result's cotangent, `x` the operand and `y` the result, each rule
// is the derivative written next to it. Binary ops and where broadcast, so
// each operand's cotangent is summed back to the operand's shape.
//
// Conventions at non-differentiable points follow PyTorch, so gradients
// match a PyTorch run bit-for-bit in structure:
// - relu'(0) = 0, |x|'(0) = 0 (sign(0) = 0).
// - max/min: when both operands are equal, each receives half of the
//   gradient (torch.maximum/minimum).
// - pow: d/dx is 0 where the exponent is 0; d/dexponent is 0 where the base
//   is 0 and the exponent >= 0 (instead of 0 * log(0) = NaN).
//
//===----------------------------------------------------------------------===//
#include "dialects/llmc/LlmcOps.h"
#include "dialects/llmc/VjpUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::vjp;

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

// Each unary rule is one expression of the builder `b`, the cotangent `g`,
// the operand `x` and the result `y`.
#define LLMC_UNARY_VJP(OP, EXPR)                                               \
  LogicalResult OP::buildVjp(OpBuilder &builder, ValueRange resultGrads,       \
                             ArrayRef<bool>, SmallVectorImpl<Value> &out) {    \
    GradBuilder b(builder, getLoc());                                          \
    Value g = resultGrads[0], x = getInput(), y = getResult();                 \
    (void)x;                                                                   \
    (void)y;                                                                   \
    out[0] = (EXPR);                                                           \
    return success();                                                          \
  }

/// 1 where x > 0, -1 where x < 0, 0 at 0 (and NaN: no gradient).
static Value sign(GradBuilder &b, Value x) {
  Value zero = b.scalarLike(x, 0);
  return b.sub(b.indicator(b.compare(ComparePredicate::gt, x, zero), x),
               b.indicator(b.compare(ComparePredicate::lt, x, zero), x));
}

LLMC_UNARY_VJP(NegOp, b.neg(g))
LLMC_UNARY_VJP(AbsOp, b.mul(g, sign(b, x)))
// exp' = exp
LLMC_UNARY_VJP(ExpOp, b.mul(g, y))
// log' = 1/x
LLMC_UNARY_VJP(LogOp, b.div(g, x))
// sqrt' = 1 / (2 sqrt(x))
LLMC_UNARY_VJP(SqrtOp, b.div(b.scale(g, 0.5), y))
// rsqrt' = -x^(-3/2) / 2 = -y^3 / 2
LLMC_UNARY_VJP(RsqrtOp, b.scale(b.mul(g, b.mul(y, b.mul(y, y))), -0.5))
// (1/x)' = -1/x^2 = -y^2
LLMC_UNARY_VJP(ReciprocalOp, b.neg(b.mul(g, b.mul(y, y))))
// tanh' = 1 - tanh^2
LLMC_UNARY_VJP(TanhOp, b.mul(g, b.sub(b.scalarLike(y, 1), b.mul(y, y))))
// erf' = 2/sqrt(pi) exp(-x^2)
LLMC_UNARY_VJP(ErfOp, b.mul(g, b.scale(b.unary<ExpOp>(b.neg(b.mul(x, x))),
                                       2.0 / std::sqrt(M_PI))))
// sigmoid' = y (1 - y)
LLMC_UNARY_VJP(SigmoidOp, b.mul(g, b.mul(y, b.sub(b.scalarLike(y, 1), y))))
LLMC_UNARY_VJP(ReluOp,
               b.where(b.compare(ComparePredicate::gt, x, b.scalarLike(x, 0)),
                       g, b.scalarLike(g, 0)))
LLMC_UNARY_VJP(CosOp, b.neg(b.mul(g, b.unary<SinOp>(x))))
LLMC_UNARY_VJP(SinOp, b.mul(g, b.unary<CosOp>(x)))
#undef LLMC_UNARY_VJP

//===----------------------------------------------------------------------===//
// Binary ops
//===----------------------------------------------------------------------===//

namespace {
/// Runs a binary rule: `lhsGrad`/`rhsGrad` build the full-shape cotangent
/// of an operand (only called when that operand is wanted); the result is
/// summed back to the operand's shape.
template <typename LhsFn, typename RhsFn>
LogicalResult binaryVjp(Operation *op, OpBuilder &builder,
                        ArrayRef<bool> wanted, SmallVectorImpl<Value> &out,
                        LhsFn lhsGrad, RhsFn rhsGrad) {
  GradBuilder b(builder, op->getLoc());
  if (wanted[0])
    out[0] = b.sumToShape(lhsGrad(b), op->getOperand(0).getType());
  if (wanted[1])
    out[1] = b.sumToShape(rhsGrad(b), op->getOperand(1).getType());
  return success();
}
} // namespace

#define LLMC_BINARY_VJP(OP, LHS, RHS)                                          \
  LogicalResult OP::buildVjp(OpBuilder &builder, ValueRange resultGrads,       \
                             ArrayRef<bool> wanted,                            \
                             SmallVectorImpl<Value> &out) {                    \
    Value g = resultGrads[0], x = getLhs(), y = getRhs(), z = getResult();     \
    (void)x;                                                                   \
    (void)y;                                                                   \
    (void)z;                                                                   \
    return binaryVjp(                                                          \
        *this, builder, wanted, out, [&](GradBuilder &b) { return (LHS); },    \
        [&](GradBuilder &b) { return (RHS); });                                \
  }

// Rules in terms of g, x (lhs), y (rhs) and z (result).
LLMC_BINARY_VJP(AddOp, g, g)
LLMC_BINARY_VJP(SubOp, g, b.neg(g))
LLMC_BINARY_VJP(MulOp, b.mul(g, y), b.mul(g, x))
// d(x/y)/dy = -x/y^2 = -z/y
LLMC_BINARY_VJP(DivOp, b.div(g, y), b.neg(b.div(b.mul(g, z), y)))
#undef LLMC_BINARY_VJP

LogicalResult PowOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                              ArrayRef<bool> wanted,
                              SmallVectorImpl<Value> &out) {
  Value g = resultGrads[0], x = getLhs(), e = getRhs(), z = getResult();
  return binaryVjp(
      *this, builder, wanted, out,
      [&](GradBuilder &b) {
        // d/dx = e x^(e-1), forced to 0 where e == 0.
        Value one = b.scalarLike(e, 1), zero = b.scalarLike(e, 0);
        Value d = b.mul(g, b.mul(e, b.builder().create<PowOp>(b.location(), x,
                                                              b.sub(e, one))));
        return b.where(b.compare(ComparePredicate::eq, e, zero),
                       b.scalarLike(g, 0), d);
      },
      [&](GradBuilder &b) {
        // d/de = x^e log(x), forced to 0 where x == 0 and e >= 0.
        Value zero = b.scalarLike(x, 0), gz = b.scalarLike(g, 0);
        Value d = b.mul(g, b.mul(z, b.unary<LogOp>(x)));
        Value zeroBase = b.compare(ComparePredicate::eq, x, zero);
        Value nonNegExp = b.compare(ComparePredicate::ge, e, zero);
        return b.where(zeroBase, b.where(nonNegExp, gz, d), d);
      });
}

/// Weight of the gradient that reaches `x` in max(x, y) (`pick` = gt) or
/// min(x, y) (`pick` = lt): 1 where x wins, 1/2 on ties, 0 where it loses.
static Value winnerWeight(GradBuilder &b, ComparePredicate pick, Value x,
                          Value y) {
  return b.add(
      b.indicator(b.compare(pick, x, y), x),
      b.scale(b.indicator(b.compare(ComparePredicate::eq, x, y), x), 0.5));
}

LogicalResult MaxOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                              ArrayRef<bool> wanted,
                              SmallVectorImpl<Value> &out) {
  Value g = resultGrads[0], x = getLhs(), y = getRhs();
  auto pick = ComparePredicate::gt;
  return binaryVjp(
      *this, builder, wanted, out,
      [&](GradBuilder &b) { return b.mul(g, winnerWeight(b, pick, x, y)); },
      [&](GradBuilder &b) { return b.mul(g, winnerWeight(b, pick, y, x)); });
}

LogicalResult MinOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                              ArrayRef<bool> wanted,
                              SmallVectorImpl<Value> &out) {
  Value g = resultGrads[0], x = getLhs(), y = getRhs();
  auto pick = ComparePredicate::lt;
  return binaryVjp(
      *this, builder, wanted, out,
      [&](GradBuilder &b) { return b.mul(g, winnerWeight(b, pick, x, y)); },
      [&](GradBuilder &b) { return b.mul(g, winnerWeight(b, pick, y, x)); });
}

//===----------------------------------------------------------------------===//
// WhereOp, CastOp
//===----------------------------------------------------------------------===//

LogicalResult WhereOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                ArrayRef<bool> wanted,
                                SmallVectorImpl<Value> &out) {
  // The condition is i1 and never differentiable; each branch receives the
  // gradient where it was selected.
  GradBuilder b(builder, getLoc());
  Value g = resultGrads[0], zero = b.scalarLike(g, 0), c = getCondition();
  if (wanted[1])
    out[1] = b.sumToShape(b.where(c, g, zero), getOnTrue().getType());
  if (wanted[2])
    out[2] = b.sumToShape(b.where(c, zero, g), getOnFalse().getType());
  return success();
}

LogicalResult CastOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                               ArrayRef<bool> wanted,
                               SmallVectorImpl<Value> &out) {
  // Float to float: the cotangent converts back (a bf16 activation's
  // gradient arrives in bf16 at its f32 source and is widened).
  out[0] =
      builder.create<CastOp>(getLoc(), getInput().getType(), resultGrads[0]);
  return success();
}
