//===- RaiseRotary.cpp - Raise rotate-half RoPE to llmc.rotary -------------===//
//
// HF's apply_rotary_pos_emb is q * cos + rotate_half(q) * sin, with
// rotate_half(q) = cat(-q[..., D/2:], q[..., :D/2]). Exporters write the
// halves as two Slices (or one Split), the negation as Neg and the join as
// Concat on the last axis; the tables arrive as [T, D] or, after HF's
// unsqueeze, [B, 1, T, D], and llmc.rotary takes them as they are.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/RaisePatterns.h"
#include "passes/RaiseUtils.h"

#include "dialects/llmc/ShapeUtils.h"

#define DEBUG_TYPE "llmc-raise-rotary"

namespace mlir::llmc {
#define GEN_PASS_DEF_RAISEROTARYPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::raise;

namespace {

/// True when `s` (single use) is x[..., begin:end] with unit strides.
static bool isLastDimSlice(Value s, Value x, int64_t begin, int64_t end) {
  auto slice = s.getDefiningOp<SliceOp>();
  if (!slice || slice.getInput() != x || !s.hasOneUse())
    return false;
  auto shape = cast<RankedTensorType>(x.getType()).getShape();
  int64_t last = shape.size() - 1;
  for (int64_t d = 0; d <= last; ++d) {
    int64_t wantStart = d == last ? begin : 0;
    int64_t wantLimit = d == last ? end : shape[d];
    if (slice.getStarts()[d] != wantStart ||
        slice.getLimits()[d] != wantLimit || slice.getStrides()[d] != 1)
      return false;
  }
  return true;
}

/// x when `v` (single use) is concat(-x[..., D/2:], x[..., :D/2]) on the
/// last axis, with the halves as slices or as one split.
static Value matchRotateHalf(Value v) {
  auto concat = v.getDefiningOp<ConcatOp>();
  if (!concat || !v.hasOneUse() || concat.getInputs().size() != 2)
    return {};
  auto type = cast<RankedTensorType>(v.getType());
  if (concat.getAxis() != type.getRank() - 1)
    return {};
  auto neg = concat.getInputs()[0].getDefiningOp<NegOp>();
  Value lo = concat.getInputs()[1];
  if (!neg || !concat.getInputs()[0].hasOneUse())
    return {};
  Value hi = neg.getInput();
  if (auto split = hi.getDefiningOp<SplitOp>()) {
    int64_t d = cast<RankedTensorType>(split.getInput().getType())
                    .getShape()
                    .back();
    if (split.getNumResults() == 2 && hi == split.getResult(1) &&
        lo == split.getResult(0) && split.getAxis() == type.getRank() - 1 &&
        !ShapedType::isDynamic(d) && d % 2 == 0 && hi.hasOneUse() &&
        lo.hasOneUse())
      return split.getInput();
    return {};
  }
  auto slice = hi.getDefiningOp<SliceOp>();
  if (!slice)
    return {};
  Value x = slice.getInput();
  int64_t d = cast<RankedTensorType>(x.getType()).getShape().back();
  if (ShapedType::isDynamic(d) || d % 2 != 0 ||
      !isLastDimSlice(hi, x, d / 2, d) || !isLastDimSlice(lo, x, 0, d / 2))
    return {};
  return x;
}

// x * cos + rotate_half(x) * sin = rotary(x, cos, sin)
struct RaiseRotary : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [a, b] : {std::pair(op.getLhs(), op.getRhs()),
                        std::pair(op.getRhs(), op.getLhs())}) {
      auto mulSin = b.getDefiningOp<MulOp>();
      auto mulCos = a.getDefiningOp<MulOp>();
      if (!mulSin || !mulCos)
        continue;
      for (auto [rh, sin] : {std::pair(mulSin.getLhs(), mulSin.getRhs()),
                             std::pair(mulSin.getRhs(), mulSin.getLhs())}) {
        Value x = matchRotateHalf(rh);
        if (!x)
          continue;
        Value cos = otherOperand(mulCos, x);
        if (!cos)
          return rewriter.notifyMatchFailure(
              op, "other product does not multiply the rotated x");
        if (!a.hasOneUse() || !b.hasOneUse())
          return rewriter.notifyMatchFailure(op, "product has other uses");
        auto xt = cast<RankedTensorType>(x.getType());
        auto ct = cast<RankedTensorType>(cos.getType());
        if (cos.getType() != sin.getType() || ct.getRank() < 2 ||
            ct.getRank() > xt.getRank() ||
            ct.getShape().back() != xt.getShape().back() ||
            !isBroadcastableTo(ct.getShape(), xt.getShape()) ||
            op.getType() != xt)
          return rewriter.notifyMatchFailure(
              op, "cos/sin tables do not have one type broadcasting to x");
        rewriter.replaceOpWithNewOp<RotaryOp>(op, x, cos, sin);
        return success();
      }
    }
    return rewriter.notifyMatchFailure(
        op, "not x * cos + rotate_half(x) * sin");
  }
};

struct RaiseRotaryPass : mlir::llmc::impl::RaiseRotaryPassBase<RaiseRotaryPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateRaiseRotaryPatterns(patterns);
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  getArgument())))
      signalPassFailure();
  }
};

} // namespace

void mlir::llmc::populateRaiseRotaryPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseRotary>(patterns.getContext());
}
