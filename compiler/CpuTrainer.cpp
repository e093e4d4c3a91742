//===- CpuTrainer.cpp - Training steps on the reference evaluator ---------===//
#include "compiler/CpuTrainer.h"
#include "compiler/Compile.h"
#include "compiler/Pipeline.h"
#include "compiler/eval/EvalMemory.h"
#include "compiler/eval/Evaluator.h"
#include "compiler/eval/ModelArguments.h"
#include "passes/Passes.h"
#include "runtime/Padding.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include <cmath>

namespace llmc {

using namespace mlir;

/// True when @forward has a rank-0 float result to differentiate.
static bool hasScalarLoss(func::FuncOp forward) {
  for (Type t : forward.getResultTypes()) {
    auto ranked = dyn_cast<RankedTensorType>(t);
    if (ranked && ranked.getRank() == 0 &&
        isa<FloatType>(ranked.getElementType()))
      return true;
  }
  return false;
}

FailureOr<std::unique_ptr<CpuTrainer>>
CpuTrainer::create(ModuleOp module, const OptimizerConfig *optimizer,
                   uint64_t seed, const PrecisionConfig &precision,
                   const std::string &injectNanOp,
                   const RecomputeConfig &recompute,
                   const FusionConfig *fusion) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return emitError(module.getLoc())
           << "the model has no func.func @forward (docs/model-ir.md)";
  PassManager pm(module.getContext());
  // A graph that ends in logits is trained with cross-entropy on a targets
  // input (llmc-append-loss), like a logits-only ONNX export.
  if (!hasScalarLoss(forward))
    pm.addPass(mlir::llmc::createAppendLossPass());
  if (!injectNanOp.empty()) {
    mlir::llmc::InjectNanPassOptions inject;
    inject.op = injectNanOp;
    pm.addPass(mlir::llmc::createInjectNanPass(inject));
  }
  // The same forward rewrites as the GPU's (compiler/Pipeline.cpp), so
  // that `llmc verify` checks what the GPU runs.
  addPadShapes(pm, precision);
  mlir::llmc::LowerPrecisionPassOptions lower;
  lower.precision = precision.precision;
  lower.mutation = precision.mutation;
  pm.addPass(mlir::llmc::createLowerPrecisionPass(lower));
  // keep-forward: evalLoss runs @forward, now with the casts too. fp16
  // scales the loss (also without an optimizer: the gradients of `step`
  // are then unscaled on the host, so they are what the GPU computes).
  mlir::llmc::AutodiffPassOptions autodiff;
  if (precision.precision == "fp16")
    autodiff.lossScale = precision.lossScaleInit;
  pm.addPass(mlir::llmc::createAutodiffPass(autodiff));
  if (optimizer && optimizer->accumulate)
    pm.addPass(mlir::llmc::createAccumulateGradientsPass());
  if (optimizer) {
    mlir::llmc::AppendOptimizerPassOptions o;
    o.optimizer = optimizer->kind;
    o.beta1 = optimizer->beta1;
    o.beta2 = optimizer->beta2;
    o.epsilon = optimizer->epsilon;
    o.weightDecay = optimizer->weightDecay;
    o.decayMinRank = optimizer->decayMinRank;
    o.momentum = optimizer->momentum;
    o.clipNorm = optimizer->clipNorm;
    o.lossScaleGrowthInterval = precision.lossScaleGrowthInterval;
    if (precision.mutation == "optimizer-state-bf16")
      o.stateType = "bf16";
    pm.addPass(mlir::llmc::createAppendOptimizerPass(o));
  }
  // Activation checkpointing as the GPU's step has it (no CSE runs here to
  // merge the copies back), so that verify checks recomputed steps.
  addRematerialize(pm, recompute);
  if (fusion)
    addRoundingFusions(pm, precision, *fusion);
  if (failed(pm.run(module)))
    return failure();

