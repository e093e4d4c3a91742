//===- AccumulateGradients.cpp - Split @train_step for accumulation -------===//
//
// Gradient accumulation over a window of micro-batches (docs/memory.md):
// the step becomes an accumulate step run once per micro-batch and an
// apply step run once per window. Runs after llmc-autodiff and before
// llmc-append-optimizer, which then turns the apply step into the full
// update exactly as it would a plain step.
//
// 1. The loss must be a mean `llmc.cross_entropy`: it and every
//    `llmc.cross_entropy_grad` of the same targets become `sum`, so the
//    gradients are those of the micro-batch's summed loss.
// 2. @accumulate_step is the step with accumulators as state (llmc.state
//    "accum.grad" per parameter, "accum.loss", "accum.count", all starting
//    at zero) and returns their next values:
//      acc_g' = acc_g + dsum/dp      acc_loss' = acc_loss + sum
//      acc_count' = acc_count + #(targets != ignore_index)
// 3. @train_step becomes the apply step: the parameters and the
//    accumulators as inputs ("accum.grad:<param>", "accum.loss",
//    "accum.count"), returning (acc_loss / acc_count, acc_g / acc_count...),
//    the loss and gradients of the whole window, normalized by the tokens
//    it counted (not a mean of micro-batch means).
//
// One micro-batch through both gives the plain step's loss and gradients
// up to the rounding of one division (sum / n instead of the mean's).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/TrainingUtils.h"

#include "dialects/llmc/LlmcOps.h"
#include "dialects/llmc/VjpUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"

#define DEBUG_TYPE "llmc-accumulate-gradients"

namespace mlir::llmc {
#define GEN_PASS_DEF_ACCUMULATEGRADIENTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

struct AccumulateGradientsPass
    : mlir::llmc::impl::AccumulateGradientsPassBase<AccumulateGradientsPass> {
  using AccumulateGradientsPassBase::AccumulateGradientsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto train =
        lookupFunction(module, "train_step", "llmc-accumulate-gradients",
                       "run llmc-autodiff first");
    if (failed(train))
      return signalPassFailure();
    if (module.lookupSymbol("accumulate_step")) {
      module.emitError("llmc-accumulate-gradients: the module already has "
                       "@accumulate_step; run the pass once");
      return signalPassFailure();
    }
    if (failed(check(*train)) || failed(sumLoss(*train)))
      return signalPassFailure();
    buildAccumulate(*train);
    buildApply(*train);
  }

  CrossEntropyOp loss_;

  /// (loss, grads...) from llmc-autodiff, with no optimizer yet.
  LogicalResult check(func::FuncOp func) {
    if (func.getNumResults() == 0 || outputName(func, 0) != "loss")
      return func.emitError("llmc-accumulate-gradients: @train_step must "
                            "return the loss first (run llmc-autodiff)");
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (func.getArgAttr(i, "llmc.state"))
        return func.emitError("llmc-accumulate-gradients: @train_step "
                              "already has state (argument ")
               << i << "); run the pass before llmc-append-optimizer";
    for (unsigned i = 1; i < func.getNumResults(); ++i)
      if (!func.getResultAttr(i, "llmc.grad_of"))
        return func.emitError("llmc-accumulate-gradients: @train_step result ")
               << i << " is not a gradient (no llmc.grad_of)";
    Value loss = func.getBody().front().getTerminator()->getOperand(0);
    loss_ = loss.getDefiningOp<CrossEntropyOp>();
    if (!loss_ || loss_.getReduction() != LossReduction::mean)
      return func.emitError("llmc-accumulate-gradients: the loss must be a "
                            "mean llmc.cross_entropy, so that a window can "
                            "count its tokens; it is ")
             << (loss.getDefiningOp()
                     ? "'" + loss.getDefiningOp()->getName().getStringRef() +
                           "'"
                     : std::string("an argument"));
    return success();
  }

  /// mean => sum in the loss and its gradient ops.
  LogicalResult sumLoss(func::FuncOp func) {
    auto sum = LossReductionAttr::get(func.getContext(), LossReduction::sum);
    loss_.setReductionAttr(sum);
    func.walk([&](CrossEntropyGradOp g) {
      if (g.getTargets() == loss_.getTargets() &&
          g.getReduction() == LossReduction::mean)
        g.setReductionAttr(sum);
    });
    return success();
  }

  /// #(targets != ignore_index) as a rank-0 value of `like`'s type.
  Value countTokens(vjp::GradBuilder &b, Value like) {
    Value targets = loss_.getTargets();
    Type index = getElementTypeOrSelf(targets.getType());
    Value valid = b.compare(ComparePredicate::ne, targets,
                            b.scalar(index, loss_.getIgnoreIndex()));
    Value ones = b.indicator(valid, like);
    auto rank = cast<RankedTensorType>(targets.getType()).getRank();
    SmallVector<int64_t> axes;
    for (int64_t a = 0; a < rank; ++a)
      axes.push_back(a);
    return b.reduceSum(ones, axes, /*keepdims=*/false);
  }

