//===- AppendLoss.cpp - Append a cross-entropy loss to a logits graph -----===//
//
// Exported language models often stop at the logits. This pass gives such a
// @forward a `targets` input and a mean cross-entropy result named `loss`,
// so that llmc-autodiff has a loss to differentiate. The logits stay an
// output (evaluation wants them; autodiff drops what the loss does not use).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/TrainingUtils.h"

#include "dialects/llmc/LlmcOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

#define DEBUG_TYPE "llmc-append-loss"

namespace mlir::llmc {
#define GEN_PASS_DEF_APPENDLOSSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

struct AppendLossPass : mlir::llmc::impl::AppendLossPassBase<AppendLossPass> {
  using AppendLossPassBase::AppendLossPassBase;

  void runOnOperation() override {
    auto forward = lookupFunction(getOperation(), "forward", "llmc-append-loss",
                                  "the loss is appended to @forward");
    if (failed(forward) || failed(append(*forward)))
      return signalPassFailure();
  }

  FailureOr<unsigned> findLogits(func::FuncOp func) {
    SmallVector<unsigned> candidates;
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto type = dyn_cast<RankedTensorType>(func.getResultTypes()[i]);
      bool match = !logits.empty() ? outputName(func, i) == logits
                                   : type && type.getRank() >= 2 &&
                                         isa<FloatType>(type.getElementType());
      if (match)
        candidates.push_back(i);
    }
    if (!logits.empty() && candidates.empty())
      return func.emitError("llmc-append-loss: @forward has no result named '")
             << logits << "' (llmc.output)";
    if (candidates.size() != 1)
      return func.emitError("llmc-append-loss: @forward has ")
             << candidates.size()
             << " float results of rank >= 2; name the logits with --logits";
    Type type = func.getResultTypes()[candidates.front()];
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || tensor.getRank() < 1 ||
        !isa<FloatType>(tensor.getElementType()))
      return func.emitError("llmc-append-loss: the logits '")
             << logits << "' have type " << type
             << "; they must be a float tensor [..., classes]";
    return candidates.front();
  }

  /// True when `func` returns a rank-0 float value: a loss for autodiff.
  static bool hasLoss(func::FuncOp func) {
    return llvm::any_of(func.getResultTypes(), [](Type t) {
      auto type = dyn_cast<RankedTensorType>(t);
      return type && type.getRank() == 0 &&
             isa<FloatType>(type.getElementType());
    });
  }

  LogicalResult append(func::FuncOp func) {
    if (ifNoLoss && hasLoss(func))
      return success();
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (outputName(func, i) == "loss")
        return func.emitError("llmc-append-loss: @forward already has an "
                              "output named 'loss'");
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto name = func.getArgAttrOfType<StringAttr>(i, "llmc.input");
          name && name.getValue() == "targets")
        return func.emitError("llmc-append-loss: @forward already has an "
                              "input named 'targets'");
    auto index = findLogits(func);
    if (failed(index))
      return failure();
    Operation *ret = func.getBody().front().getTerminator();
    Value logitsValue = ret->getOperand(*index);
    auto logitsType = cast<RankedTensorType>(logitsValue.getType());

    OpBuilder b(ret);
    MLIRContext *ctx = &getContext();
    auto targetsType = RankedTensorType::get(logitsType.getShape().drop_back(),
                                             b.getI64Type());
    Location loc = NameLoc::get(b.getStringAttr("loss"), func.getLoc());
    BlockArgument targets =
        appendArgument(func, targetsType,
                       b.getDictionaryAttr(b.getNamedAttr(
                           "llmc.input", b.getStringAttr("targets"))),
                       NameLoc::get(b.getStringAttr("targets"), func.getLoc()));
    Value loss = b.create<CrossEntropyOp>(
        loc, LossReductionAttr::get(ctx, LossReduction::mean), logitsValue,
        targets, b.getI64IntegerAttr(ignoreIndex), IntegerAttr());

    SmallVector<Value> results(ret->getOperands());
    SmallVector<DictionaryAttr> attrs;
    func.getAllResultAttrs(attrs);
    results.push_back(loss);
    attrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr("llmc.output", b.getStringAttr("loss"))));
    setResults(func, results, attrs);
    return success();
  }
};

} // namespace
