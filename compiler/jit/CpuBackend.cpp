//===- CpuBackend.cpp - jit::Step on the reference evaluator --------------===//
//
// The step CpuTrainer builds (compiler/CpuTrainer.h: append-loss for a
// logits graph, lower-precision, autodiff keeping @forward, the optimizer),
// evaluated in float64 with parameters and optimizer state threaded through
// the `llmc.next` results. It keeps its own argument vector rather than
// wrapping CpuTrainer because the API writes parameters by name
// (loadParameters), which CpuTrainer does not offer; the pass list is the
// same, and JitCpuTest checks that both give bit-identical losses.
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile.h"
#include "compiler/Pipeline.h"
#include "compiler/jit/Backend.h"
#include "compiler/jit/ModelSource.h"
#include "compiler/jit/TensorConvert.h"

#include "compiler/eval/EvalMemory.h"
#include "compiler/eval/Evaluator.h"
#include "compiler/eval/ModelArguments.h"
#include "passes/Passes.h"
#include "runtime/Padding.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/PassManager.h"

#include <chrono>

namespace llmc::jit {

using namespace mlir;

namespace {

bool hasScalarLoss(func::FuncOp forward) {
  for (Type t : forward.getResultTypes()) {
    auto ranked = dyn_cast<RankedTensorType>(t);
    if (ranked && ranked.getRank() == 0 &&
        isa<FloatType>(ranked.getElementType()))
      return true;
  }
  return false;
}

class CpuBackend : public Backend {
public:
  Status init(const std::string &path, const std::string *jsonText);
  Status run(const std::vector<TensorView> &in, double lr,
             double *loss) override;
  Status lastLoss(double &loss) override {
    loss = lastLoss_;
    return Status::ok();
  }
  Status evaluate(const std::vector<TensorView> &in, double &loss) override;
  Status readParameter(size_t index, std::vector<uint8_t> &f32) override;
  Status writeParameter(size_t index, const TensorView &value) override;

private:
  LogicalResult buildStep();
  Status setInputs(const std::vector<TensorView> &in);

