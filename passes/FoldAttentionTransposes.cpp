//===- FoldAttentionTransposes.cpp - [B,T,H,D] attention, no transposes ---===//
//
// A transformer block projects q, k, v as [B, T, H*D], views them as
// [B, T, H, D] and transposes them to attention's [B, H, T, D]; the output
// goes back the same way, and the backward transposes the output cotangent
// and dq, dk, dv. The attention kernels read a head's rows at any stride,
// so the op can take the pre-transpose values instead (`seq_major`) and
// each transpose, a full read and write of its tensor, disappears
// (docs/fusion.md: 8 launches per GPT-2 layer).
//
// The ops that share values (attention_lse's q is also attention_grad's q,
// its result is also attention_grad's `output`) must switch together, so
// the pass starts from every attention op and drops, until nothing
// changes, each op that has a layout operand or result it cannot take
// over: an operand that is neither a [0, 2, 1, 3] transpose read only by
// the layout operands of ops still in the set nor the result of one of
// them, or a result read by anything but such a transpose or such an
// operand. What is left switches; nothing else changes.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/llmc/LlmcOps.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "llmc-fold-attention-transposes"

namespace mlir::llmc {
#define GEN_PASS_DEF_FOLDATTENTIONTRANSPOSESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

bool isAttention(Operation *op) {
  return isa<AttentionOp, AttentionLseOp, AttentionGradOp>(op);
}

/// The operands laid out [B, H, T, D]: q, k, v (and attention_grad's output
/// and grad). The mask is indexed by (b, h, t, s) in either layout.
ArrayRef<unsigned> layoutOperands(Operation *op) {
  static const unsigned forward[] = {0, 1, 2}, grad[] = {0, 1, 2, 3, 5};
  if (isa<AttentionGradOp>(op))
    return grad;
  return forward;
}

/// The results laid out [B, H, T, D] (not attention_lse's lse).
unsigned layoutResultCount(Operation *op) {
  return isa<AttentionGradOp>(op) ? 3 : 1;
}

bool isLayoutOperand(OpOperand &use) {
  return isAttention(use.getOwner()) &&
         llvm::is_contained(layoutOperands(use.getOwner()),
                            use.getOperandNumber());
}

/// transpose [0, 2, 1, 3]: [B, T, H, D] <-> [B, H, T, D].
TransposeOp swapOf(Value v) {
  auto t = v.getDefiningOp<TransposeOp>();
  if (!t || t.getPermutation() != ArrayRef<int64_t>{0, 2, 1, 3})
    return nullptr;
  return t;
}

bool isSwap(Operation *op) {
  auto t = dyn_cast<TransposeOp>(op);
  return t && t.getPermutation() == ArrayRef<int64_t>{0, 2, 1, 3};
}

/// Casts swap places with the transposes next to attention: a cast is
/// elementwise, so it commutes with a transpose, and the transpose then
/// touches attention directly. Llama-style exports rotate q and k in f32
/// (RoPE runs in the projection's layout: llmc-sink-rotary-transposes), so
/// the forward narrows them to bf16 after their transpose,
/// `attention(cast(transpose(x)))`, and the backward widens dq and dk
/// before theirs, `transpose(cast(dq))`. Either way the transpose moves to
/// the bf16 side, where it also moves half the bytes.
void castsAwayFromAttention(Operation *root) {
  llvm::SetVector<Operation *> before, after;
  root->walk([&](Operation *op) {
    if (!isAttention(op))
      return;
    for (unsigned i : layoutOperands(op))
      if (auto c = op->getOperand(i).getDefiningOp<CastOp>())
        if (TransposeOp t = swapOf(c.getInput()); t && t->hasOneUse())
          before.insert(c);
    for (unsigned r = 0; r < layoutResultCount(op); ++r)
      for (Operation *user : op->getResult(r).getUsers())
        if (auto c = dyn_cast<CastOp>(user); c && c->hasOneUse())
          if (isSwap(*c->getUsers().begin()))
            after.insert(c);
  });
  auto withElement = [](Value v, Value like) {
    return cast<RankedTensorType>(v.getType())
        .clone(cast<RankedTensorType>(like.getType()).getElementType());
  };
  for (Operation *op : before) {
    auto c = cast<CastOp>(op);
    TransposeOp t = swapOf(c.getInput());
    OpBuilder builder(c);
    Value narrowed = builder.create<CastOp>(
        c.getLoc(), withElement(t.getInput(), c), t.getInput());
    Value moved =
        builder.create<TransposeOp>(t.getLoc(), narrowed, t.getPermutation());
    c.getResult().replaceAllUsesWith(moved);
    c.erase();
    t.erase();
  }
  for (Operation *op : after) {
    auto c = cast<CastOp>(op);
    auto t = cast<TransposeOp>(*c->getUsers().begin());
    OpBuilder builder(t);
    Value moved = builder.create<TransposeOp>(t.getLoc(), c.getInput(),
                                              t.getPermutation());
    Value widened =
        builder.create<CastOp>(c.getLoc(), withElement(t.getResult(), c), moved);
    t.getResult().replaceAllUsesWith(widened);
    t.erase();
    c.erase();
  }
}

/// Why `op` cannot switch while the ops of `set` do, or null if it can.
const char *blocker(Operation *op, const llvm::SetVector<Operation *> &set) {
  for (unsigned i : layoutOperands(op)) {
    Value v = op->getOperand(i);
    if (TransposeOp t = swapOf(v)) {
      for (OpOperand &use : t.getResult().getUses())
        if (!set.contains(use.getOwner()) || !isLayoutOperand(use))
          return "a transposed operand has another reader";
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (def && set.contains(def) &&
        cast<OpResult>(v).getResultNumber() < layoutResultCount(def))
      continue;
    return "an operand is not a [0, 2, 1, 3] transpose";
  }
  for (unsigned r = 0; r < layoutResultCount(op); ++r)
    for (OpOperand &use : op->getResult(r).getUses())
      if (!isSwap(use.getOwner()) &&
          !(set.contains(use.getOwner()) && isLayoutOperand(use)))
        return "a result has a reader other than a [0, 2, 1, 3] transpose";
  return nullptr;
}

RankedTensorType swapped(Type t) {
  auto type = cast<RankedTensorType>(t);
  return type.clone(attentionLogicalShape(type.getShape(), true));
}

struct FoldAttentionTransposesPass
    : mlir::llmc::impl::FoldAttentionTransposesPassBase<
          FoldAttentionTransposesPass> {
  void runOnOperation() override {
    castsAwayFromAttention(getOperation());
    llvm::SetVector<Operation *> set;
    getOperation().walk([&](Operation *op) {
      if (isAttention(op) && !op->hasAttr("seq_major"))
        set.insert(op);
    });
    for (bool changed = true; changed;) {
      changed = false;
      for (Operation *op : SmallVector<Operation *>(set.getArrayRef()))
        if (const char *why = blocker(op, set)) {
          LLVM_DEBUG(llvm::dbgs() << "keeps " << op->getName() << " at "
                                  << op->getLoc() << ": " << why << "\n");
          (void)why;
          set.remove(op);
          changed = true;
        }
    }
    // Operands first: a transpose may feed two ops of the set.
    llvm::SetVector<Operation *> dead;
    for (Operation *op : set)
      for (unsigned i : layoutOperands(op))
        if (TransposeOp t = swapOf(op->getOperand(i))) {
          op->setOperand(i, t.getInput());
          dead.insert(t);
        }
    OpBuilder builder(&getContext());
    for (Operation *op : set) {
      op->setAttr("seq_major", builder.getUnitAttr());
      for (unsigned r = 0; r < layoutResultCount(op); ++r) {
        Value result = op->getResult(r);
        result.setType(swapped(result.getType()));
        SmallVector<Operation *> back;
        for (Operation *user : result.getUsers())
          if (isSwap(user))
            back.push_back(user);
        for (Operation *t : llvm::SetVector<Operation *>(back.begin(),
                                                        back.end())) {
          t->getResult(0).replaceAllUsesWith(result);
          t->erase();
        }
      }
    }
    for (Operation *t : dead)
      if (t->use_empty())
        t->erase();
  }
};

} // namespace
