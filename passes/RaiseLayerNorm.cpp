//===- RaiseLayerNorm.cpp - Raise decomposed LayerNorm to llmc.layer_norm --===//
//
// Before opset 17 (and in hand-written modules) layer norm is
//   d = x - reduce_mean(x);  y = d / sqrt(reduce_mean(d^2) + eps) * w + b
// Three patterns: the normalization itself (d used only by the square and
// the division), then the weight, then the bias. Absorbing a weight needs a
// norm with neither weight nor bias, since (y + b) * w != y * w + b.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/RaisePatterns.h"
#include "passes/RaiseUtils.h"

#define DEBUG_TYPE "llmc-raise-layer-norm"

namespace mlir::llmc {
#define GEN_PASS_DEF_RAISELAYERNORMPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::raise;

namespace {

/// The radicand `s` when `v` (single use) is sqrt(s) (`inverse` false) or
/// 1/sqrt(s) (`inverse` true: rsqrt, reciprocal(sqrt), div(1, sqrt)).
static Value matchSqrt(Value v, bool inverse) {
  if (!v.hasOneUse())
    return {};
  if (!inverse) {
    auto sqrt = v.getDefiningOp<SqrtOp>();
    return sqrt ? sqrt.getInput() : Value();
  }
  if (auto r = v.getDefiningOp<RsqrtOp>())
    return r.getInput();
  Value root;
  if (auto r = v.getDefiningOp<ReciprocalOp>())
    root = r.getInput();
  else if (auto d = v.getDefiningOp<DivOp>();
           d && isScalarConstant(d.getLhs(), 1.0))
    root = d.getRhs();
  return root ? matchSqrt(root, /*inverse=*/false) : Value();
}

// (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) = layer_norm(x)
struct RaiseLayerNorm : RewritePattern {
  RaiseLayerNorm(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isa<MulOp, DivOp>(op))
      return failure();
    SmallVector<std::pair<Value, Value>, 2> candidates; // (d, radicand)
    if (isa<DivOp>(op)) {
      if (Value s = matchSqrt(op->getOperand(1), /*inverse=*/false))
        candidates.push_back({op->getOperand(0), s});
    } else {
      for (auto [d, inv] : {std::pair(op->getOperand(0), op->getOperand(1)),
                            std::pair(op->getOperand(1), op->getOperand(0))})
        if (Value s = matchSqrt(inv, /*inverse=*/true))
          candidates.push_back({d, s});
    }
    for (auto [d, s] : candidates) {
      auto sub = d.getDefiningOp<SubOp>();
      auto add = s.getDefiningOp<AddOp>();
      if (!sub || !add || !s.hasOneUse())
        continue;
      auto mean = sub.getRhs().getDefiningOp<ReduceMeanOp>();
      Value x = sub.getLhs();
      if (!mean || mean.getInput() != x || !mean.getKeepdims())
        continue;
      if (!sub.getRhs().hasOneUse())
        return rewriter.notifyMatchFailure(op, "mean has other uses");
      for (auto [varValue, epsValue] : {std::pair(add.getLhs(), add.getRhs()),
                                        std::pair(add.getRhs(), add.getLhs())}) {
        auto var = varValue.getDefiningOp<ReduceMeanOp>();
        auto eps = getScalarConstant(epsValue);
        if (!var || !eps || !varValue.hasOneUse() || !var.getKeepdims())
          continue;
        Operation *square = var.getInput().getDefiningOp();
        if (!square || !var.getInput().hasOneUse() ||
            !((isa<PowOp>(square) && square->getOperand(0) == d &&
               isScalarConstant(square->getOperand(1), 2.0)) ||
              (isa<MulOp>(square) && square->getOperand(0) == d &&
               square->getOperand(1) == d)))
          return rewriter.notifyMatchFailure(op, "variance is not mean(d^2)");
        if (!onlyUsedBy(d, {op, square}))
          return rewriter.notifyMatchFailure(op, "x - mean has other uses");
        auto first = trailingAxes(mean);
        if (!first || mean.getAxes() != var.getAxes())
          return rewriter.notifyMatchFailure(
              op, "means are not over the same trailing dims");
        if (*eps < 0 || x.getType() != op->getResult(0).getType())
          return rewriter.notifyMatchFailure(
              op, "negative epsilon or broadcasting formula");
        int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
        rewriter.replaceOpWithNewOp<LayerNormOp>(
            op, x, Value(), Value(), normAxisAttr(*first, rank),
            APFloat(shortestDecimal(*eps, elementTypeOf(x))));
        return success();
      }
    }
    return rewriter.notifyMatchFailure(op, "not (x - mean) / sqrt(var + eps)");
  }
};

// layer_norm(x) * w = layer_norm(x) weight w
struct AbsorbLayerNormWeight : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [n, w] : {std::pair(op.getLhs(), op.getRhs()),
                        std::pair(op.getRhs(), op.getLhs())}) {
      auto norm = n.getDefiningOp<LayerNormOp>();
      if (!norm || norm.getWeight() || norm.getBias())
        continue;
      if (!n.hasOneUse())
        return rewriter.notifyMatchFailure(op, "layer_norm has other uses");
      if (!isNormParam(w, n, norm.getAxis()))
        return rewriter.notifyMatchFailure(
            op, "factor is not shaped like the normalized dims");
      rewriter.replaceOpWithNewOp<LayerNormOp>(op, norm.getInput(), w, Value(),
                                               norm.getAxis(),
                                               norm.getEpsilon());
      return success();
    }
    return rewriter.notifyMatchFailure(op, "no plain layer_norm operand");
  }
};

// layer_norm(x, w?) + b = layer_norm(x, w?) bias b
struct AbsorbLayerNormBias : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [n, b] : {std::pair(op.getLhs(), op.getRhs()),
                        std::pair(op.getRhs(), op.getLhs())}) {
      auto norm = n.getDefiningOp<LayerNormOp>();
      if (!norm || norm.getBias())
        continue;
      if (!n.hasOneUse())
        return rewriter.notifyMatchFailure(op, "layer_norm has other uses");
      if (!isNormParam(b, n, norm.getAxis()))
        return rewriter.notifyMatchFailure(
            op, "addend is not shaped like the normalized dims");
      rewriter.replaceOpWithNewOp<LayerNormOp>(op, norm.getInput(),
                                               norm.getWeight(), b,
                                               norm.getAxis(),
                                               norm.getEpsilon());
      return success();
    }
    return rewriter.notifyMatchFailure(op, "no layer_norm without bias");
  }
};

struct RaiseLayerNormPass : mlir::llmc::impl::RaiseLayerNormPassBase<RaiseLayerNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateRaiseLayerNormPatterns(patterns);
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  getArgument())))
      signalPassFailure();
  }
};

} // namespace

void mlir::llmc::populateRaiseLayerNormPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseLayerNorm, AbsorbLayerNormWeight, AbsorbLayerNormBias>(
      patterns.getContext());
}
