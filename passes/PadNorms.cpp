//===- PadNorms.cpp - Norms over a padded hidden dim ----------------------===//
//
// Hidden-size padding (docs/padding.md, "Hidden and intermediate sizes"):
// every layer_norm and rms_norm normalizes over the hidden dim, and over a
// zero-padded row its mean and variance would count the zeros. The pass
// rewrites such a norm as slice -> the norm at the real size -> zero
// padding, so the statistics are over the real columns, the output's
// padding is zero, and the padded weight/bias columns get a zero gradient
// (the slice's gradient puts zeros there), so AdamW with weight decay keeps
// them at zero. The norm computes exactly what it did without padding.
//
// A masked norm kernel (a `count` attribute read by the row kernels and
// their fused forms) would save the two copies of the row; it is not built
// (docs/padding.md, "Not built yet"): hidden padding pays only where it
// fixes the alignment of the GEMMs, and every hidden size the models use
// is a multiple of 8.
//
//===----------------------------------------------------------------------===//
#include "passes/PadShapes.h"

#include "dialects/llmc/LlmcOps.h"

namespace mlir::llmc {

Value padLastDim(OpBuilder &b, Location loc, Value v, int64_t to) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t last = type.getRank() - 1;
  if (type.getDimSize(last) == to)
    return v;
  SmallVector<int64_t> shape(type.getShape());
  shape[last] = to - shape[last];
  auto zerosType = RankedTensorType::get(shape, type.getElementType());
  Value zeros = b.create<ConstantOp>(
      loc, DenseElementsAttr::get(zerosType,
                                  b.getZeroAttr(type.getElementType())));
  return b.create<ConcatOp>(loc, ValueRange{v, zeros},
                            b.getI64IntegerAttr(last));
}

Value sliceLastDim(OpBuilder &b, Location loc, Value v, int64_t real) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getShape().back() == real)
    return v;
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = real;
  SmallVector<int64_t> starts(shape.size(), 0), strides(shape.size(), 1);
  return b.create<SliceOp>(loc, type.clone(shape), v, starts, shape, strides);
}

void maskNormOverPadding(Operation *norm, int64_t real) {
  OpBuilder b(norm);
  Location loc = norm->getLoc();
  Value result = norm->getResult(0);
  auto padded = cast<RankedTensorType>(result.getType());
  auto slice = [&](Value v) {
    return v ? sliceLastDim(b, loc, v, real) : Value();
  };
  Value normed;
  // One statement each: the slices come out in operand order.
  if (auto ln = dyn_cast<LayerNormOp>(norm)) {
    Value x = slice(ln.getInput());
    Value weight = slice(ln.getWeight());
    Value bias = slice(ln.getBias());
    normed = b.create<LayerNormOp>(loc, x.getType(), x, weight, bias,
                                   ln.getAxisAttr(), ln.getEpsilonAttr());
  } else {
    auto rms = cast<RmsNormOp>(norm);
    Value x = slice(rms.getInput());
    Value weight = slice(rms.getWeight());
    normed = b.create<RmsNormOp>(loc, x.getType(), x, weight,
                                 rms.getAxisAttr(), rms.getEpsilonAttr());
  }
  result.replaceAllUsesWith(padLastDim(b, loc, normed, padded.getShape().back()));
  norm->erase();
}

} // namespace mlir::llmc