  // Declared first: destroyed last, after the module and the diagnostics.
  MLIRContext context_;
  std::unique_ptr<Diagnostics> diagnostics_;
  OwningOpRef<ModuleOp> module_;
  func::FuncOp step_, forward_;
  std::vector<RefTensor> args_;
  std::vector<unsigned> inputArgs_, paramArgs_; // per input / parameter
  int lrArg_ = -1;
  std::string name_;
  double lastLoss_ = 0;
};

Status CpuBackend::init(const std::string &path, const std::string *jsonText) {
  auto start = std::chrono::steady_clock::now();
  diagnostics_ = std::make_unique<Diagnostics>(context_);
  name_ = modelName(path, jsonText);
  module_ = loadJitModel(path, jsonText, options, context_);
  if (!module_)
    return diagnostics_->failure("cannot load '" + name_ + "'");
  if (failed(buildStep()))
    return diagnostics_->failure("cannot build the training step of '" +
                                 name_ + "'");
  report.device = Device::Cpu;
  report.model = name_;
  report.precision = options.precision;
  report.vocab = crossEntropyClasses(step_);
  report.padding = paddingLines(*module_);
  for (const TensorInfo &p : parameters)
    report.parameters += elementCount(p.shape);
  if (!inputs.empty())
    report.tokens = elementCount(inputs.front().shape);
  report.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return Status::ok();
}

LogicalResult CpuBackend::buildStep() {
  ModuleOp module = *module_;
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return emitError(module.getLoc())
           << "the model has no func.func @forward (docs/model-ir.md)";
  PassManager pm(&context_);
  if (!hasScalarLoss(forward))
    pm.addPass(mlir::llmc::createAppendLossPass());
  // Padding as on the GPU (and in CpuTrainer); parameters keep the
  // model's shapes at the API (readParameter, writeParameter).
  PrecisionConfig precision;
  precision.precision = options.precision;
  precision.pad = options.padding != "off";
  precision.padAlways = options.padding == "always";
  addPadShapes(pm, precision);
  mlir::llmc::LowerPrecisionPassOptions lower;
  lower.precision = options.precision;
  pm.addPass(mlir::llmc::createLowerPrecisionPass(lower));
  pm.addPass(mlir::llmc::createAutodiffPass());
  mlir::llmc::AppendOptimizerPassOptions o;
  o.optimizer = options.optimizer;
  o.beta1 = options.beta1;
  o.beta2 = options.beta2;
  o.epsilon = options.epsilon;
  o.weightDecay = options.weightDecay;
  o.momentum = options.momentum;
  o.clipNorm = options.clipNorm;
  o.decayMinRank = options.decayMinRank;
  pm.addPass(mlir::llmc::createAppendOptimizerPass(o));
  // Recomputation as on the GPU (checked by checkOptions, Step.cpp).
  RecomputeConfig recompute;
  std::string error;
  (void)recomputeFromText(options.memoryBudget, recompute, error);
  addRematerialize(pm, recompute);
  if (failed(pm.run(module)))
    return failure();
  step_ = module.lookupSymbol<func::FuncOp>("train_step");
  forward_ = module.lookupSymbol<func::FuncOp>("forward");
  if (!step_ || !forward_)
    return emitError(module.getLoc()) << "the pipeline lost @train_step";

  int64_t held = 0;
  for (unsigned i = 0; i < step_.getNumArguments(); ++i) {
    auto type = cast<RankedTensorType>(step_.getArgument(i).getType());
    auto kind = kindOf(type.getElementType());
    if (!kind)
      return emitError(step_.getArgument(i).getLoc())
             << "argument #" << i << " has type " << type
             << ", which the reference evaluator does not support";
    if (std::string why = evalAllocationError(type.getShape(), held);
        !why.empty())
      return emitError(step_.getArgument(i).getLoc())
             << "argument #" << i << " " << why;
    held += 8 * type.getNumElements();
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    if (auto name = step_.getArgAttrOfType<StringAttr>(i, "llmc.input")) {
      if (name.getValue() == "lr") {
        lrArg_ = static_cast<int>(i);
      } else {
        auto dtype = dtypeOfKind(*kind);
        if (!dtype)
          return emitError(step_.getArgument(i).getLoc())
                 << "input '" << name.getValue() << "' has the element type "
                 << type.getElementType()
                 << ", which the JIT API cannot pass yet";
        inputArgs_.push_back(i);
        inputs.push_back({name.getValue().str(), *dtype, shape});
      }
      args_.emplace_back(*kind, shape);
      continue;
    }
    std::string error;
    auto init = initialParameter(step_, i, options.seed, error);
    if (!init)
      return emitError(step_.getArgument(i).getLoc()) << error;
    if (auto name = step_.getArgAttrOfType<StringAttr>(i, "llmc.param")) {
      paramArgs_.push_back(i);
      parameters.push_back({name.getValue().str(), DType::F32,
                            realShapeOf(step_, i).value_or(shape)});
    }
    args_.push_back(std::move(*init));
  }
  return success();
}

Status CpuBackend::setInputs(const std::vector<TensorView> &in) {
  for (size_t i = 0; i < in.size(); ++i) {
    RefTensor &arg = args_[inputArgs_[i]];
    LLMC_RETURN_IF_ERROR(hostToRef(in[i], arg));
  }
  return Status::ok();
}

Status CpuBackend::run(const std::vector<TensorView> &in, double lr,
                       double *lossOut) {
  double loss = 0;
  auto start = std::chrono::steady_clock::now();
  LLMC_RETURN_IF_ERROR(setInputs(in));
  if (lrArg_ >= 0)
    args_[lrArg_] = RefTensor::fromFloats(ElementKind::F32, {}, {lr});
  auto results = ::llmc::evaluate(step_, args_);
  if (failed(results))
    return diagnostics_->failure("step " + std::to_string(steps + 1) +
                                 " of '" + name_ + "' failed");
  bool sawLoss = false;
  // Read every result before moving any into args_: a result may be read
  // as the loss after an llmc.next result was threaded.
  for (unsigned i = 0; i < step_.getNumResults(); ++i)
    if (auto out = step_.getResultAttrOfType<StringAttr>(i, "llmc.output");
        out && out.getValue() == "loss") {
      loss = (*results)[i].getDouble(0);
      sawLoss = true;
    }
  if (!sawLoss)
    return Status::error("'" + name_ + "': @train_step has no loss result");
  for (unsigned i = 0; i < step_.getNumResults(); ++i)
    if (auto next = step_.getResultAttrOfType<IntegerAttr>(i, "llmc.next"))
      args_[next.getInt()] = std::move((*results)[i]);
  lastMs = std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - start)
               .count();
  lastLoss_ = loss;
  if (lossOut)
    *lossOut = loss;
  return Status::ok();
}

Status CpuBackend::evaluate(const std::vector<TensorView> &in, double &loss) {
  LLMC_RETURN_IF_ERROR(setInputs(in));
  std::map<std::string, const RefTensor *> byName;
  for (size_t p = 0; p < paramArgs_.size(); ++p)
    byName[parameters[p].name] = &args_[paramArgs_[p]];
  for (size_t i = 0; i < inputArgs_.size(); ++i)
    byName[inputs[i].name] = &args_[inputArgs_[i]];
  std::vector<RefTensor> args;
  for (unsigned i = 0; i < forward_.getNumArguments(); ++i) {
    auto p = forward_.getArgAttrOfType<StringAttr>(i, "llmc.param");
    auto n = forward_.getArgAttrOfType<StringAttr>(i, "llmc.input");
    auto it = byName.find((p ? p : n) ? (p ? p : n).getValue().str() : "");
    if (it == byName.end())
      return Status::error("'" + name_ + "': @forward argument #" +
                           std::to_string(i) +
                           " is neither a parameter nor an input of the step");
    args.push_back(*it->second);
  }
  auto results = ::llmc::evaluate(forward_, args);
  if (failed(results))
    return diagnostics_->failure("evaluating '" + name_ + "' failed");
  for (unsigned i = 0; i < forward_.getNumResults(); ++i) {
    auto out = forward_.getResultAttrOfType<StringAttr>(i, "llmc.output");
    const RefTensor &r = (*results)[i];
    if ((out && out.getValue() == "loss") || (r.rank() == 0 && r.isFloat())) {
      loss = lastLoss_ = r.getDouble(0);
      return Status::ok();
    }
  }
  return Status::error("'" + name_ + "': @forward has no loss result");
}

Status CpuBackend::readParameter(size_t index, std::vector<uint8_t> &f32) {
  const RefTensor &held = args_[paramArgs_[index]];
  const std::vector<int64_t> &real = parameters[index].shape;
  if (held.shape == real) {
    refToF32(held, f32);
    return Status::ok();
  }
  RefTensor logical(held.kind, real);
  LLMC_RETURN_IF_ERROR(unpadValues(held.floats, held.shape, real,
                                   logical.floats));
  refToF32(logical, f32);
  return Status::ok();
}

Status CpuBackend::writeParameter(size_t index, const TensorView &value) {
  RefTensor &held = args_[paramArgs_[index]];
  const std::vector<int64_t> &real = parameters[index].shape;
  if (held.shape == real)
    return hostToRef(value, held);
  // Loading pads with zeros (runtime/Padding.h).
  RefTensor logical(held.kind, real);
  LLMC_RETURN_IF_ERROR(hostToRef(value, logical));
  return padValues(logical.floats, real, held.shape, held.floats);
}

} // namespace

Status createCpuBackend(const std::string &path, const std::string *jsonText,
                        const Options &options,
                        std::unique_ptr<Backend> &out) {
  auto backend = std::make_unique<CpuBackend>();
  backend->options = options;
  LLMC_RETURN_IF_ERROR(backend->init(path, jsonText));
  out = std::move(backend);
  return Status::ok();
}

} // namespace llmc::jit
