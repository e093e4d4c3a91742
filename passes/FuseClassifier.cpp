//===- FuseClassifier.cpp - cross_entropy and its gradient as one group ---===//
//
// The loss group (cross_entropy, with the widening cast in its load) and
// the gradient group (cross_entropy_grad, with its casts) over the same
// logits become one group: one pass over each row computes the row's
// max/sum-exp, its loss and its gradient (compiler/codegen/
// ClassifierEmitter.cpp). When the logits have no reader after the group
// and the gradient has their size, the gradient is written over them
// (`llmc.overwrites`), which the memory plan turns into a shared buffer. The
// conditions are in Passes.td; the cost model in docs/fusion.md.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/llmc/LlmcOps.h"
#include "passes/FusionUtils.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

#define DEBUG_TYPE "llmc-fuse-classifier"

namespace mlir::llmc {
#define GEN_PASS_DEF_FUSECLASSIFIERPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::fusion;

namespace {

/// One side of the classifier: a group holding a cross_entropy (or its
/// gradient), the widening cast it loads its logits through (or null) and,
/// for the gradient, the narrowing cast its result is stored through.
struct Side {
  KernelOp group;
  Operation *op = nullptr;
  CastOp widen, narrow;
  Value source; // the logits as the group reads them from outside
};

template <typename OpTy>
std::optional<Side> sideOf(KernelOp group) {
  GroupKind kind = classify(group);
  Operation *op = kind == GroupKind::Single ? &*group.getGroupOps().begin()
                  : kind == GroupKind::Reduction ? reductionOp(group)
                                                 : nullptr;
  auto typed = dyn_cast_or_null<OpTy>(op);
  if (!typed)
    return std::nullopt;
  Side side{group, op, nullptr, nullptr, typed.getLogits()};
  if (auto cast = typed.getLogits().template getDefiningOp<CastOp>();
      cast && cast->getParentOp() == group.getOperation()) {
    side.widen = cast;
    side.source = cast.getInput();
  }
  for (Operation *user : op->getResult(0).getUsers())
    if (auto cast = dyn_cast<CastOp>(user))
      side.narrow = cast;
  // The loss and targets are read before the group in every case below.
  if (typed.getTargets().getParentRegion() == &group.getBody())
    return std::nullopt;
  return side;
}

/// The top-level op of `block` that holds `op`.
Operation *topLevel(Operation *op, Block *block) {
  return block->findAncestorOpInBlock(*op);
}

/// True when every value `group` reads from outside is defined before `at`.
bool inputsDefinedBefore(KernelOp group, Operation *at) {
  for (Value v : groupInputs(group)) {
    if (isa<BlockArgument>(v))
      continue;
    Operation *def = topLevel(v.getDefiningOp(), at->getBlock());
    if (!def || !def->isBeforeInBlock(at))
      return false;
  }
  return true;
}

/// True when nothing outside `group` reads its results before `at`.
bool resultsUnreadBefore(KernelOp group, Operation *at) {
  for (Value r : group.getResults())
    for (Operation *user : r.getUsers()) {
      Operation *top = topLevel(user, at->getBlock());
      if (!top || top->isBeforeInBlock(at))
        return false;
    }
  return true;
}

/// Whether the fused group may write its gradient (result 1) over the
/// logits `source`: a group's transient result (not an argument, not a
/// constant), of the gradient's type, that nothing but the fused group
/// reads, directly or through a reshape (the return included).
bool mayOverwrite(KernelOp fused, Value source) {
  if (source.getType() != fused.getResult(1).getType())
    return false;
  llvm::SmallDenseSet<Value> family = fusion::bufferFamily(source);
  for (Value v : family) {
    if (isa<BlockArgument>(v) ||
        (!v.getDefiningOp<KernelOp>() && !v.getDefiningOp<ReshapeOp>()))
      return false;
    for (Operation *user : v.getUsers())
      if (!isa<ReshapeOp>(user) && !fused->isAncestor(user))
        return false;
  }
  return true;
}

/// Whether the two sides compute the loss and the gradient of the same
/// cross-entropy: same logits read the same way, targets, reduction,
/// ignore_index and classes. `none` keeps its per-position result as its
/// own kernel (nothing to reduce, and no normalizer to share).
bool samePair(Side loss, Side grad) {
  auto ce = cast<CrossEntropyOp>(loss.op);
  auto ceg = cast<CrossEntropyGradOp>(grad.op);
  if (loss.group->getBlock() != grad.group->getBlock() || loss.narrow ||
      loss.source != grad.source || !loss.widen != !grad.widen ||
      ce.getLogits().getType() != ceg.getLogits().getType() ||
      ce.getTargets() != ceg.getTargets() ||
      ce.getReduction() != ceg.getReduction() ||
      ce.getReduction() == LossReduction::none ||
      ce.getIgnoreIndex() != ceg.getIgnoreIndex() ||
      ce.getClasses() != ceg.getClasses())
    return false;
  // The gradient's cotangent must not depend on the loss: a cycle.
  return !llvm::is_contained(groupInputs(grad.group),
                             loss.group.getResult(0));
}

/// Moves the ops of both sides into one group placed before `at`: the loss
/// side's ops, then the gradient's, whose widening cast is the loss side's
/// one. Yields (loss, gradient).
KernelOp merge(Side loss, Side grad, Operation *at) {
  if (grad.widen) {
    grad.widen.getResult().replaceAllUsesWith(loss.widen.getResult());
    grad.widen.erase();
  }
  Value lossValue = loss.group.getYield()->getOperand(0);
  Value gradValue = grad.group.getYield()->getOperand(0);
  OpBuilder builder(at);
  MLIRContext *ctx = at->getContext();
  auto fused = builder.create<KernelOp>(
      FusedLoc::get(ctx, {loss.group.getLoc(), grad.group.getLoc()}),
      TypeRange{lossValue.getType(), gradValue.getType()},
      /*in_place=*/nullptr);
  Block *body = builder.createBlock(&fused.getBody());
  for (KernelOp g : {loss.group, grad.group})
    for (Operation &op : llvm::make_early_inc_range(g.getGroupOps()))
      op.moveBefore(body, body->end());
  builder.setInsertionPointToEnd(body);
  builder.create<YieldOp>(fused.getLoc(), ValueRange{lossValue, gradValue});
  loss.group.getResult(0).replaceAllUsesWith(fused.getResult(0));
  grad.group.getResult(0).replaceAllUsesWith(fused.getResult(1));
  loss.group.erase();
  grad.group.erase();
  return fused;
}

struct FuseClassifierPass
    : public mlir::llmc::impl::FuseClassifierPassBase<FuseClassifierPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<Side> losses, grads;
    func.walk([&](KernelOp group) {
      if (auto s = sideOf<CrossEntropyOp>(group))
        losses.push_back(*s);
      else if (auto s = sideOf<CrossEntropyGradOp>(group))
        grads.push_back(*s);
    });
    llvm::DenseSet<Operation *> used;
    for (const Side &loss : losses)
      for (const Side &grad : grads) {
        if (used.contains(grad.group) || !samePair(loss, grad))
          continue;
        // At the later group's place when nothing reads the earlier one's
        // result in between; at the earlier one's when the later one's
        // inputs all exist there.
        bool lossFirst = loss.group->isBeforeInBlock(grad.group);
        KernelOp first = lossFirst ? loss.group : grad.group;
        KernelOp second = lossFirst ? grad.group : loss.group;
        Operation *at = nullptr;
        if (resultsUnreadBefore(first, second))
          at = second;
        else if (inputsDefinedBefore(second, first))
          at = first;
        if (!at)
          continue;
        used.insert(grad.group);
        Value source = loss.source;
        KernelOp fused = merge(loss, grad, at);
        if (classify(fused) != GroupKind::Classifier) {
          fused.emitError("llmc-fuse-classifier formed a group that the "
                          "backend would not recognise as a classifier");
          return signalPassFailure();
        }
        if (mayOverwrite(fused, source)) {
          SmallVector<Value> inputs = groupInputs(fused);
          int64_t k = llvm::find(inputs, source) - inputs.begin();
          fused->setAttr(kOverwritesAttr,
                         DenseI64ArrayAttr::get(&getContext(), {-1, k}));
        }
        break;
      }
  }
};

} // namespace
