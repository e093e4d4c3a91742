//===- RaiseCrossEntropy.cpp - Raise NLL of log_softmax to cross_entropy ---===//
//
// PyTorch decomposes F.cross_entropy(x, t, ignore_index=ii) as
//   valid = t != ii
//   picked = squeeze(gather_elements(log_softmax(x, -1), unsqueeze(where(valid, t, 0)), -1))
//   loss = where(valid, -picked, 0)
//   mean = reduce_sum(loss) / reduce_sum(cast(valid))
// and without ignore_index as reduce_mean(-picked). The per-position part is
// matched by one helper; the root patterns are the three reductions
// (masked mean, unmasked mean, sum). The HF causal-LM shift is slicing of x
// and t before all this and stays as it is.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/RaisePatterns.h"
#include "passes/RaiseUtils.h"

#define DEBUG_TYPE "llmc-raise-cross-entropy"

namespace mlir::llmc {
#define GEN_PASS_DEF_RAISECROSSENTROPYPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::raise;

namespace {

/// The per-position loss -log_softmax(x)[t], with its ignore mask if any.
struct PositionLoss {
  Value logits, targets;
  CompareOp valid;               // null when unmasked
  int64_t ignoreIndex = -100;    // the default when unmasked
  SmallVector<Operation *> maskUsers;
};

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// `t` and ii when `c` is compare ne (t, ii) or (ii, t), ii an integer
/// constant.
static std::optional<std::pair<Value, int64_t>> matchNotEqual(CompareOp c) {
  if (!c || c.getPredicate() != ComparePredicate::ne)
    return std::nullopt;
  for (auto [t, ii] : {std::pair(c.getLhs(), c.getRhs()),
                       std::pair(c.getRhs(), c.getLhs())}) {
    auto value = getScalarConstant(ii);
    if (value && isa<IntegerType>(elementTypeOf(t)) &&
        t.getType() == c.getType().clone(elementTypeOf(t)))
      return std::pair(t, static_cast<int64_t>(*value));
  }
  return std::nullopt;
}

/// Matches -squeeze(gather_elements(log_softmax(x), unsqueeze(ts))) where
/// ts is t, or where(valid, t, c) when `valid` is given.
static std::optional<PositionLoss> matchNegLogProb(Value nl, CompareOp valid) {
  Product p = collectProduct(nl);
  if (!nl.hasOneUse() || p.factors.size() != 1 || p.coefficient != -1.0)
    return std::nullopt;
  auto squeeze = p.factors[0].getDefiningOp<ReshapeOp>();
  auto ge = squeeze ? squeeze.getInput().getDefiningOp<GatherElementsOp>()
                    : GatherElementsOp();
  if (!ge || !p.factors[0].hasOneUse() || !squeeze.getInput().hasOneUse())
    return std::nullopt;
  auto lp = ge.getData().getDefiningOp<LogSoftmaxOp>();
  auto picked = cast<RankedTensorType>(ge.getType());
  int64_t rank = picked.getRank();
  if (!lp || !ge.getData().hasOneUse() || ge.getAxis() != rank - 1 ||
      (lp.getAxis() != -1 && lp.getAxis() != rank - 1) ||
      picked.getShape().back() != 1 ||
      squeeze.getType().getShape() != picked.getShape().drop_back())
    return std::nullopt;
  auto unsqueeze = ge.getIndices().getDefiningOp<ReshapeOp>();
  if (!unsqueeze || !ge.getIndices().hasOneUse())
    return std::nullopt;
  PositionLoss loss;
  loss.logits = lp.getInput();
  loss.targets = unsqueeze.getInput();
  if (valid) {
    auto safe = loss.targets.getDefiningOp<WhereOp>();
    if (!safe || safe.getCondition() != valid.getResult() ||
        !getScalarConstant(safe.getOnFalse()) ||
        !loss.targets.hasOneUse())
      return std::nullopt;
    loss.targets = safe.getOnTrue();
    loss.maskUsers.push_back(safe);
    auto ne = matchNotEqual(valid);
    if (!ne || ne->first != loss.targets)
      return std::nullopt;
    loss.valid = valid;
    loss.ignoreIndex = ne->second;
  }
  if (shapeOf(loss.targets) != squeeze.getType().getShape())
    return std::nullopt;
  return loss;
}

/// The per-position loss `l`: where(valid, -logp[t], 0) or -logp[t].
static std::optional<PositionLoss> matchPositionLoss(Value l) {
  if (auto w = l.getDefiningOp<WhereOp>()) {
    auto valid = w.getCondition().getDefiningOp<CompareOp>();
    if (!valid || !isScalarConstant(w.getOnFalse(), 0.0) || !l.hasOneUse())
      return std::nullopt;
    auto loss = matchNegLogProb(w.getOnTrue(), valid);
    if (loss)
      loss->maskUsers.push_back(w);
    return loss;
  }
  return matchNegLogProb(l, CompareOp());
}

/// True when `r` reduces over every dim of its input to a rank-0 tensor.
template <typename ReduceOp> static bool reducesAll(ReduceOp r) {
  return r && cast<RankedTensorType>(r.getType()).getRank() == 0 &&
         static_cast<int64_t>(r.getAxes().size()) ==
             r.getInput().getType().getRank();
}

/// The cast of `valid` to numbers when `count` (single use) is
/// reduce_sum(cast(valid)) over all dims, possibly cast after the sum.
static CastOp matchCount(Value count, CompareOp valid) {
  if (!valid || !count.hasOneUse())
    return {};
  if (auto c = count.getDefiningOp<CastOp>()) {
    count = c.getInput();
    if (!count.hasOneUse())
      return {};
  }
  auto sum = count.getDefiningOp<ReduceSumOp>();
  auto toNumber = sum ? sum.getInput().getDefiningOp<CastOp>() : CastOp();
  if (!reducesAll(sum) || !toNumber || !sum.getInput().hasOneUse() ||
      toNumber.getInput() != valid.getResult())
    return {};
  return toNumber;
}

static LogicalResult replaceWithLoss(Operation *root, const PositionLoss &loss,
                                     LossReduction reduction,
                                     PatternRewriter &rewriter) {
  if (root->getResult(0).getType() !=
      RankedTensorType::get({}, elementTypeOf(loss.logits)))
    return rewriter.notifyMatchFailure(root, "loss type differs from logits");
  rewriter.replaceOpWithNewOp<CrossEntropyOp>(root, reduction, loss.logits,
                                              loss.targets, loss.ignoreIndex,
                                              IntegerAttr());
  return success();
}

// reduce_sum(where(t != ii, -logp[t], 0)) / reduce_sum(cast(t != ii))
//   = cross_entropy mean {ignore_index = ii}
struct RaiseMaskedMean : OpRewritePattern<DivOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DivOp op,
                                PatternRewriter &rewriter) const override {
    auto sum = op.getLhs().getDefiningOp<ReduceSumOp>();
    if (!reducesAll(sum) || !op.getLhs().hasOneUse())
      return rewriter.notifyMatchFailure(op, "numerator is not a full sum");
    auto loss = matchPositionLoss(sum.getInput());
    if (!loss || !loss->valid)
      return rewriter.notifyMatchFailure(op, "not a masked NLL sum");
    CastOp toNumber = matchCount(op.getRhs(), loss->valid);
    if (!toNumber)
      return rewriter.notifyMatchFailure(op, "denominator is not the count");
    loss->maskUsers.push_back(toNumber);
    if (!onlyUsedBy(loss->valid.getResult(), loss->maskUsers))
      return rewriter.notifyMatchFailure(op, "ignore mask has other uses");
    return replaceWithLoss(op, *loss, LossReduction::mean, rewriter);
  }
};

