//===- LlmcShapeVjps.cpp - Gradient rules of data-movement ops ------------===//
//
// DifferentiableOpInterface for reshape, transpose, broadcast_to, slice,
// concat, split, gather, gather_elements and the reductions. Data movement
// is linear, so each rule is the adjoint movement: reshape back, transpose
// by the inverse permutation, sum a broadcast, place a slice into zeros,
// slice a concatenation, concatenate splits, scatter-add a gather.
//
// reduce_max sends the gradient to the positions that attain the maximum;
// when several positions tie, they share it equally (torch.amax's rule; a
// kernel that picks one argmax would differ only on exact ties).
//
//===----------------------------------------------------------------------===//
#include "dialects/llmc/LlmcOps.h"
#include "dialects/llmc/VjpUtils.h"

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::vjp;

LogicalResult ReshapeOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                  ArrayRef<bool>, SmallVectorImpl<Value> &out) {
  out[0] =
      builder.create<ReshapeOp>(getLoc(), getInput().getType(), resultGrads[0]);
  return success();
}

LogicalResult TransposeOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                    ArrayRef<bool>,
                                    SmallVectorImpl<Value> &out) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = static_cast<int64_t>(i);
  out[0] = builder.create<TransposeOp>(getLoc(), resultGrads[0],
                                       builder.getDenseI64ArrayAttr(inverse));
  return success();
}

LogicalResult BroadcastToOp::buildVjp(OpBuilder &builder,
                                      ValueRange resultGrads, ArrayRef<bool>,
                                      SmallVectorImpl<Value> &out) {
  GradBuilder b(builder, getLoc());
  out[0] = b.sumToShape(resultGrads[0], getInput().getType());
  return success();
}

LogicalResult SliceOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                ArrayRef<bool>, SmallVectorImpl<Value> &out) {
  out[0] = builder.create<SliceGradOp>(getLoc(), getInput().getType(),
                                       resultGrads[0], getStartsAttr(),
                                       getLimitsAttr(), getStridesAttr());
  return success();
}

LogicalResult ConcatOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                 ArrayRef<bool> wanted,
                                 SmallVectorImpl<Value> &out) {
  // Operand i's cotangent is the slab [offset_i, offset_i + size_i) of g
  // along the axis; slices (not one split) so that unwanted slabs cost
  // nothing.
  Value g = resultGrads[0];
  auto type = cast<RankedTensorType>(g.getType());
  int64_t axis = getAxis(), offset = 0, rank = type.getRank();
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    int64_t size = cast<RankedTensorType>(input.getType()).getDimSize(axis);
    if (wanted[i]) {
      SmallVector<int64_t> starts(rank, 0), limits(type.getShape()),
          strides(rank, 1);
      starts[axis] = offset;
      limits[axis] = offset + size;
      out[i] = builder.create<SliceOp>(getLoc(), g,
                                       builder.getDenseI64ArrayAttr(starts),
                                       builder.getDenseI64ArrayAttr(limits),
                                       builder.getDenseI64ArrayAttr(strides));
    }
    offset += size;
  }
  return success();
}

LogicalResult SplitOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                ArrayRef<bool>, SmallVectorImpl<Value> &out) {
  // Pieces without a cotangent arrive as zeros from autodiff.
  out[0] = builder.create<ConcatOp>(getLoc(), resultGrads, getAxisAttr());
  return success();
}

LogicalResult GatherOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                 ArrayRef<bool> wanted,
                                 SmallVectorImpl<Value> &out) {
  // Only the data is differentiable; indices are integers.
  out[0] = builder.create<GatherGradOp>(getLoc(), getData().getType(),
                                        resultGrads[0], getIndices(),
                                        getAxisAttr(), getBoundAttr());
  return success();
}

LogicalResult GatherElementsOp::buildVjp(OpBuilder &builder,
                                         ValueRange resultGrads,
                                         ArrayRef<bool> wanted,
                                         SmallVectorImpl<Value> &out) {
  out[0] = builder.create<GatherElementsGradOp>(getLoc(), getData().getType(),
                                                resultGrads[0], getIndices(),
                                                getAxisAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// The cotangent of a reduction with its reduced dims restored as size 1,
/// so that it broadcasts against the operand.
template <typename OpTy>
static Value keptGrad(GradBuilder &b, OpTy op, Value grad) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  SmallVector<int64_t> shape(in.getShape());
  for (int64_t axis : op.getAxes())
    shape[axis] = 1;
  return b.reshape(grad, shape);
}

LogicalResult ReduceSumOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                    ArrayRef<bool>,
                                    SmallVectorImpl<Value> &out) {
  GradBuilder b(builder, getLoc());
  out[0] = builder.create<BroadcastToOp>(getLoc(), getInput().getType(),
                                         keptGrad(b, *this, resultGrads[0]));
  return success();
}

LogicalResult ReduceMeanOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                     ArrayRef<bool>,
                                     SmallVectorImpl<Value> &out) {
  GradBuilder b(builder, getLoc());
  auto in = cast<RankedTensorType>(getInput().getType());
  int64_t count = 1;
  for (int64_t axis : getAxes())
    count *= in.getDimSize(axis);
  Value kept = b.scale(keptGrad(b, *this, resultGrads[0]),
                       1.0 / static_cast<double>(count));
  out[0] = builder.create<BroadcastToOp>(getLoc(), in, kept);
  return success();
}

LogicalResult ReduceMaxOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                    ArrayRef<bool>,
                                    SmallVectorImpl<Value> &out) {
  // dx = [x == max] * g / count(x == max) along the reduced dims.
  GradBuilder b(builder, getLoc());
  Value x = getInput();
  Value max = keptGrad(b, *this, getResult());
  Value hit = b.indicator(b.compare(ComparePredicate::eq, x, max), x);
  Value count = b.reduceSum(hit, getAxes(), /*keepdims=*/true);
  out[0] = b.mul(hit, b.div(keptGrad(b, *this, resultGrads[0]), count));
  return success();
}