  auto trainer = std::make_unique<CpuTrainer>();
  trainer->func_ = module.lookupSymbol<func::FuncOp>("train_step");
  trainer->forward_ = module.lookupSymbol<func::FuncOp>("forward");
  trainer->withOptimizer_ = optimizer != nullptr;
  func::FuncOp f = trainer->func_;
  std::string error;
  int64_t held = 0; // host bytes of the arguments made so far
  for (unsigned i = 0; i < f.getNumArguments(); ++i) {
    auto type = cast<RankedTensorType>(f.getArgument(i).getType());
    std::string argName = "#" + std::to_string(i);
    for (StringRef attr : {"llmc.input", "llmc.param"})
      if (auto name = f.getArgAttrOfType<StringAttr>(i, attr))
        argName = "'" + name.getValue().str() + "'";
    auto kind = kindOf(type.getElementType());
    if (!kind)
      return emitError(f.getArgument(i).getLoc())
             << "argument #" << i << " has type " << type
             << ", which the reference evaluator does not support";
    if (std::string why = evalAllocationError(type.getShape(), held);
        !why.empty())
      return emitError(f.getArgument(i).getLoc())
             << "argument " << argName << " " << why;
    held += 8 * type.getNumElements(); // fits: checked just above
    RefTensor zero(*kind, std::vector<int64_t>(type.getShape().begin(),
                                               type.getShape().end()));
    if (auto name = f.getArgAttrOfType<StringAttr>(i, "llmc.input")) {
      if (name.getValue() == "lr") {
        trainer->lrArg_ = static_cast<int>(i);
      } else if (name.getValue().starts_with("accum.")) {
        // The apply step's accumulators: filled by runWindow.
        trainer->inputArg_[name.getValue().str()] = i;
      } else {
        trainer->inputArg_[name.getValue().str()] = i;
        trainer->inputs_.push_back({name.getValue().str(), zero});
      }
      trainer->args_.push_back(std::move(zero));
      continue;
    }
    if (auto state = f.getArgAttrOfType<StringAttr>(i, "llmc.state");
        state && state.getValue() == "amp.scale")
      trainer->scaleArg_ = static_cast<int>(i);
    auto init = initialParameter(f, i, seed, error);
    if (!init)
      return emitError(f.getArgument(i).getLoc()) << error;
    if (auto name = f.getArgAttrOfType<StringAttr>(i, "llmc.param"))
      if (auto real = realShapeOf(f, i))
        trainer->realShapes_[name.getValue().str()] = *real;
    trainer->args_.push_back(std::move(*init));
  }
  if (auto acc = module.lookupSymbol<func::FuncOp>("accumulate_step"))
    if (failed(trainer->bindAccumulate(acc)))
      return failure();
  return trainer;
}

/// The accumulate step's arguments: its data inputs are the trainer's
/// inputs, its parameters are the apply step's (by name), its state is
/// the accumulators the apply step reads as `accum.*` inputs.
LogicalResult CpuTrainer::bindAccumulate(func::FuncOp acc) {
  accumulate_ = acc;
  inputs_.clear();
  std::map<std::string, unsigned> applyParam;
  for (unsigned i = 0; i < func_.getNumArguments(); ++i)
    if (auto p = func_.getArgAttrOfType<StringAttr>(i, "llmc.param"))
      applyParam[p.getValue().str()] = i;
  for (unsigned i = 0; i < acc.getNumArguments(); ++i) {
    auto type = cast<RankedTensorType>(acc.getArgument(i).getType());
    RefTensor zero(*kindOf(type.getElementType()),
                   std::vector<int64_t>(type.getShape()));
    if (auto in = acc.getArgAttrOfType<StringAttr>(i, "llmc.input")) {
      accInputArg_[in.getValue().str()] = i;
      inputs_.push_back({in.getValue().str(), zero});
      if (!type.getShape().empty())
        microRows_ = type.getShape()[0];
    } else if (auto p = acc.getArgAttrOfType<StringAttr>(i, "llmc.param")) {
      accParams_.push_back({i, applyParam.at(p.getValue().str())});
    } else if (auto kind = acc.getArgAttrOfType<StringAttr>(i, "llmc.state")) {
      std::string name = kind.getValue().str();
      if (auto of = acc.getArgAttrOfType<StringAttr>(i, "llmc.state_of"))
        name += ":" + of.getValue().str();
      auto it = inputArg_.find(name);
      if (it == inputArg_.end())
        return emitError(acc.getLoc())
               << "@train_step has no input '" << name
               << "' for the accumulator of @accumulate_step";
      accIntoApply_.push_back({i, it->second});
    }
    accArgs_.push_back(std::move(zero));
  }
  return success();
}