// reduce_mean(-logp[t]) = cross_entropy mean
struct RaiseMean : OpRewritePattern<ReduceMeanOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceMeanOp op,
                                PatternRewriter &rewriter) const override {
    if (!reducesAll(op))
      return rewriter.notifyMatchFailure(op, "not a mean over all dims");
    auto loss = matchPositionLoss(op.getInput());
    if (!loss || loss->valid)
      return rewriter.notifyMatchFailure(
          op, "not an unmasked NLL (a masked one divides by the count)");
    return replaceWithLoss(op, *loss, LossReduction::mean, rewriter);
  }
};

// reduce_sum(where(t != ii, -logp[t], 0)) = cross_entropy sum {ignore_index}
struct RaiseSum : OpRewritePattern<ReduceSumOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceSumOp op,
                                PatternRewriter &rewriter) const override {
    if (!reducesAll(op))
      return rewriter.notifyMatchFailure(op, "not a sum over all dims");
    auto loss = matchPositionLoss(op.getInput());
    if (!loss)
      return rewriter.notifyMatchFailure(op, "not an NLL sum");
    // A sum divided by the count of valid positions is RaiseMaskedMean's.
    if (op->hasOneUse()) {
      auto div = dyn_cast<DivOp>(*op->getUsers().begin());
      if (div && div.getLhs() == op.getResult() &&
          matchCount(div.getRhs(), loss->valid))
        return rewriter.notifyMatchFailure(op, "numerator of a mean");
    }
    if (loss->valid && !onlyUsedBy(loss->valid.getResult(), loss->maskUsers))
      return rewriter.notifyMatchFailure(op, "ignore mask has other uses");
    return replaceWithLoss(op, *loss, LossReduction::sum, rewriter);
  }
};

struct RaiseCrossEntropyPass
    : mlir::llmc::impl::RaiseCrossEntropyPassBase<RaiseCrossEntropyPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateRaiseCrossEntropyPatterns(patterns);
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  getArgument())))
      signalPassFailure();
  }
};

} // namespace

void mlir::llmc::populateRaiseCrossEntropyPatterns(
    RewritePatternSet &patterns) {
  patterns.add<RaiseMaskedMean, RaiseMean, RaiseSum>(patterns.getContext());
}
