//===- MarkInPlace.cpp - llmc.next results written into their argument ----===//
//
// For each function result `llmc.next = i` (an updated parameter or state),
// decides whether the group computing it may write it into argument i's
// buffer, and records it in the group's `in_place` attribute (the
// conditions are in Passes.td). The plan builder (compiler/codegen) reads
// the attribute; without it, the result is copied into the argument's
// buffer at the end of the step.
//
// "Reads the argument" follows reshapes: a reshape's result is its
// operand's buffer. Positions are the function body's top-level ops.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/llmc/LlmcOps.h"
#include "passes/FusionUtils.h"

#include "llvm/ADT/DenseSet.h"

#define DEBUG_TYPE "llmc-mark-in-place"

namespace mlir::llmc {
#define GEN_PASS_DEF_MARKINPLACEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

/// True when `op` reads operand `i` only at the index of the element of its
/// result `r` that it writes.
bool readsElementwise(Operation *op, unsigned i, unsigned r) {
  if (auto multi = dyn_cast<MultiAdamWUpdateOp>(op))
    return multi.tensorOfOperand(i) >= 0 &&
           multi.tensorOfOperand(i) == multi.tensorOfResult(r);
  return op->hasTrait<ReadsElementwise>() &&
         op->getOperand(i).getType() == op->getResult(r).getType();
}

/// A fused elementwise group (llmc-fuse-elementwise) computes each element
/// of a segment from its inputs at that element's index, loading before it
/// stores (compiler/codegen/FusedEmitters.cpp): a read of the argument in
/// the segment that yields `yielded`, of `yielded`'s shape (not broadcast),
/// reads only the element the same thread later writes.
bool readsOnlyAtWrittenIndex(KernelOp group, Value yielded,
                             const llvm::SmallDenseSet<Value> &family) {
  auto shape = cast<ShapedType>(yielded.getType()).getShape();
  for (const auto &segment : fusion::segments(group)) {
    bool writes = llvm::is_contained(segment, yielded.getDefiningOp());
    for (Operation *op : segment)
      for (Value operand : op->getOperands())
        if (family.contains(operand) &&
            (!writes ||
             cast<ShapedType>(operand.getType()).getShape() != shape))
          return false;
  }
  return true;
}

/// The top-level op of `func`'s body that holds `op`.
Operation *topLevel(Operation *op, Block &body) {
  return body.findAncestorOpInBlock(*op);
}

/// Whether `group` may write its result `j` into the buffer of `family`'s
/// argument.
bool canWriteInPlace(KernelOp group, unsigned j,
                     const llvm::SmallDenseSet<Value> &family, Block &body) {
  // Nothing after the group, and not the return, reads the old value.
  for (Value v : family)
    for (Operation *user : v.getUsers()) {
      Operation *top = topLevel(user, body);
      if (top == group.getOperation() || isa<ReshapeOp>(top))
        continue;
      if (top->hasTrait<mlir::OpTrait::IsTerminator>() ||
          group->isBeforeInBlock(top))
        return false;
    }
  // Inside the group, every read of it is elementwise into result j.
  Value yielded = group.getYield()->getOperand(j);
  if (fusion::classify(group) == fusion::GroupKind::Elementwise)
    return readsOnlyAtWrittenIndex(group, yielded, family);
  for (Operation &op : group.getGroupOps())
    for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
      if (!family.contains(operand))
        continue;
      auto result = dyn_cast<OpResult>(yielded);
      if (!result || result.getOwner() != &op ||
          !readsElementwise(&op, i, result.getResultNumber()))
        return false;
    }
  return true;
}

struct MarkInPlacePass
    : public mlir::llmc::impl::MarkInPlacePassBase<MarkInPlacePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();
    auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
    if (!ret)
      return;
    llvm::DenseSet<unsigned> claimedArgs;
    for (auto [r, v] : llvm::enumerate(ret.getOperands())) {
      auto next = func.getResultAttrOfType<IntegerAttr>(r, "llmc.next");
      if (!next || next.getInt() < 0 || next.getInt() >= func.getNumArguments())
        continue;
      unsigned argIndex = next.getInt();
      Value arg = func.getArgument(argIndex);
      auto group = v.getDefiningOp<KernelOp>();
      if (!group || v.getType() != arg.getType() ||
          claimedArgs.contains(argIndex) ||
          llvm::count(ret.getOperands(), v) != 1)
        continue;
      unsigned j = cast<OpResult>(v).getResultNumber();
      if (!canWriteInPlace(group, j, fusion::bufferFamily(arg), body))
        continue;
      SmallVector<int64_t> inPlace(group.getNumResults(), -1);
      if (auto old = group.getInPlace())
        inPlace.assign(old->begin(), old->end());
      inPlace[j] = argIndex;
      group.setInPlace(inPlace);
      claimedArgs.insert(argIndex);
    }
  }
};

} // namespace
