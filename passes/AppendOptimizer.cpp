//===- AppendOptimizer.cpp - Turn @train_step into a full training step ---===//
//
// Consumes the gradients that llmc-autodiff returns and returns updated
// parameters and optimizer state instead (docs/training-ir.md):
//
// 1. Map each `llmc.grad_of` result to its parameter argument.
// 2. Append the learning rate as a runtime input (`llmc.input = "lr"`,
//    tensor<f32>), so schedules never recompile.
// 3. Optionally clip all gradients by their global L2 norm (one
//    `llmc.global_norm`, then a rank-0 coefficient they are multiplied by).
// 4. Append the state arguments (`llmc.state`, zero-initialized) and build
//    the update: one `llmc.adamw_update` per parameter, or SGD's elementwise
//    momentum update.
// 5. Return (loss, [grad_norm], new params, new state); each result that
//    replaces an argument carries `llmc.next = <argument index>`, and state
//    results carry `llmc.state` like their arguments.
//
// Dynamic loss scaling (fp16, docs/precision.md): when llmc-autodiff seeded
// the backward with the state `amp.scale`, the gradients are unscaled
// first, their global norm is always computed (it is inf or NaN exactly
// when a gradient is: the overflow flag costs no kernel of its own), every
// new parameter and state value is `where(finite, new, old)` (the update
// is skipped on the device), and the scale is halved on overflow and
// doubled after `loss-scale-growth-interval` clean steps in a row, as
// torch.cuda.amp.GradScaler does. Its counters (`amp.growth_tracker`,
// `amp.skipped`) are state like the moments, so checkpoints carry them.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/TrainingUtils.h"

#include "dialects/llmc/LlmcOps.h"
#include "dialects/llmc/VjpUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

#include <limits>

#define DEBUG_TYPE "llmc-append-optimizer"

namespace mlir::llmc {
#define GEN_PASS_DEF_APPENDOPTIMIZERPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

/// One trainable parameter and its gradient.
struct ParamGrad {
  BlockArgument param;
  Value grad;
};

struct AppendOptimizerPass
    : mlir::llmc::impl::AppendOptimizerPassBase<AppendOptimizerPass> {
  using AppendOptimizerPassBase::AppendOptimizerPassBase;

  void runOnOperation() override {
    if (optimizer != "adamw" && optimizer != "sgd") {
      getOperation().emitError("llmc-append-optimizer: unknown optimizer '")
          << optimizer << "'; use adamw or sgd";
      return signalPassFailure();
    }
    auto train =
        lookupFunction(getOperation(), "train_step", "llmc-append-optimizer",
                       "run llmc-autodiff first");
    if (failed(train) || failed(rewrite(*train)))
      return signalPassFailure();
  }

  FailureOr<SmallVector<ParamGrad>> collectGrads(func::FuncOp func) {
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (func.getArgAttr(i, "llmc.state") &&
          BlockArgument(func.getArgument(i)) != lossScaleArg(func))
        return func.emitError("llmc-append-optimizer: @train_step already "
                              "has optimizer state; run the pass once");
    llvm::StringMap<unsigned> byName;
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (!paramName(func, i).empty())
        byName[paramName(func, i)] = i;
    Operation *ret = func.getBody().front().getTerminator();
    SmallVector<ParamGrad> grads;
    for (unsigned i = 1; i < func.getNumResults(); ++i) {
      auto of = func.getResultAttrOfType<StringAttr>(i, "llmc.grad_of");
      if (!of)
        return func.emitError("llmc-append-optimizer: @train_step result ")
               << i << " is not a gradient (no llmc.grad_of); expected "
               << "(loss, grads...) from llmc-autodiff";
      auto it = byName.find(of.getValue());
      if (it == byName.end())
        return func.emitError("llmc-append-optimizer: result ")
               << i << " is the gradient of '" << of.getValue()
               << "', which is not a parameter of @train_step";
      BlockArgument param = func.getArgument(it->second);
      if (!isa<RankedTensorType>(param.getType()) ||
          param.getType() != func.getResultTypes()[i])
        return func.emitError("llmc-append-optimizer: result ")
               << i << " (the gradient of '" << of.getValue() << "') has type "
               << func.getResultTypes()[i] << " but the parameter has type "
               << param.getType();
      grads.push_back({param, ret->getOperand(i)});
    }
    return grads;
  }

  /// The `amp.scale` state argument llmc-autodiff appended, or null.
  static BlockArgument lossScaleArg(func::FuncOp func) {
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto kind = func.getArgAttrOfType<StringAttr>(i, "llmc.state");
          kind && kind.getValue() == "amp.scale")
        return func.getArgument(i);
    return BlockArgument();
  }

