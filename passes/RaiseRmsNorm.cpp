//===- RaiseRmsNorm.cpp - Raise decomposed RMSNorm to llmc.rms_norm --------===//
//
// HF's LlamaRMSNorm exports as
//   dynamo:      mul(w, mul(x, reciprocal(sqrt(add(reduce_mean(pow(x, 2)), eps)))))
//   TorchScript: mul(w, cast(mul(cast(x), div(1, sqrt(add(mean(pow(x, 2)), eps))))))
// (the casts are to f32 and fold away for f32 models). Two patterns:
//   1. x * inv_rms(x) -> rms_norm(x), optionally through an up/down cast
//      pair; the inverse rms may be written four ways (see Passes.td).
//   2. rms_norm(x) * w -> rms_norm(x) weight w, when w has the shape of the
//      normalized dims and the unweighted norm has no other use.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/RaisePatterns.h"
#include "passes/RaiseUtils.h"

#define DEBUG_TYPE "llmc-raise-rms-norm"

namespace mlir::llmc {
#define GEN_PASS_DEF_RAISERMSNORMPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::raise;

namespace {

/// The radicand `s` when `v` (single use) is 1/sqrt(s): reciprocal(sqrt(s)),
/// rsqrt(s) or div(1, sqrt(s)).
static Value matchInverseSqrt(Value v) {
  if (!v.hasOneUse())
    return {};
  Value root;
  if (auto r = v.getDefiningOp<RsqrtOp>())
    return r.getInput();
  if (auto r = v.getDefiningOp<ReciprocalOp>())
    root = r.getInput();
  else if (auto d = v.getDefiningOp<DivOp>();
           d && isScalarConstant(d.getLhs(), 1.0))
    root = d.getRhs();
  auto sqrt = root ? root.getDefiningOp<SqrtOp>() : SqrtOp();
  if (!sqrt || !root.hasOneUse())
    return {};
  return sqrt.getInput();
}

/// True when `v` (single use) is x^2: pow(x, 2) or x * x.
static bool isSquareOf(Value v, Value x) {
  if (!v.hasOneUse())
    return false;
  if (auto pow = v.getDefiningOp<PowOp>())
    return pow.getLhs() == x && isScalarConstant(pow.getRhs(), 2.0);
  if (auto mul = v.getDefiningOp<MulOp>())
    return mul.getLhs() == x && mul.getRhs() == x;
  return false;
}

// x * (1 / sqrt(reduce_mean(x^2) + eps)) = rms_norm(x)
struct RaiseRmsNorm : RewritePattern {
  RaiseRmsNorm(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isa<MulOp, DivOp>(op))
      return failure();
    // Candidate (x, denominator radicand) pairs.
    SmallVector<std::pair<Value, Value>, 2> candidates;
    if (auto div = dyn_cast<DivOp>(op)) {
      auto sqrt = div.getRhs().getDefiningOp<SqrtOp>();
      if (sqrt && div.getRhs().hasOneUse())
        candidates.push_back({div.getLhs(), sqrt.getInput()});
    } else {
      for (auto [x, inv] : {std::pair(op->getOperand(0), op->getOperand(1)),
                            std::pair(op->getOperand(1), op->getOperand(0))})
        if (Value s = matchInverseSqrt(inv))
          candidates.push_back({x, s});
    }
    if (candidates.empty())
      return rewriter.notifyMatchFailure(op, "no 1/sqrt(...) operand");
    for (auto [x, s] : candidates) {
      auto add = s.getDefiningOp<AddOp>();
      if (!add || !s.hasOneUse())
        continue;
      for (auto [ms, epsValue] : {std::pair(add.getLhs(), add.getRhs()),
                                  std::pair(add.getRhs(), add.getLhs())}) {
        auto mean = ms.getDefiningOp<ReduceMeanOp>();
        auto eps = getScalarConstant(epsValue);
        if (!mean || !eps || !ms.hasOneUse() || !mean.getKeepdims())
          continue;
        auto first = trailingAxes(mean);
        if (!first)
          return rewriter.notifyMatchFailure(
              op, "mean is not over the trailing dims");
        if (!isSquareOf(mean.getInput(), x))
          return rewriter.notifyMatchFailure(op, "mean is not of x^2");
        if (*eps < 0)
          return rewriter.notifyMatchFailure(op, "negative epsilon");
        if (x.getType() != op->getResult(0).getType() ||
            add.getType() != mean.getType())
          return rewriter.notifyMatchFailure(op, "the formula broadcasts x");
        return rewrite(op, x, *first, *eps, rewriter);
      }
    }
    return rewriter.notifyMatchFailure(op, "no reduce_mean(x^2) + eps");
  }

  /// Replaces `op` (or the down-cast that is its only user, when x is an
  /// up-cast of the same type) with rms_norm.
  static LogicalResult rewrite(Operation *op, Value x, int64_t first,
                               double eps, PatternRewriter &rewriter) {
    Operation *root = op;
    Value input = x;
    if (auto up = x.getDefiningOp<CastOp>(); up && op->hasOneUse()) {
      auto down = dyn_cast<CastOp>(*op->getUsers().begin());
      if (down && down.getType() == up.getInput().getType() &&
          isa<FloatType>(elementTypeOf(up.getInput()))) {
        root = down;
        input = up.getInput();
      }
    }
    int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
    rewriter.replaceOpWithNewOp<RmsNormOp>(
        root, input, Value(), normAxisAttr(first, rank),
        APFloat(shortestDecimal(eps, elementTypeOf(x))));
    return success();
  }
};

// rms_norm(x) * w = rms_norm(x) weight w
struct AbsorbRmsNormWeight : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [n, w] : {std::pair(op.getLhs(), op.getRhs()),
                        std::pair(op.getRhs(), op.getLhs())}) {
      auto norm = n.getDefiningOp<RmsNormOp>();
      if (!norm || norm.getWeight())
        continue;
      if (!n.hasOneUse())
        return rewriter.notifyMatchFailure(op, "rms_norm has other uses");
      if (!isNormParam(w, n, norm.getAxis()))
        return rewriter.notifyMatchFailure(
            op, "factor is not shaped like the normalized dims");
      rewriter.replaceOpWithNewOp<RmsNormOp>(op, norm.getInput(), w,
                                             norm.getAxis(),
                                             norm.getEpsilon());
      return success();
    }
    return rewriter.notifyMatchFailure(op, "no unweighted rms_norm operand");
  }
};

struct RaiseRmsNormPass : mlir::llmc::impl::RaiseRmsNormPassBase<RaiseRmsNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateRaiseRmsNormPatterns(patterns);
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  getArgument())))
      signalPassFailure();
  }
};

} // namespace

void mlir::llmc::populateRaiseRmsNormPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseRmsNorm, AbsorbRmsNormWeight>(patterns.getContext());
}
