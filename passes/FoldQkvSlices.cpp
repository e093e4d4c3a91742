//===- FoldQkvSlices.cpp - Attention reads q, k, v from the packed qkv ----===//
//
// A GPT-2 block projects q, k, v with one matmul into [B, T, 3C], splits it
// (a copy of the whole tensor), views each piece as [B, T, H, D] and hands
// it to attention; the backward concatenates dq, dk, dv back into
// [B, T, 3C] for the projection's gradient GEMMs (another copy). Once
// attention is `seq_major` (llmc-fold-attention-transposes), a head of q is
// just a column window of the packed [B, T, 3C] rows: the ops can read the
// packed tensor, viewed [B, T, 3H, D], at a head offset (`qkv_heads`), and
// attention_grad can write one packed gradient, so the split and the concat
// disappear (docs/fusion.md "q, k, v as slices of the packed projection").
//
//   1. For each 3-way split along the last axis of a [B, T, X] tensor: every
//      reader of piece i is a reshape to [B, T, H_i, D] read only as operand
//      i (0 q, 1 k, 2 v) of seq_major attention ops, and each of those ops
//      takes all three operands from this split.
//   2. Each attention_grad among them has its dq, dk, dv each read only by a
//      reshape back to [B, T, C_i], and those three only by one concat along
//      the last axis, in the order q, k, v.
//   3. Then the split's input is viewed [B, T, Hq + 2 Hkv, D], the forward
//      ops read it with `qkv_heads = [Hq, Hkv]`, each attention_grad becomes
//      one that writes the packed gradient, whose view replaces the concat.
//      Anything else (another reader of a piece, RoPE between the split and
//      attention, separate projections) leaves the IR as it is.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/llmc/LlmcOps.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "llmc-fold-qkv-slices"

