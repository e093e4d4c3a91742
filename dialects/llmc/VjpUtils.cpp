//===- VjpUtils.cpp - Builders shared by the gradient rules ---------------===//
#include "dialects/llmc/VjpUtils.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::vjp;

Value GradBuilder::scalar(Type elementType, double value) {
  return splat(RankedTensorType::get({}, elementType), value);
}

Value GradBuilder::splat(Type type, double value) {
  auto tensor = cast<RankedTensorType>(type);
  Type element = tensor.getElementType();
  Attribute attr;
  if (auto f = dyn_cast<FloatType>(element))
    attr = b.getFloatAttr(f, value);
  else
    attr = b.getIntegerAttr(element, static_cast<int64_t>(value));
  return b.create<ConstantOp>(loc, DenseElementsAttr::get(tensor, attr));
}

Value GradBuilder::indicator(Value cond, Value like) {
  auto c = cast<RankedTensorType>(cond.getType());
  Type target = c.clone(getElementTypeOrSelf(like.getType()));
  return b.create<CastOp>(loc, target, cond);
}

Value GradBuilder::reshape(Value x, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getShape() == shape)
    return x;
  return b.create<ReshapeOp>(loc, type.clone(shape), x);
}

Value GradBuilder::reduceSum(Value x, ArrayRef<int64_t> axes, bool keepdims) {
  if (axes.empty())
    return x;
  return b.create<ReduceSumOp>(loc, x, b.getDenseI64ArrayAttr(axes),
                               keepdims ? b.getUnitAttr() : UnitAttr());
}

Value GradBuilder::sumToShape(Value grad, Type target) {
  if (grad.getType() == target)
    return grad;
  auto g = cast<RankedTensorType>(grad.getType());
  auto t = cast<RankedTensorType>(target);
  int64_t lead = g.getRank() - t.getRank();
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < g.getRank(); ++d)
    if (d < lead || (t.getDimSize(d - lead) == 1 && g.getDimSize(d) != 1))
      axes.push_back(d);
  return reshape(reduceSum(grad, axes, /*keepdims=*/false), t.getShape());
}

Value GradBuilder::sliceLast(Value x, int64_t start, int64_t limit) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  if (start == 0 && limit == type.getShape().back())
    return x;
  SmallVector<int64_t> starts(rank, 0), limits(type.getShape()),
      strides(rank, 1);
  starts.back() = start;
  limits.back() = limit;
  return b.create<SliceOp>(loc, x, b.getDenseI64ArrayAttr(starts),
                           b.getDenseI64ArrayAttr(limits),
                           b.getDenseI64ArrayAttr(strides));
}

Value GradBuilder::concatLast(ValueRange parts) {
  int64_t axis = cast<RankedTensorType>(parts.front().getType()).getRank() - 1;
  return b.create<ConcatOp>(loc, parts, b.getI64IntegerAttr(axis));
}