  /// The type the norm accumulates in: f32 (f64 when a gradient is f64, for
  /// reference runs), whatever the gradients' types.
  static Type normType(OpBuilder &ob, ArrayRef<ParamGrad> grads) {
    for (const ParamGrad &pg : grads)
      if (getElementTypeOrSelf(pg.grad.getType()).isF64())
        return ob.getF64Type();
    return ob.getF32Type();
  }

  /// Multiplies every gradient by the rank-0 `coef` (of type normType),
  /// cast to the gradient's element type.
  static void scaleGrads(vjp::GradBuilder &b, MutableArrayRef<ParamGrad> grads,
                         Value coef) {
    OpBuilder &ob = b.builder();
    Type f32 = getElementTypeOrSelf(coef.getType());
    for (ParamGrad &pg : grads) {
      auto type = cast<RankedTensorType>(pg.grad.getType());
      Value c = coef;
      if (type.getElementType() != f32)
        c = ob.create<CastOp>(
            b.location(), RankedTensorType::get({}, type.getElementType()), c);
      pg.grad = b.mul(pg.grad, c);
    }
  }

  /// One `llmc.global_norm` over all gradients.
  static Value globalNorm(vjp::GradBuilder &b, ArrayRef<ParamGrad> grads) {
    OpBuilder &ob = b.builder();
    SmallVector<Value> all;
    for (const ParamGrad &pg : grads)
      all.push_back(pg.grad);
    return ob.create<GlobalNormOp>(
        b.location(), RankedTensorType::get({}, normType(ob, grads)), all);
  }

  /// Scales every gradient by min(1, clip / (norm + 1e-6)), `norm` their
  /// global norm.
  void clipGrads(vjp::GradBuilder &b, MutableArrayRef<ParamGrad> grads,
                 Value norm) {
    OpBuilder &ob = b.builder();
    Type f32 = normType(ob, grads);
    Value coef =
        b.div(b.scalar(f32, clipNorm), b.add(norm, b.scalar(f32, 1e-6)));
    coef = ob.create<MinOp>(b.location(), coef, b.scalar(f32, 1.0));
    scaleGrads(b, grads, coef);
  }

  /// The loss scaler's state and the step's overflow flag.
  struct Scaler {
    BlockArgument scale, tracker, skipped;
    Value finite; // i1 rank 0: every unscaled gradient is finite
  };

  /// Unscales the gradients by 1 / scale and sets `finite` from their
  /// global norm (returned): a gradient with an inf or NaN makes the norm
  /// inf or NaN. (A finite norm whose squares overflow f32, 1.8e19, would
  /// also count as an overflow; no trained model gets near it.)
  Value unscaleGrads(vjp::GradBuilder &b, MutableArrayRef<ParamGrad> grads,
                     Scaler &scaler) {
    OpBuilder &ob = b.builder();
    Type f32 = ob.getF32Type();
    Value inv = b.div(b.scalar(f32, 1.0), scaler.scale);
    if (normType(ob, grads) != f32)
      inv = ob.create<CastOp>(b.location(),
                              RankedTensorType::get({}, normType(ob, grads)),
                              inv);
    scaleGrads(b, grads, inv);
    Value norm = globalNorm(b, grads);
    scaler.finite = ob.create<CompareOp>(
        b.location(), ComparePredicate::lt, norm,
        b.scalar(getElementTypeOrSelf(norm.getType()),
                 std::numeric_limits<double>::infinity()));
    return norm;
  }