LogicalResult CpuTrainer::setMicroBatches(int64_t k) {
  if (k < 1 || (!accumulate_ && k != 1))
    return emitError(func_.getLoc())
           << k << " micro-batches need gradient accumulation "
           << "(OptimizerConfig::accumulate)";
  microBatches_ = k;
  for (StepInput &in : inputs_)
    if (accumulate_ && in.type.rank() > 0)
      in.type = RefTensor(in.type.kind, [&] {
        std::vector<int64_t> shape = in.type.shape;
        shape[0] = microRows_ * k;
        return shape;
      }());
  return success();
}

/// Rows [first, first + rows) of `t` along dim 0.
static RefTensor rowsOf(const RefTensor &t, int64_t first, int64_t rows) {
  std::vector<int64_t> shape = t.shape;
  int64_t inner = t.numElements() / std::max<int64_t>(shape[0], 1);
  shape[0] = rows;
  RefTensor out(t.kind, shape);
  if (t.isFloat())
    std::copy(t.floats.begin() + first * inner,
              t.floats.begin() + (first + rows) * inner, out.floats.begin());
  else
    std::copy(t.ints.begin() + first * inner,
              t.ints.begin() + (first + rows) * inner, out.ints.begin());
  return out;
}

/// The accumulate step on each micro-batch, its accumulators (zero at the
/// start) fed back through llmc.next, then into the apply step's inputs.
LogicalResult
CpuTrainer::runWindow(const std::map<std::string, RefTensor> &batch) {
  for (unsigned i = 0; i < accumulate_.getNumArguments(); ++i)
    if (accumulate_.getArgAttr(i, "llmc.state"))
      accArgs_[i] = RefTensor(accArgs_[i].kind, accArgs_[i].shape);
  for (auto [a, p] : accParams_)
    accArgs_[a] = args_[p];
  for (int64_t m = 0; m < microBatches_; ++m) {
    for (auto &[name, index] : accInputArg_)
      accArgs_[index] =
          accArgs_[index].rank() == 0
              ? batch.at(name)
              : rowsOf(batch.at(name), m * microRows_, microRows_);
    auto results = evaluate(accumulate_, accArgs_);
    if (failed(results))
      return failure();
    for (unsigned r = 0; r < accumulate_.getNumResults(); ++r)
      if (auto next =
              accumulate_.getResultAttrOfType<IntegerAttr>(r, "llmc.next"))
        accArgs_[next.getInt()] = std::move((*results)[r]);
  }
  for (auto [a, p] : accIntoApply_)
    args_[p] = accArgs_[a];
  return success();
}

LogicalResult
CpuTrainer::setBatch(const std::map<std::string, RefTensor> &batch,
                     double lr) {
  for (const StepInput &in : inputs_) {
    auto it = batch.find(in.name);
    if (it == batch.end())
      return emitError(func_.getLoc()) << "missing input '" << in.name << "'";
    if (it->second.shape != in.type.shape || it->second.kind != in.type.kind)
      return emitError(func_.getLoc())
             << "input '" << in.name << "' is " << it->second.typeString()
             << " but the model expects " << in.type.typeString();
    if (!accumulate_)
      args_[inputArg_[in.name]] = it->second;
  }
  if (accumulate_ && failed(runWindow(batch)))
    return failure();
  if (lrArg_ >= 0)
    args_[lrArg_] = RefTensor::fromFloats(ElementKind::F32, {}, {lr});
  return success();
}

