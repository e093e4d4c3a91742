//===- Autodiff.cpp - Reverse-mode autodiff into @train_step --------------===//
//
// Builds `@train_step(params, inputs) -> (loss, grads)` from `@forward`
// (docs/training-ir.md). Preconditions: static shapes, a rank-0 float loss.
//
// 1. Clone @forward as @train_step and pick the loss result.
// 2. Activity: a value is active when it is float and depends on a trainable
//    parameter. Only active values get cotangents.
// 3. Seed the loss with 1 (with `loss-scale`, the dynamic loss scale: a
//    state argument) and walk the ops in reverse program order. An op with
//    a cotangent on some result and an active operand builds its VJP
//    through DifferentiableOpInterface, at the end of the body; cotangents
//    of values with several uses are summed as they arrive (every use comes
//    after the definition, so all have arrived when the definition is
//    reached).
// 4. Return (loss, one cotangent per trainable parameter, in argument
//    order; zeros for a parameter the loss does not depend on), and delete
//    the forward ops the loss does not need.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/TrainingUtils.h"

#include "dialects/llmc/LlmcOps.h"
#include "dialects/llmc/VjpUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

#define DEBUG_TYPE "llmc-autodiff"

namespace mlir::llmc {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

bool isFloatTensor(Value v) {
  return isa<FloatType>(getElementTypeOrSelf(v.getType()));
}

/// Cotangents, summed as the uses of a value report theirs.
class Cotangents {
public:
  explicit Cotangents(OpBuilder &b) : b(b) {}

  Value get(Value v) const { return map.lookup(v); }

  void accumulate(Value v, Value grad) {
    Value &slot = map[v];
    slot = slot ? b.create<AddOp>(v.getLoc(), slot, grad).getResult() : grad;
  }

private:
  OpBuilder &b;
  DenseMap<Value, Value> map;
};

struct AutodiffPass : mlir::llmc::impl::AutodiffPassBase<AutodiffPass> {
  using AutodiffPassBase::AutodiffPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = lookupFunction(module, "forward", "llmc-autodiff",
                                  "autodiff differentiates @forward "
                                  "(docs/model-ir.md)");
    if (failed(forward))
      return signalPassFailure();
    if (module.lookupSymbol("train_step")) {
      module.emitError("llmc-autodiff: the module already has a "
                       "@train_step; run autodiff once");
      return signalPassFailure();
    }
    if (failed(checkStaticShapes(*forward)))
      return signalPassFailure();
    auto lossIndex = findLoss(*forward);
    if (failed(lossIndex))
      return signalPassFailure();

    func::FuncOp train = forward->clone();
    train.setName("train_step");
    SymbolTable(module).insert(
        train, std::next(forward->getOperation()->getIterator()));
    if (failed(differentiate(train, *lossIndex)))
      return signalPassFailure();
    if (!keepForward)
      forward->erase();
  }