  /// The scale and counters after this step, as GradScaler.update():
  /// overflow: scale * backoff, tracker 0, skipped + 1; else tracker + 1,
  /// and at the growth interval scale * growth, tracker 0.
  void updateScaler(vjp::GradBuilder &b, const Scaler &s,
                    function_ref<void(Value, BlockArgument)> next) {
    OpBuilder &ob = b.builder();
    Location loc = b.location();
    Type f32 = ob.getF32Type(), i64 = ob.getI64Type();
    auto where = [&](Value c, Value t, Value f) -> Value {
      return ob.create<WhereOp>(loc, c, t, f);
    };
    Value counted = where(s.finite, b.add(s.tracker, b.scalar(i64, 1)),
                          b.scalar(i64, 0));
    Value grow = ob.create<CompareOp>(loc, ComparePredicate::ge, counted,
                                      b.scalar(i64, lossScaleGrowthInterval));
    Value grown = where(grow, b.mul(s.scale, b.scalar(f32, lossScaleGrowth)),
                        s.scale);
    next(where(s.finite, grown,
               b.mul(s.scale, b.scalar(f32, lossScaleBackoff))),
         s.scale);
    next(where(grow, b.scalar(i64, 0), counted), s.tracker);
    next(where(s.finite, s.skipped, b.add(s.skipped, b.scalar(i64, 1))),
         s.skipped);
  }