FailureOr<double>
CpuTrainer::step(const std::map<std::string, RefTensor> &batch, double lr,
                 bool skipNonFinite) {
  if (failed(setBatch(batch, lr)))
    return failure();
  auto results = evaluate(func_, args_);
  if (failed(results))
    return failure();
  // The scale this step ran with, before its own update of it.
  double scale = scaleArg_ >= 0 ? args_[scaleArg_].getDouble(0) : 1.0;
  double loss = 0;
  bool sawLoss = false;
  hasGradNorm_ = false;
  grads_.clear();
  for (unsigned i = 0; i < func_.getNumResults(); ++i) {
    RefTensor &r = (*results)[i];
    auto out = func_.getResultAttrOfType<StringAttr>(i, "llmc.output");
    if (out && out.getValue() == "loss") {
      loss = r.getDouble(0);
      sawLoss = true;
    }
    if (out && out.getValue() == "grad_norm") {
      gradNorm_ = r.getDouble(0);
      hasGradNorm_ = true;
    }
    if (auto of = func_.getResultAttrOfType<StringAttr>(i, "llmc.grad_of")) {
      RefTensor g = unpadded(of.getValue().str(), r);
      // Without an optimizer the gradients are of scale * loss; a power of
      // two scale divides out exactly.
      if (scale != 1.0)
        for (double &x : g.floats)
          x /= scale;
      grads_[of.getValue().str()] = std::move(g);
    }
  }
  if (!sawLoss)
    return emitError(func_.getLoc()) << "@train_step has no loss result";
  // The loss scaler's overflow is no fault: the step skipped its own update
  // and halved the scale, and that state must advance.
  overflow_ = scaleArg_ >= 0 && hasGradNorm_ && !std::isfinite(gradNorm_);
  // The update is applied after the step's numbers are known, so that a
  // non-finite step can leave the state as it was (--on-nan skip).
  applied_ = !skipNonFinite ||
             (std::isfinite(loss) &&
              (!hasGradNorm_ || std::isfinite(gradNorm_) || overflow_));
  if (applied_)
    for (unsigned i = 0; i < func_.getNumResults(); ++i)
      if (auto next = func_.getResultAttrOfType<IntegerAttr>(i, "llmc.next"))
        args_[next.getInt()] = std::move((*results)[i]);
  // The log shows the scale after the step's update (GradScaler.get_scale()
  // after update()), as the GPU reads it from its state buffer.
  if (scaleArg_ >= 0)
    lossScale_ = args_[scaleArg_].getDouble(0);
  return loss;
}

int64_t CpuTrainer::scalerSkipped() const {
  for (unsigned i = 0; i < func_.getNumArguments(); ++i)
    if (auto kind = func_.getArgAttrOfType<StringAttr>(i, "llmc.state");
        kind && kind.getValue() == "amp.skipped")
      return args_[i].ints.empty() ? 0 : args_[i].ints[0];
  return 0;
}

FailureOr<double>
CpuTrainer::evalLoss(const std::map<std::string, RefTensor> &batch) {
  if (microBatches_ > 1) {
    // @forward takes one micro-batch: the mean of the micro-batches' losses
    // (equal to the window's when every target counts, as token data's do).
    double sum = 0;
    for (int64_t m = 0; m < microBatches_; ++m) {
      std::map<std::string, RefTensor> micro;
      for (auto &[name, t] : batch)
        micro[name] = t.rank() == 0 ? t : rowsOf(t, m * microRows_, microRows_);
      int64_t k = microBatches_;
      microBatches_ = 1;
      auto loss = evalLoss(micro);
      microBatches_ = k;
      if (failed(loss))
        return failure();
      sum += *loss;
    }
    return sum / static_cast<double>(microBatches_);
  }
  if (!forward_)
    return emitError(func_.getLoc()) << "the module lost its @forward";
  std::map<std::string, RefTensor> params = stepParameters();
  std::vector<RefTensor> args;
  for (unsigned i = 0; i < forward_.getNumArguments(); ++i) {
    if (auto p = forward_.getArgAttrOfType<StringAttr>(i, "llmc.param")) {
      args.push_back(params.at(p.getValue().str()));
    } else if (auto in = forward_.getArgAttrOfType<StringAttr>(i, "llmc.input")) {
      auto it = batch.find(in.getValue().str());
      if (it == batch.end())
        return emitError(forward_.getLoc())
               << "missing input '" << in.getValue() << "'";
      args.push_back(it->second);
    } else {
      return emitError(forward_.getLoc())
             << "@forward argument #" << i << " is neither a parameter nor an "
             << "input";
    }
  }
  auto results = evaluate(forward_, args);
  if (failed(results))
    return failure();
  for (unsigned i = 0; i < forward_.getNumResults(); ++i) {
    auto out = forward_.getResultAttrOfType<StringAttr>(i, "llmc.output");
    const RefTensor &r = (*results)[i];
    if ((out && out.getValue() == "loss") ||
        (r.rank() == 0 && r.isFloat()))
      return r.getDouble(0);
  }
  return emitError(forward_.getLoc()) << "@forward has no loss result";
}

std::map<std::string, RefTensor> CpuTrainer::stepParameters() const {
  std::map<std::string, RefTensor> params;
  for (unsigned i = 0; i < func_.getNumArguments(); ++i)
    if (auto name = func_.getArgAttrOfType<StringAttr>(i, "llmc.param"))
      params[name.getValue().str()] = args_[i];
  return params;
}