  LogicalResult checkStaticShapes(func::FuncOp func) {
    for (BlockArgument arg : func.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type)
        return emitError(arg.getLoc())
               << "llmc-autodiff: argument " << arg.getArgNumber()
               << " has type " << arg.getType()
               << "; model arguments are ranked tensors (docs/model-ir.md)";
      if (!type.hasStaticShape())
        return emitError(arg.getLoc())
               << "llmc-autodiff: argument " << arg.getArgNumber()
               << " has dynamic shape " << arg.getType()
               << "; specialize shapes first (--shape NAME=VALUE)";
    }
    WalkResult walk = func.walk([](Operation *op) {
      for (Type t : op->getResultTypes())
        if (auto shaped = dyn_cast<ShapedType>(t);
            shaped && !shaped.hasStaticShape()) {
          op->emitError("llmc-autodiff: result type ")
              << t << " is dynamic; specialize shapes first "
              << "(--shape NAME=VALUE)";
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }

  /// The result named by --loss, or the only rank-0 float result.
  FailureOr<unsigned> findLoss(func::FuncOp func) {
    ArrayRef<Type> results = func.getResultTypes();
    SmallVector<unsigned> candidates;
    auto isScalarFloat = [](Type t) {
      auto tensor = dyn_cast<RankedTensorType>(t);
      return tensor && tensor.getRank() == 0 &&
             isa<FloatType>(tensor.getElementType());
    };
    for (unsigned i = 0; i < results.size(); ++i)
      if (!loss.empty() ? outputName(func, i) == loss
                        : isScalarFloat(results[i]))
        candidates.push_back(i);
    if (!loss.empty() && candidates.empty())
      return func.emitError("llmc-autodiff: @forward has no result named '")
             << loss << "' (llmc.output)";
    if (candidates.empty())
      return func.emitError("llmc-autodiff: @forward has no rank-0 float "
                            "result to use as the loss; append one "
                            "(--llmc-append-loss) or name it with --loss");
    if (candidates.size() > 1)
      return func.emitError("llmc-autodiff: @forward has ")
             << candidates.size()
             << " rank-0 float results; name the loss with --loss";
    Type lossType = results[candidates.front()];
    if (!isScalarFloat(lossType))
      return func.emitError("llmc-autodiff: the loss '")
             << loss << "' has type " << lossType
             << "; it must be a rank-0 float tensor";
    return candidates.front();
  }

  /// The cotangent of the loss: 1, or with `loss-scale` the dynamic loss
  /// scale, a rank-0 f32 state argument ("amp.scale", starting at the
  /// option's value) that llmc-append-optimizer updates. Seeding with the
  /// scale is multiplying the loss by it before the backward: every
  /// cotangent is scaled, so small fp16 gradients do not flush to zero.
  Value seed(func::FuncOp func, OpBuilder &b, Value loss) {
    auto type = cast<RankedTensorType>(loss.getType());
    if (lossScale <= 0)
      return vjp::GradBuilder(b, loss.getLoc()).splat(type, 1.0);
    auto f32 = RankedTensorType::get({}, b.getF32Type());
    NamedAttribute attrs[] = {
        b.getNamedAttr("llmc.state", b.getStringAttr("amp.scale")),
        b.getNamedAttr("llmc.init",
                       DenseElementsAttr::get(
                           f32, b.getFloatAttr(b.getF32Type(), lossScale)))};
    Value scale = appendArgument(func, f32, b.getDictionaryAttr(attrs),
                                 NameLoc::get(b.getStringAttr("loss_scale"),
                                              func.getLoc()));
    if (type.getElementType() != b.getF32Type())
      scale = b.create<CastOp>(loss.getLoc(), type, scale);
    return scale;
  }

  LogicalResult differentiate(func::FuncOp func, unsigned lossIndex) {
    Block &body = func.getBody().front();
    Operation *ret = body.getTerminator();

    // Step 2: activity.
    llvm::DenseSet<Value> active;
    SmallVector<BlockArgument> trainable;
    for (BlockArgument arg : func.getArguments())
      if (isTrainable(func, arg.getArgNumber())) {
        trainable.push_back(arg);
        active.insert(arg);
      }
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator()) {
      ops.push_back(&op);
      if (llvm::any_of(op.getOperands(),
                       [&](Value v) { return active.contains(v); }))
        for (Value r : op.getResults())
          if (isFloatTensor(r))
            active.insert(r);
    }

    // Step 3: reverse sweep. Backward ops go before the return.
    OpBuilder b(ret);
    vjp::GradBuilder gb(b, ret->getLoc());
    Cotangents cot(b);
    Value lossValue = ret->getOperand(lossIndex);
    if (!active.contains(lossValue))
      emitWarning(func.getLoc())
          << "llmc-autodiff: the loss does not depend on any trainable "
             "parameter; every gradient is zero";
    cot.accumulate(lossValue, seed(func, b, lossValue));
    for (Operation *op : llvm::reverse(ops))
      if (failed(differentiateOp(op, b, active, cot)))
        return failure();

    // Step 4: results and cleanup.
    SmallVector<Value> results = {lossValue};
    SmallVector<DictionaryAttr> attrs = {func.getResultAttrDict(lossIndex)};
    for (BlockArgument arg : trainable) {
      Value grad = cot.get(arg);
      results.push_back(grad ? grad : gb.splat(arg.getType(), 0.0));
      attrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          "llmc.grad_of",
          b.getStringAttr(paramName(func, arg.getArgNumber())))));
    }
    setResults(func, results, attrs);
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (isOpTriviallyDead(&op))
        op.erase();
    return success();
  }

  LogicalResult differentiateOp(Operation *op, OpBuilder &b,
                                const llvm::DenseSet<Value> &active,
                                Cotangents &cot) {
    bool hasCotangent = llvm::any_of(op->getResults(),
                                     [&](Value r) { return bool(cot.get(r)); });
    SmallVector<bool> wanted;
    for (Value v : op->getOperands())
      wanted.push_back(active.contains(v));
    if (!hasCotangent || llvm::none_of(wanted, [](bool w) { return w; }))
      return success();
    auto rule = dyn_cast<DifferentiableOpInterface>(op);
    if (!rule)
      return op->emitError("'")
             << op->getName()
             << "' has no gradient rule; the loss depends on a trainable "
                "parameter through it (mark the parameter llmc.frozen, or "
                "give the op a DifferentiableOpInterface rule)";
    vjp::GradBuilder gb(b, op->getLoc());
    SmallVector<Value> resultGrads;
    for (Value r : op->getResults()) {
      Value g = cot.get(r);
      resultGrads.push_back(g ? g : gb.splat(r.getType(), 0.0));
    }
    SmallVector<Value> operandGrads(op->getNumOperands());
    if (failed(rule.buildVjp(b, resultGrads, wanted, operandGrads)))
      return failure();
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      if (!wanted[i])
        continue;
      Value g = operandGrads[i];
      if (!g)
        return op->emitError("internal error: the gradient rule of '")
               << op->getName() << "' gave no cotangent for operand " << i;
      if (g.getType() != operand.getType())
        return op->emitError("internal error: the gradient rule of '")
               << op->getName() << "' gave a cotangent of type " << g.getType()
               << " for operand " << i << " of type " << operand.getType();
      cot.accumulate(operand, g);
    }
    return success();
  }
};

} // namespace