  LogicalResult rewrite(func::FuncOp func) {
    auto collected = collectGrads(func);
    if (failed(collected))
      return failure();
    SmallVector<ParamGrad> grads = std::move(*collected);
    Operation *ret = func.getBody().front().getTerminator();
    OpBuilder ob(ret);
    Location loc = NameLoc::get(ob.getStringAttr("optimizer"), func.getLoc());
    vjp::GradBuilder b(ob, loc);

    auto named = [&](StringRef key, StringRef value) {
      return ob.getNamedAttr(key, ob.getStringAttr(value));
    };
    auto zerosRule = named("llmc.init_rule", "zeros");
    Value lr =
        appendArgument(func, RankedTensorType::get({}, ob.getF32Type()),
                       ob.getDictionaryAttr(named("llmc.input", "lr")), loc);

    SmallVector<Value> results = {ret->getOperand(0)};
    SmallVector<DictionaryAttr> attrs = {func.getResultAttrDict(0)};
    Scaler scaler;
    scaler.scale = lossScaleArg(func);
    Value norm;
    if (scaler.scale)
      norm = unscaleGrads(b, grads, scaler);
    if (clipNorm > 0) {
      if (!norm)
        norm = globalNorm(b, grads);
      clipGrads(b, grads, norm);
    }
    if (norm) {
      results.push_back(norm);
      attrs.push_back(ob.getDictionaryAttr(named("llmc.output", "grad_norm")));
    }
    // A result replacing argument `arg`: llmc.next names it; state results
    // also repeat the argument's llmc.state / llmc.state_of. Under loss
    // scaling an overflowing step keeps the old value (the skipped update):
    // the selects are made after every update (below), so that
    // llmc-batch-adamw can merge the updates into one op before them.
    SmallVector<std::pair<size_t, BlockArgument>> kept;
    auto next = [&](Value v, BlockArgument arg) {
      if (scaler.finite && arg != scaler.scale && arg != scaler.tracker &&
          arg != scaler.skipped)
        kept.push_back({results.size(), arg});
      results.push_back(v);
      unsigned i = arg.getArgNumber();
      SmallVector<NamedAttribute> a = {
          ob.getNamedAttr("llmc.next", ob.getI64IntegerAttr(i))};
      for (StringRef key : {"llmc.state", "llmc.state_of"})
        if (Attribute value = func.getArgAttr(i, key))
          a.push_back(ob.getNamedAttr(key, value));
      attrs.push_back(ob.getDictionaryAttr(a));
    };
    auto stateArg = [&](StringRef kind, BlockArgument param) {
      SmallVector<NamedAttribute> a = {named("llmc.state", kind), zerosRule};
      if (param) {
        a.push_back(
            named("llmc.state_of", paramName(func, param.getArgNumber())));
        // Padded like its parameter (llmc-pad-shapes): users see the real
        // shape of the state too.
        if (Attribute real =
                func.getArgAttr(param.getArgNumber(), "llmc.real_shape"))
          a.push_back(ob.getNamedAttr("llmc.real_shape", real));
      }
      Type type =
          param ? param.getType() : RankedTensorType::get({}, ob.getI64Type());
      // The mutation test's planted mistake (docs/precision.md): AdamW
      // moments stored in bf16.
      if (param && stateType == "bf16" && kind.starts_with("adamw."))
        type = cast<RankedTensorType>(type).clone(ob.getBF16Type());
      return appendArgument(func, type, ob.getDictionaryAttr(a), loc);
    };
    double wd =
        weightDecay >= 0 ? weightDecay : (optimizer == "adamw" ? 0.01 : 0.0);
    auto decay = [&](BlockArgument p) {
      return cast<ShapedType>(p.getType()).getRank() >= decayMinRank ? wd : 0.0;
    };

    BlockArgument stepArg;
    if (optimizer == "adamw") {
      BlockArgument step = stateArg("step", BlockArgument());
      stepArg = step;
      Value newStep = b.add(step, b.scalar(ob.getI64Type(), 1));
      SmallVector<Value> newParams, ms, vs;
      SmallVector<BlockArgument> mArgs, vArgs;
      for (ParamGrad &pg : grads)
        mArgs.push_back(stateArg("adamw.m", pg.param));
      for (ParamGrad &pg : grads)
        vArgs.push_back(stateArg("adamw.v", pg.param));
      // State stored in another type than the parameter's is widened for
      // the update and rounded back after it.
      auto as = [&](Value v, Type t) -> Value {
        return v.getType() == t ? v : ob.create<CastOp>(loc, t, v).getResult();
      };
      for (auto [i, pg] : llvm::enumerate(grads)) {
        Type p = pg.param.getType();
        Value m = as(mArgs[i], p);
        Value v = as(vArgs[i], p);
        auto update = ob.create<AdamWUpdateOp>(
            loc, pg.param, pg.grad, m, v, lr, newStep, ob.getF64FloatAttr(beta1), ob.getF64FloatAttr(beta2),
            ob.getF64FloatAttr(epsilon), ob.getF64FloatAttr(decay(pg.param)));
        next(update.getNewParam(), pg.param);
        ms.push_back(as(update.getNewM(), mArgs[i].getType()));
        vs.push_back(as(update.getNewV(), vArgs[i].getType()));
      }
      next(newStep, step);
      for (auto [i, m] : llvm::enumerate(ms))
        next(m, mArgs[i]);
      for (auto [i, v] : llvm::enumerate(vs))
        next(v, vArgs[i]);
    } else {
      // torch.optim.SGD (dampening 0, no Nesterov): g += wd * p;
      // buf = momentum * buf + g; p -= lr * buf. A zero-initialized buffer
      // gives torch's first step (buf = g).
      SmallVector<std::pair<Value, BlockArgument>> buffers;
      for (ParamGrad &pg : grads) {
        Value g = pg.grad;
        if (decay(pg.param) != 0)
          g = b.add(g, b.scale(pg.param, decay(pg.param)));
        if (momentum != 0) {
          BlockArgument buf = stateArg("sgd.momentum", pg.param);
          g = b.add(b.scale(buf, momentum), g);
          buffers.push_back({g, buf});
        }
        Type element = getElementTypeOrSelf(pg.param.getType());
        Value lrT = lr;
        if (element != ob.getF32Type())
          lrT = ob.create<CastOp>(loc, RankedTensorType::get({}, element), lr);
        next(b.sub(pg.param, b.mul(g, lrT)), pg.param);
      }
      for (auto [value, buf] : buffers)
        next(value, buf);
    }
    // Training-mode dropout draws its mask from the step counter (the value
    // before this step's increment), so a replay or a resumed run draws the
    // same mask: wire it into every llmc.dropout_mask, with a counter of its
    // own when the optimizer keeps none (SGD).
    SmallVector<DropoutMaskOp> masks;
    func.walk([&](DropoutMaskOp m) {
      if (!m.getStep())
        masks.push_back(m);
    });
    if (!masks.empty()) {
      if (!stepArg) {
        stepArg = stateArg("step", BlockArgument());
        next(b.add(stepArg, b.scalar(ob.getI64Type(), 1)), stepArg);
      }
      for (DropoutMaskOp m : masks)
        m.getStepMutable().assign(stepArg);
    }
    for (auto [index, arg] : kept)
      results[index] =
          ob.create<WhereOp>(loc, scaler.finite, results[index], arg);
    if (scaler.scale) {
      scaler.tracker = stateArg("amp.growth_tracker", BlockArgument());
      scaler.skipped = stateArg("amp.skipped", BlockArgument());
      // The scale argument came from llmc-autodiff; its result repeats its
      // llmc.state like the other state results.
      updateScaler(b, scaler, next);
    }
    setResults(func, results, attrs);
    return success();
  }
};

} // namespace