std::vector<CpuTrainer::StateArgument> CpuTrainer::stateArguments() const {
  std::vector<StateArgument> params, state;
  for (unsigned i = 0; i < func_.getNumArguments(); ++i) {
    if (auto name = func_.getArgAttrOfType<StringAttr>(i, "llmc.param")) {
      params.push_back({i, name.getValue().str(), false});
    } else if (auto kind = func_.getArgAttrOfType<StringAttr>(i, "llmc.state")) {
      std::string name = kind.getValue().str();
      if (auto of = func_.getArgAttrOfType<StringAttr>(i, "llmc.state_of"))
        name += ":" + of.getValue().str();
      state.push_back({i, name, true});
    }
  }
  params.insert(params.end(), state.begin(), state.end());
  return params;
}

double CpuTrainer::stepFlops() const {
  auto elements = [](Type t) {
    auto ranked = dyn_cast<RankedTensorType>(t);
    return ranked && ranked.hasStaticShape()
               ? static_cast<double>(ranked.getNumElements())
               : 0.0;
  };
  double flops = 0;
  // With accumulation the matmuls are the accumulate step's, run once per
  // micro-batch.
  func::FuncOp counted = accumulate_ ? accumulate_ : func_;
  counted.walk([&](Operation *op) {
    StringRef name = op->getName().getStringRef();
    if (name == "llmc.matmul") {
      auto lhs = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
      if (!lhs || lhs.getRank() < 2 || !lhs.hasStaticShape())
        return;
      int64_t k = lhs.getDimSize(lhs.getRank() - (op->hasAttr("transpose_lhs") ? 2 : 1));
      flops += 2.0 * elements(op->getResult(0).getType()) * k;
    } else if (name == "llmc.attention" || name == "llmc.attention_lse" ||
               name == "llmc.attention_grad") {
      // q k^T and p v: 4 * B * H * T * S * D, the T * D of q times S.
      auto q = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
      auto k = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
      if (!q || !k || q.getRank() != 4 || k.getRank() != 4 ||
          !q.hasStaticShape() || !k.hasStaticShape())
        return;
      double forward = 4.0 * elements(q) * k.getDimSize(2);
      flops += name == "llmc.attention_grad" ? 2 * forward : forward;
    }
  });
  return flops * static_cast<double>(microBatches_);
}

std::map<std::string, RefTensor> CpuTrainer::parameters() const {
  std::map<std::string, RefTensor> params = stepParameters();
  for (auto &[name, t] : params)
    t = unpadded(name, t);
  return params;
}

RefTensor CpuTrainer::unpadded(const std::string &name,
                               const RefTensor &t) const {
  auto it = realShapes_.find(name);
  if (it == realShapes_.end())
    return t;
  RefTensor real(t.kind, it->second);
  // The shapes come from the pass that padded them: they fit.
  Status s = t.isFloat()
                 ? unpadValues(t.floats, t.shape, it->second, real.floats)
                 : unpadValues(t.ints, t.shape, it->second, real.ints);
  (void)s;
  return real;
}

std::map<std::string, std::pair<std::vector<int64_t>, std::vector<int64_t>>>
CpuTrainer::paddedShapes() const {
  std::map<std::string, std::pair<std::vector<int64_t>, std::vector<int64_t>>>
      out;
  std::map<std::string, RefTensor> params = stepParameters();
  for (auto &[name, real] : realShapes_)
    out[name] = {real, params.at(name).shape};
  return out;
}

int64_t CpuTrainer::parameterCount() const {
  int64_t n = 0;
  for (unsigned i = 0; i < func_.getNumArguments(); ++i)
    if (func_.getArgAttr(i, "llmc.param") && !func_.getArgAttr(i, "llmc.frozen")) {
      int64_t count = args_[i].numElements();
      if (auto real = realShapeOf(func_, i)) {
        count = 1;
        for (int64_t d : *real)
          count *= d;
      }
      n += count;
    }
  return n;
}

std::optional<std::vector<int64_t>>
CpuTrainer::realShape(unsigned index) const {
  return realShapeOf(func_, index);
}

int64_t CpuTrainer::vocabulary() const { return crossEntropyClasses(func_); }

} // namespace llmc