namespace mlir::llmc {
#define GEN_PASS_DEF_FOLDQKVSLICESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

bool isAttention(Operation *op) {
  return isa<AttentionOp, AttentionLseOp, AttentionGradOp>(op);
}

/// What the rewrite of one split needs, filled by `match`.
struct Match {
  SplitOp split;
  int64_t heads[3] = {0, 0, 0}, headDim = 0;
  llvm::SetVector<Operation *> views;     // the reshapes of the pieces
  llvm::SetVector<Operation *> attention; // their readers
  /// Per attention_grad: its concat and the three reshapes feeding it.
  llvm::DenseMap<Operation *, std::pair<ConcatOp, SmallVector<Operation *>>>
      concats;
};

/// Why `m.split` cannot fold, or null (and `m` filled) if it can.
const char *match(Match &m) {
  SplitOp split = m.split;
  auto in = cast<RankedTensorType>(split.getInput().getType());
  if (in.getRank() != 3 || split.getAxis() != 2 ||
      split.getNumResults() != 3 || !in.hasStaticShape())
    return "not a 3-way split of a [B, T, X] tensor along X";
  for (auto [i, piece] : llvm::enumerate(split.getResults())) {
    if (piece.use_empty())
      return "a piece has no reader";
    for (Operation *user : piece.getUsers()) {
      auto view = dyn_cast<ReshapeOp>(user);
      auto type = view ? cast<RankedTensorType>(view.getType()) : nullptr;
      if (!type || type.getRank() != 4 || type.getDimSize(0) != in.getDimSize(0) ||
          type.getDimSize(1) != in.getDimSize(1))
        return "a piece has a reader other than a [B, T, H, D] view";
      if ((m.headDim && type.getDimSize(3) != m.headDim) ||
          (m.heads[i] && type.getDimSize(2) != m.heads[i]))
        return "the pieces' views disagree on the head layout";
      m.headDim = type.getDimSize(3);
      m.heads[i] = type.getDimSize(2);
      m.views.insert(view);
      for (OpOperand &use : view.getResult().getUses()) {
        Operation *op = use.getOwner();
        if (!isAttention(op) || use.getOperandNumber() != i ||
            !op->hasAttr("seq_major") || op->hasAttr("qkv_heads"))
          return "a view is read by something other than q, k or v of a "
                 "seq_major attention op";
        m.attention.insert(op);
      }
    }
  }
  if (m.heads[1] != m.heads[2])
    return "k and v have different head counts";
  for (Operation *op : m.attention)
    for (unsigned i = 0; i < 3; ++i) {
      auto view = op->getOperand(i).getDefiningOp<ReshapeOp>();
      if (!view || view.getInput() != split.getResult(i))
        return "an attention op takes q, k or v from elsewhere";
    }
  // The gradients must be the pieces of one concat laid out as the split.
  for (Operation *op : m.attention) {
    if (!isa<AttentionGradOp>(op))
      continue;
    ConcatOp concat;
    SmallVector<Operation *> backs;
    for (unsigned i = 0; i < 3; ++i) {
      Value grad = op->getResult(i);
      if (!grad.hasOneUse())
        return "a gradient has another reader than its view back";
      auto back = dyn_cast<ReshapeOp>(*grad.getUsers().begin());
      if (!back || back.getType() != split.getResult(i).getType() ||
          !back.getResult().hasOneUse())
        return "a gradient is not viewed back as its piece";
      auto c = dyn_cast<ConcatOp>(*back.getResult().getUsers().begin());
      if (!c || (concat && c != concat) || c.getAxis() != 2 ||
          c.getInputs().size() != 3 || c.getInputs()[i] != back.getResult() ||
          c.getType() != in)
        return "dq, dk, dv are not concatenated back as q, k, v";
      concat = c;
      backs.push_back(back);
    }
    m.concats[op] = {concat, backs};
  }
  return nullptr;
}

void rewrite(Match &m) {
  SplitOp split = m.split;
  auto in = cast<RankedTensorType>(split.getInput().getType());
  int64_t hq = m.heads[0], hkv = m.heads[1];
  auto packedType = in.clone(
      {in.getDimSize(0), in.getDimSize(1), hq + 2 * hkv, m.headDim});
  OpBuilder builder(split);
  Value packed =
      builder.create<ReshapeOp>(split.getLoc(), packedType, split.getInput());
  auto heads = builder.getDenseI64ArrayAttr({hq, hkv});
  for (Operation *op : m.attention) {
    if (!isa<AttentionGradOp>(op)) {
      for (unsigned i = 0; i < 3; ++i)
        op->setOperand(i, packed);
      op->setAttr("qkv_heads", heads);
      continue;
    }
    // One result instead of three: a new op, read through a view of the
    // concat's type in the concat's place.
    auto &[concat, backs] = m.concats[op];
    SmallVector<Value> operands(op->getOperands());
    operands[0] = operands[1] = operands[2] = packed;
    SmallVector<NamedAttribute> attrs(op->getAttrs());
    attrs.push_back(builder.getNamedAttr("qkv_heads", heads));
    builder.setInsertionPoint(op);
    auto grad = builder.create<AttentionGradOp>(
        op->getLoc(), TypeRange{packedType}, operands, attrs);
    builder.setInsertionPoint(concat);
    Value dqkv = builder.create<ReshapeOp>(concat.getLoc(), concat.getType(),
                                           grad.getResult(0));
    concat.getResult().replaceAllUsesWith(dqkv);
    concat.erase();
    for (Operation *back : backs)
      back->erase();
    op->erase();
  }
  for (Operation *view : m.views)
    view->erase();
  split.erase();
}

struct FoldQkvSlicesPass
    : mlir::llmc::impl::FoldQkvSlicesPassBase<FoldQkvSlicesPass> {
  void runOnOperation() override {
    SmallVector<SplitOp> splits;
    getOperation().walk([&](SplitOp split) { splits.push_back(split); });
    for (SplitOp split : splits) {
      Match m;
      m.split = split;
      if (const char *why = match(m)) {
        LLVM_DEBUG(llvm::dbgs() << "keeps the split at " << split.getLoc()
                                << ": " << why << "\n");
        (void)why;
        continue;
      }
      rewrite(m);
    }
  }
};

} // namespace
