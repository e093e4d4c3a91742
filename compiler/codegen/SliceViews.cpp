//===- SliceViews.cpp - Slices read in place ------------------------------===//
//
// See SliceViews.h. The checks keep the one invariant a view needs: the
// bytes it shares with its input hold the slice's values for as long as
// the view is read. Values are SSA, so only two things write over a live
// buffer: a group that overwrites its input (the fused classifier's
// gradient over its logits) and an in-place parameter update.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/SliceViews.h"

#include "compiler/common/ElementTypes.h"
#include "runtime/Plan.h"
#include "passes/FusionUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

/// The group that holds only `op` (and its yield), or null.
KernelOp soleGroup(Operation *op) {
  auto group = dyn_cast_or_null<KernelOp>(op->getParentOp());
  if (!group || group.getBody().front().getOperations().size() != 2)
    return nullptr;
  return group;
}

/// What `v` is outside groups: the group result that yields it.
Value outerValue(Value v) {
  for (OpOperand &use : v.getUses())
    if (use.getOwner()->hasTrait<OpTrait::IsTerminator>())
      if (auto group = dyn_cast<KernelOp>(use.getOwner()->getParentOp()))
        return group->getResult(use.getOperandNumber());
  return v;
}

/// A group reads `v` and writes one of its results over it.
bool overwritten(Value v) {
  for (Operation *user : v.getUsers()) {
    auto group = user->getParentOfType<KernelOp>();
    if (!group)
      continue;
    SmallVector<Value> inputs = fusion::groupInputs(group);
    for (unsigned r = 0; r < group->getNumResults(); ++r) {
      int64_t in = fusion::overwrittenInput(group, r);
      if (in >= 0 && inputs[in] == v)
        return true;
    }
  }
  return false;
}

bool isReturned(Value v) {
  for (Operation *user : v.getUsers())
    if (isa<func::ReturnOp>(user))
      return true;
  return false;
}

/// The argument `llmc.next` results name as updated (in place or copied at
/// the end of the step: either way the buffer changes).
bool updatedArgument(BlockArgument arg) {
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (!func)
    return true;
  for (unsigned r = 0; r < func.getNumResults(); ++r)
    if (auto next = func.getResultAttrOfType<IntegerAttr>(r, "llmc.next"))
      if (next.getInt() == arg.getArgNumber())
        return true;
  return false;
}

} // namespace

std::optional<uint64_t> sliceViewOffset(SliceOp op) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto dtype = dtypeOf(in.getElementType());
  if (!dtype || !in.hasStaticShape() || !soleGroup(op))
    return std::nullopt;
  ArrayRef<int64_t> shape = in.getShape(), starts = op.getStarts(),
                    limits = op.getLimits(), steps = op.getStrides();
  // From the last dim: whole dims, then one dim of any range, then dims of
  // one coordinate.
  int64_t rank = in.getRank(), d = rank - 1;
  while (d >= 0 && starts[d] == 0 && limits[d] == shape[d])
    --d;
  if (d >= 0 && steps[d] != 1 && limits[d] - starts[d] > 1)
    return std::nullopt;
  for (int64_t e = d - 1; e >= 0; --e)
    if (limits[e] - starts[e] != 1)
      return std::nullopt;
  uint64_t elements = 0, stride = 1;
  for (int64_t e = rank - 1; e >= 0; --e) {
    elements += static_cast<uint64_t>(starts[e]) * stride;
    stride *= static_cast<uint64_t>(shape[e]);
  }
  uint64_t offset = elements * dtypeSize(*dtype);
  if (offset % 256 != 0)
    return std::nullopt;

  Value result = outerValue(op.getResult());
  if (isReturned(result) || overwritten(result))
    return std::nullopt;
  // Back through reshapes (aliases of one buffer) to the bytes' owner.
  Value v = op.getInput();
  while (true) {
    if (overwritten(v))
      return std::nullopt;
    if (auto arg = dyn_cast<BlockArgument>(v))
      return updatedArgument(arg) ? std::nullopt
                                  : std::optional<uint64_t>(offset);
    auto group = v.getDefiningOp<KernelOp>();
    Operation *inner =
        group ? group.getBody().front().getTerminator()->getOperand(
                    cast<OpResult>(v).getResultNumber()).getDefiningOp()
              : v.getDefiningOp();
    auto reshape = dyn_cast_or_null<ReshapeOp>(inner);
    if (!reshape)
      return offset;
    v = reshape.getInput();
  }
}

} // namespace llmc::codegen
