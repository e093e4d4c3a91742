//===- FoldPositionGathers.cpp - Position embeddings without a scatter ----===//
//
// A learned position embedding gathers rows 0, 1, ..., T-1 of its table for
// every sequence of the batch (HF GPT-2 exports `arange(T)` as a constant).
// The gather is then a window of the table's first T rows, and its gradient
// is the incoming gradient summed over the batch, placed into rows
// [0, T) of zeros: no sort, no buckets, no scatter. The general scatter
// (ScatterEmitters.cpp) spends six launches on it; the sum is one (or none
// when autodiff already summed the broadcast over the batch), and the
// summation order (over the batch, in order) is the scatter's own order,
// since a row's bucket holds the positions of the batch in increasing order.
//
//   gather(data, idx) axis 0      => broadcast_to(reshape(slice(data, [0, T))))
//   gather_grad(g, idx) axis 0    => slice_grad(reduce_sum(g, batch axes))
//     where idx (shape [..., T]) is i mod T at flat position i, and
//     T <= the table's rows (and its `bound`)
//
// The reshape, slice, broadcast and slice_grad are left out where they would
// do nothing (T equal to the rows, no batch dims).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/llmc/LlmcOps.h"
#include "dialects/llmc/VjpUtils.h"
#include "passes/RaiseUtils.h"

#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "llmc-fold-position-gathers"

namespace mlir::llmc {
#define GEN_PASS_DEF_FOLDPOSITIONGATHERSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;
using mlir::llmc::raise::ConstTensor;
using mlir::llmc::raise::evalConstant;

namespace {

/// The position count T when `indices` (of shape [..., T]) holds 0, 1, ...,
/// T-1 along its last dim for every leading index, and every position is a
/// row of a table of `rows` rows (`bound` real ones); std::nullopt otherwise.
std::optional<int64_t> positionCount(Value indices, int64_t rows,
                                     std::optional<int64_t> bound) {
  auto type = dyn_cast<RankedTensorType>(indices.getType());
  if (!type || !type.hasStaticShape() || type.getRank() < 1)
    return std::nullopt;
  int64_t t = type.getShape().back();
  if (t < 1 || t > rows || (bound && t > *bound))
    return std::nullopt;
  // Position ids are small (batch x sequence); a larger constant is not
  // worth evaluating at compile time.
  std::optional<ConstTensor> values = evalConstant(indices, int64_t(1) << 22);
  if (!values)
    return std::nullopt;
  for (size_t i = 0; i < values->values.size(); ++i)
    if (values->values[i] != static_cast<double>(static_cast<int64_t>(i) % t))
      return std::nullopt;
  return t;
}

/// Leading (batch) dims of the indices: all but the last.
int64_t batchRank(Value indices) {
  return cast<RankedTensorType>(indices.getType()).getRank() - 1;
}

/// The table's first `t` rows, or the table itself.
Value firstRows(OpBuilder &b, Location loc, Value data, int64_t t) {
  auto type = cast<RankedTensorType>(data.getType());
  if (type.getDimSize(0) == t)
    return data;
  int64_t rank = type.getRank();
  SmallVector<int64_t> starts(rank, 0), limits(type.getShape()),
      strides(rank, 1);
  limits[0] = t;
  return b.create<SliceOp>(loc, data, b.getDenseI64ArrayAttr(starts),
                           b.getDenseI64ArrayAttr(limits),
                           b.getDenseI64ArrayAttr(strides));
}

LogicalResult foldGather(GatherOp op) {
  if (op.getAxis() != 0)
    return failure();
  auto data = cast<RankedTensorType>(op.getData().getType());
  std::optional<int64_t> t =
      positionCount(op.getIndices(), data.getDimSize(0), op.getBound());
  if (!t)
    return failure();
  OpBuilder b(op);
  vjp::GradBuilder gb(b, op.getLoc());
  auto resultType = cast<RankedTensorType>(op.getType());
  // [T, inner...] viewed [1..., T, inner...], repeated over the batch dims.
  SmallVector<int64_t> view(batchRank(op.getIndices()), 1);
  view.push_back(*t);
  llvm::append_range(view, data.getShape().drop_front());
  Value rows = gb.reshape(firstRows(b, op.getLoc(), op.getData(), *t), view);
  if (rows.getType() != resultType)
    rows = b.create<BroadcastToOp>(op.getLoc(), resultType, rows);
  op.getResult().replaceAllUsesWith(rows);
  op.erase();
  return success();
}

LogicalResult foldGatherGrad(GatherGradOp op) {
  if (op.getAxis() != 0)
    return failure();
  auto data = cast<RankedTensorType>(op.getType());
  int64_t rows = data.getDimSize(0);
  std::optional<int64_t> t =
      positionCount(op.getIndices(), rows, op.getBound());
  if (!t)
    return failure();
  OpBuilder b(op);
  vjp::GradBuilder gb(b, op.getLoc());
  // grad is [batch..., T, inner...]: the sum over the batch dims, in order.
  SmallVector<int64_t> batch =
      llvm::to_vector(llvm::seq<int64_t>(0, batchRank(op.getIndices())));
  SmallVector<int64_t> summedShape = {*t};
  llvm::append_range(summedShape, data.getShape().drop_front());
  Value sum = gb.reshape(gb.reduceSum(op.getGrad(), batch, false), summedShape);
  if (*t != rows) {
    int64_t rank = data.getRank();
    SmallVector<int64_t> starts(rank, 0), strides(rank, 1);
    sum = b.create<SliceGradOp>(op.getLoc(), data, sum,
                                b.getDenseI64ArrayAttr(starts),
                                b.getDenseI64ArrayAttr(summedShape),
                                b.getDenseI64ArrayAttr(strides));
  }
  op.getResult().replaceAllUsesWith(sum);
  op.erase();
  return success();
}

class FoldPositionGathersPass
    : public mlir::llmc::impl::FoldPositionGathersPassBase<
          FoldPositionGathersPass> {
public:
  void runOnOperation() override {
    SmallVector<Operation *> candidates;
    getOperation().walk([&](Operation *op) {
      if (isa<GatherOp, GatherGradOp>(op))
        candidates.push_back(op);
    });
    for (Operation *op : candidates) {
      if (auto gather = dyn_cast<GatherOp>(op))
        (void)foldGather(gather);
      else
        (void)foldGatherGrad(cast<GatherGradOp>(op));
    }
  }
};

} // namespace
