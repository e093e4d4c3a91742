//===- RaiseSoftmax.cpp - Raise decomposed softmax and log-softmax ---------===//
//
// ONNX Softmax/LogSoftmax import directly; these patterns catch the
// hand-written forms (TorchScript of custom code, older exporters):
//   softmax:     e / reduce_sum(e)  with e = exp(x - reduce_max(x)) or exp(x)
//   log_softmax: z - log(reduce_sum(exp(z)))  with z = x - reduce_max(x)
// All reductions are over one axis with keepdims. Dropping the max is
// exact in real arithmetic, and the composite ops subtract it themselves.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/RaisePatterns.h"
#include "passes/RaiseUtils.h"

#define DEBUG_TYPE "llmc-raise-softmax"

namespace mlir::llmc {
#define GEN_PASS_DEF_RAISESOFTMAXPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::raise;

namespace {

/// The single axis of a keepdims reduction, or std::nullopt.
template <typename ReduceOp> static std::optional<int64_t> singleAxis(ReduceOp op) {
  if (!op || !op.getKeepdims() || op.getAxes().size() != 1)
    return std::nullopt;
  return op.getAxes()[0];
}

/// x when `z` is x - reduce_max(x) over `axis` (the max used only there),
/// or `z` itself when it is no such difference.
static Value stripMax(Value z, int64_t axis) {
  auto sub = z.getDefiningOp<SubOp>();
  if (!sub)
    return z;
  auto max = sub.getRhs().getDefiningOp<ReduceMaxOp>();
  if (max && max.getInput() == sub.getLhs() && singleAxis(max) == axis &&
      sub.getRhs().hasOneUse() && sub.getType() == sub.getLhs().getType())
    return sub.getLhs();
  return z;
}

static int64_t axisAttr(int64_t axis, Value x) {
  return axis == cast<RankedTensorType>(x.getType()).getRank() - 1 ? -1 : axis;
}

// exp(x - max(x)) / sum(exp(x - max(x))) = softmax(x)
struct RaiseSoftmax : RewritePattern {
  RaiseSoftmax(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    Value e, sum;
    if (auto div = dyn_cast<DivOp>(op)) {
      e = div.getLhs();
      sum = div.getRhs();
    } else if (auto mul = dyn_cast<MulOp>(op)) {
      for (auto [a, b] : {std::pair(mul.getLhs(), mul.getRhs()),
                          std::pair(mul.getRhs(), mul.getLhs())})
        if (auto r = b.getDefiningOp<ReciprocalOp>(); r && b.hasOneUse()) {
          e = a;
          sum = r.getInput();
        }
      if (!e)
        return rewriter.notifyMatchFailure(op, "no reciprocal factor");
    } else {
      return failure();
    }
    auto exp = e.getDefiningOp<ExpOp>();
    auto reduce = sum.getDefiningOp<ReduceSumOp>();
    if (!exp || !reduce || reduce.getInput() != e)
      return rewriter.notifyMatchFailure(op, "not exp(z) / reduce_sum(exp(z))");
    auto axis = singleAxis(reduce);
    if (!axis)
      return rewriter.notifyMatchFailure(op, "sum is not over one axis");
    if (!sum.hasOneUse() || !onlyUsedBy(e, {op, reduce.getOperation()}))
      return rewriter.notifyMatchFailure(op, "intermediate has other uses");
    Value x = stripMax(exp.getInput(), *axis);
    if (x != exp.getInput() && !exp.getInput().hasOneUse())
      return rewriter.notifyMatchFailure(op, "x - max has other uses");
    if (x.getType() != op->getResult(0).getType())
      return rewriter.notifyMatchFailure(op, "formula broadcasts x");
    rewriter.replaceOpWithNewOp<SoftmaxOp>(op, x, axisAttr(*axis, x));
    return success();
  }
};

// (x - max(x)) - log(sum(exp(x - max(x)))) = log_softmax(x)
struct RaiseLogSoftmax : OpRewritePattern<SubOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SubOp op,
                                PatternRewriter &rewriter) const override {
    Value z = op.getLhs();
    auto log = op.getRhs().getDefiningOp<LogOp>();
    auto reduce = log ? log.getInput().getDefiningOp<ReduceSumOp>()
                      : ReduceSumOp();
    auto exp = reduce ? reduce.getInput().getDefiningOp<ExpOp>() : ExpOp();
    if (!exp || exp.getInput() != z)
      return rewriter.notifyMatchFailure(op, "not z - log(sum(exp(z)))");
    auto axis = singleAxis(reduce);
    if (!axis)
      return rewriter.notifyMatchFailure(op, "sum is not over one axis");
    if (!op.getRhs().hasOneUse() || !log.getInput().hasOneUse() ||
        !reduce.getInput().hasOneUse())
      return rewriter.notifyMatchFailure(op, "intermediate has other uses");
    Value x = stripMax(z, *axis);
    if (x != z && !onlyUsedBy(z, {op, exp}))
      return rewriter.notifyMatchFailure(op, "x - max has other uses");
    if (x.getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "formula broadcasts x");
    rewriter.replaceOpWithNewOp<LogSoftmaxOp>(op, x, axisAttr(*axis, x));
    return success();
  }
};

struct RaiseSoftmaxPass : mlir::llmc::impl::RaiseSoftmaxPassBase<RaiseSoftmaxPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateRaiseSoftmaxPatterns(patterns);
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  getArgument())))
      signalPassFailure();
  }
};

} // namespace

void mlir::llmc::populateRaiseSoftmaxPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseSoftmax, RaiseLogSoftmax>(patterns.getContext());
}
