//===- VjpUtils.h - Builders shared by the gradient rules -------*- C++ -*-===//
//
// Small builders for the vector-Jacobian products of Llmc*Vjps.cpp: typed
// constants, elementwise arithmetic and the "sum a broadcast cotangent back to
// its operand's shape" step that every broadcasting op needs. Rules call
// these at the builder's insertion point; every created op gets `loc`, the
// forward op's location, so backward ops point back to the source node.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_LLMC_VJPUTILS_H
#define LLMC_DIALECTS_LLMC_VJPUTILS_H

#include "dialects/llmc/LlmcOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::llmc::vjp {

/// Builds ops at one location: the forward op's.
class GradBuilder {
public:
  GradBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  /// A rank-0 constant of `elementType` (it broadcasts against anything).
  Value scalar(Type elementType, double value);
  /// A rank-0 constant of `like`'s element type.
  Value scalarLike(Value like, double value) {
    return scalar(getElementTypeOrSelf(like.getType()), value);
  }
  /// A constant of `type` filled with `value`.
  Value splat(Type type, double value);

  Value add(Value x, Value y) { return b.create<AddOp>(loc, x, y); }
  Value sub(Value x, Value y) { return b.create<SubOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.create<MulOp>(loc, x, y); }
  Value div(Value x, Value y) { return b.create<DivOp>(loc, x, y); }
  Value neg(Value x) { return b.create<NegOp>(loc, x); }
  /// A unary op whose result has the operand's type (exp, sin, ...).
  template <typename OpTy> Value unary(Value x) {
    return b.create<OpTy>(loc, x);
  }
  /// The slice [start, limit) of the last dim.
  Value sliceLast(Value x, int64_t start, int64_t limit);
  /// Concatenation along the last dim.
  Value concatLast(ValueRange parts);
  /// x * c for a constant c.
  Value scale(Value x, double c) { return mul(x, scalarLike(x, c)); }
  Value compare(ComparePredicate p, Value x, Value y) {
    return b.create<CompareOp>(loc, p, x, y);
  }
  /// `cond` as 0/1 of `like`'s element type.
  Value indicator(Value cond, Value like);
  Value where(Value c, Value t, Value f) {
    return b.create<WhereOp>(loc, c, t, f);
  }
  Value reshape(Value x, ArrayRef<int64_t> shape);
  Value reduceSum(Value x, ArrayRef<int64_t> axes, bool keepdims);

  /// Sums `grad` over the dims that numpy broadcasting added or stretched
  /// to get from `target`'s shape to grad's, and reshapes it to `target`.
  /// Returns grad itself when the types already agree.
  Value sumToShape(Value grad, Type target);

  OpBuilder &builder() { return b; }
  Location location() const { return loc; }

private:
  OpBuilder &b;
  Location loc;
};

} // namespace mlir::llmc::vjp

#endif // LLMC_DIALECTS_LLMC_VJPUTILS_H