  void buildAccumulate(func::FuncOp train) {
    OpBuilder mb(train);
    auto acc = cast<func::FuncOp>(mb.clone(*train));
    acc.setSymName("accumulate_step");
    MLIRContext *ctx = acc.getContext();
    Operation *ret = acc.getBody().front().getTerminator();
    SmallVector<Value> values(ret->getOperands());
    OpBuilder ob(ret);
    Location loc = NameLoc::get(ob.getStringAttr("accumulate"), acc.getLoc());
    vjp::GradBuilder b(ob, loc);
    // The clone's loss op: the same position in the cloned body.
    Value lossSum = values[0];
    loss_ = lossSum.getDefiningOp<CrossEntropyOp>();
    Value count = countTokens(b, lossSum);

    auto str = [&](StringRef s) { return StringAttr::get(ctx, s); };
    auto state = [&](StringRef kind, StringRef of) {
      SmallVector<NamedAttribute> a = {{str("llmc.state"), str(kind)},
                                       {str("llmc.init_rule"), str("zeros")}};
      if (!of.empty())
        a.push_back({str("llmc.state_of"), str(of)});
      return DictionaryAttr::get(ctx, a);
    };
    SmallVector<Value> results;
    SmallVector<DictionaryAttr> attrs;
    auto accumulate = [&](Value add, StringRef kind, StringRef of) {
      BlockArgument arg =
          appendArgument(acc, add.getType(), state(kind, of), loc);
      SmallVector<NamedAttribute> a = {{str("llmc.state"), str(kind)}};
      if (!of.empty())
        a.push_back({str("llmc.state_of"), str(of)});
      a.push_back({str("llmc.next"), IntegerAttr::get(IntegerType::get(ctx, 64),
                                                      arg.getArgNumber())});
      results.push_back(b.add(arg, add));
      attrs.push_back(DictionaryAttr::get(ctx, a));
    };
    for (unsigned i = 1; i < values.size(); ++i)
      accumulate(
          values[i], "accum.grad",
          acc.getResultAttrOfType<StringAttr>(i, "llmc.grad_of").getValue());
    accumulate(lossSum, "accum.loss", "");
    accumulate(count, "accum.count", "");
    setResults(acc, results, attrs);
  }

  /// @train_step := the window's loss and gradients from the accumulators.
  void buildApply(func::FuncOp train) {
    MLIRContext *ctx = train.getContext();
    Block &body = train.getBody().front();
    Operation *ret = body.getTerminator();
    SmallVector<DictionaryAttr> attrs;
    for (unsigned i = 0; i < train.getNumResults(); ++i)
      attrs.push_back(train.getResultAttrDict(i));
    SmallVector<Type> gradTypes(train.getResultTypes().drop_front());
    Type lossType = train.getResultTypes()[0];
    SmallVector<StringAttr> gradOf;
    for (unsigned i = 1; i < train.getNumResults(); ++i)
      gradOf.push_back(
          train.getResultAttrOfType<StringAttr>(i, "llmc.grad_of"));

    // Empty the body, keeping only the parameter arguments.
    ret->erase();
    while (!body.empty())
      body.back().erase();
    llvm::BitVector drop(train.getNumArguments());
    for (unsigned i = 0; i < train.getNumArguments(); ++i)
      drop[i] = paramName(train, i).empty();
    (void)train.eraseArguments(drop);

    OpBuilder ob = OpBuilder::atBlockEnd(&body);
    Location loc = NameLoc::get(ob.getStringAttr("apply"), train.getLoc());
    auto input = [&](Type type, std::string name) {
      return appendArgument(
          train, type,
          DictionaryAttr::get(
              ctx, {NamedAttribute(StringAttr::get(ctx, "llmc.input"),
                                   StringAttr::get(ctx, name))}),
          loc);
    };
    SmallVector<Value> grads;
    for (unsigned i = 0; i < gradTypes.size(); ++i)
      grads.push_back(
          input(gradTypes[i], "accum.grad:" + gradOf[i].getValue().str()));
    Value lossSum = input(lossType, "accum.loss");
    Value count = input(lossType, "accum.count");
    vjp::GradBuilder b(ob, loc);
    SmallVector<Value> results = {b.div(lossSum, count)};
    for (Value g : grads) {
      Type element = getElementTypeOrSelf(g.getType());
      Value n = count;
      if (element != getElementTypeOrSelf(lossType))
        n = ob.create<CastOp>(loc, RankedTensorType::get({}, element), count);
      results.push_back(b.div(g, n));
    }
    ob.create<func::ReturnOp>(loc, results);
    setResults(train, results, attrs);
  }
};

} // namespace
