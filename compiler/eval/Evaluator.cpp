//===- Evaluator.cpp - The CPU reference evaluator ------------------------===//
//
// The driver loop: check the arguments against the function type, then run
// the body's ops in order, looking each one up in the kernel table. Every
// operand and result type is checked (static shape, supported element kind)
// before its kernel runs, so kernels need no checks of their own.
//
//===----------------------------------------------------------------------===//
#include "compiler/eval/EvalMemory.h"
#include "compiler/eval/Kernels.h"

#include "dialects/llmc/LlmcOps.h"
#include "dialects/llmc/ShapeUtils.h"
#include "runtime/CheckedSize.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"

#include <iterator>

using namespace mlir;

namespace llmc {

static const KernelTable &kernelTable() {
  static const KernelTable table = [] {
    KernelTable t;
    registerElementwiseKernels(t);
    registerShapeKernels(t);
    registerReduceKernels(t);
    registerNNKernels(t);
    registerAttentionKernels(t);
    registerGradKernels(t);
    return t;
  }();
  return table;
}

bool hasKernel(StringRef opName) { return kernelTable().count(opName); }

/// Host bytes of a RefTensor: every element is a double or an int64.
static CheckedSize refTensorBytes(ArrayRef<int64_t> shape) {
  return elementCount(shape) * CheckedSize(8);
}

std::string evalAllocationError(ArrayRef<int64_t> shape, int64_t heldBytes) {
  return hostAllocationError(shape, 8, heldBytes);
}

std::optional<ElementKind> kindOf(Type t) {
  if (t.isF64())
    return ElementKind::F64;
  if (t.isF32())
    return ElementKind::F32;
  if (t.isF16())
    return ElementKind::F16;
  if (t.isBF16())
    return ElementKind::BF16;
  if (t.isFloat8E4M3FN())
    return ElementKind::F8E4M3FN;
  if (t.isFloat8E5M2())
    return ElementKind::F8E5M2;
  if (t.isSignlessInteger(64))
    return ElementKind::I64;
  if (t.isSignlessInteger(32))
    return ElementKind::I32;
  if (t.isSignlessInteger(1))
    return ElementKind::I1;
  return std::nullopt;
}

/// Checks that `v` is a tensor the kernels can hold; `what` names it in the
/// error ("operand #1", "result #0").
static LogicalResult checkEvaluable(Operation *op, Value v,
                                    const std::string &what) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type)
    return op->emitError("reference evaluator: ")
           << what << " has type " << v.getType()
           << "; only ranked tensors are supported";
  if (!type.hasStaticShape())
    return op->emitError("reference evaluator: ")
           << what << " has the dynamic shape "
           << mlir::llmc::shapeToString(type.getShape())
           << "; specialize shapes first (--shape NAME=VALUE)";
  if (!kindOf(type.getElementType()))
    return op->emitError("reference evaluator: ")
           << what << " has the unsupported element type "
           << type.getElementType();
  return success();
}

/// "'llmc.add'", with " (node 'fill')" when the location names the ONNX
/// node or JSON path the op came from: ONNX diagnostics print no location.
/// A group whose `llmc.epilogue` is cuBLASLt's GELU or DGELU
/// (passes/MatmulEpilogues.h names them; the evaluator reads the attribute,
/// not the passes library): both apply gelu or gelu' to the f32 product.
static bool isGeluEpilogue(Operation *group) {
  auto name = group ? group->getAttrOfType<StringAttr>("llmc.epilogue")
                    : StringAttr();
  return name && (name.getValue() == "gelu" || name.getValue() == "gelu_grad");
}

static std::string opDescription(Operation *op) {
  std::string s = "'" + op->getName().getStringRef().str() + "'";
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    s += " (node '" + name.getName().str() + "')";
  return s;
}

/// "'idx'" from an argument's llmc.input / llmc.param name, or "#3".
static std::string argumentName(func::FuncOp func, unsigned i) {
  for (StringRef attr : {"llmc.input", "llmc.param"})
    if (auto name = func.getArgAttrOfType<StringAttr>(i, attr))
      return "'" + name.getValue().str() + "'";
  return "#" + std::to_string(i);
}

static LogicalResult checkArguments(func::FuncOp func,
                                    ArrayRef<RefTensor> args) {
  if (args.size() != func.getNumArguments())
    return func.emitError("reference evaluator: @")
           << func.getSymName() << " takes " << func.getNumArguments()
           << " arguments, got " << args.size();
  for (unsigned i = 0; i < args.size(); ++i) {
    Value arg = func.getArgument(i);
    if (failed(checkEvaluable(func, arg, "argument " + argumentName(func, i))))
      return failure();
    std::vector<int64_t> shape = shapeOf(arg);
    ElementKind kind = kindOfValue(arg);
    const RefTensor &t = args[i];
    size_t storage = t.isFloat() ? t.floats.size() : t.ints.size();
    if (t.kind != kind || t.shape != shape ||
        storage != static_cast<size_t>(t.numElements()))
      return func.emitError("reference evaluator: argument ")
             << argumentName(func, i) << " expects " << kindName(kind)
             << shapeString(shape) << ", got " << t.typeString();
  }
  return success();
}

FailureOr<std::vector<RefTensor>> evaluate(func::FuncOp func,
                                           ArrayRef<RefTensor> args) {
  return evaluate(func, args, nullptr);
}

FailureOr<std::vector<RefTensor>> evaluate(func::FuncOp func,
                                           ArrayRef<RefTensor> args,
                                           const EvalObserver &observer) {
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return func.emitError("reference evaluator: @")
           << func.getSymName() << " must have a body of one block";
  if (failed(checkArguments(func, args)))
    return failure();

  // Host memory is accounted as values are made and freed after their last
  // use, so a step too large for the machine stops before the allocation
  // (evalAllocationError) instead of in std::bad_alloc.
  llvm::DenseMap<Value, RefTensor> values;
  llvm::DenseMap<Value, unsigned> usesLeft;
  int64_t held = 0;
  auto hold = [&](Value v, RefTensor t) {
    held += refTensorBytes(t.shape).value();
    usesLeft[v] = static_cast<unsigned>(
        std::distance(v.getUses().begin(), v.getUses().end()));
    values[v] = std::move(t);
  };
  auto release = [&](Operation &op) {
    for (Value v : op.getOperands()) {
      auto it = usesLeft.find(v);
      if (it == usesLeft.end() || --it->second > 0)
        continue;
      auto t = values.find(v);
      held -= refTensorBytes(t->second.shape).value();
      values.erase(t);
    }
  };
  for (unsigned i = 0; i < args.size(); ++i) {
    if (std::string why = evalAllocationError(args[i].shape, held);
        !why.empty())
      return func.emitError("reference evaluator: argument ")
             << argumentName(func, i) << " " << why;
    hold(func.getArgument(i), args[i]);
  }

  const KernelTable &table = kernelTable();
  bool stopped = false; // the observer has seen enough
  std::function<LogicalResult(Operation &)> run =
      [&](Operation &op) -> LogicalResult {
    // A kernel group (docs/kernel-ir.md) is its ops in order; its results
    // are what it yields.
    if (auto group = dyn_cast<mlir::llmc::KernelOp>(op)) {
      for (Operation &inner : group.getGroupOps())
        if (failed(run(inner)) || stopped)
          return failure(!stopped);
      // The yielded values end with the group (nothing outside can name
      // them): their results take them over, in the memory account too.
      // A GELU epilogue's pre-activation was held unrounded for its gelu
      // (heldUnrounded); what leaves the group is rounded to its type.
      bool roundYields = isGeluEpilogue(group);
      for (auto [r, y] :
           llvm::zip(group.getResults(), group.getYield()->getOperands())) {
        RefTensor t = values.lookup(y);
        if (roundYields)
          roundInPlace(t);
        hold(r, std::move(t));
      }
      release(*group.getYield());
      return success();
    }
    auto kernel = table.find(op.getName().getStringRef());
    if (kernel == table.end())
      return op.emitError("reference evaluator: no kernel for op '")
             << op.getName() << "'";
    std::vector<const RefTensor *> operands;
    for (auto [i, v] : llvm::enumerate(op.getOperands())) {
      if (failed(checkEvaluable(&op, v, "operand #" + std::to_string(i))))
        return failure();
      auto it = values.find(v);
      if (it == values.end())
        return op.emitError("reference evaluator: operand #")
               << i << " is not defined in the function body";
      operands.push_back(&it->second);
    }
    int64_t resultBytes = 0;
    for (auto [i, v] : llvm::enumerate(op.getResults())) {
      if (failed(checkEvaluable(&op, v, "result #" + std::to_string(i))))
        return failure();
      std::vector<int64_t> shape = shapeOf(v);
      if (std::string why = evalAllocationError(shape, held + resultBytes);
          !why.empty())
        return op.emitError("reference evaluator: result #")
               << i << " of " << opDescription(&op) << " " << why;
      resultBytes += refTensorBytes(shape).value();
    }
    std::vector<RefTensor> results;
    if (failed(kernel->second(&op, operands, results)))
      return failure();
    if (results.size() != op.getNumResults())
      return op.emitError("reference evaluator: kernel produced ")
             << results.size() << " results for " << op.getNumResults();
    if (observer && observer(op, results)) {
      stopped = true;
      return success();
    }
    for (auto [v, t] : llvm::zip(op.getResults(), results))
      hold(v, std::move(t));
    release(op);
    return success();
  };
  for (Operation &op : func.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<RefTensor> results;
      for (Value v : ret.getOperands())
        results.push_back(values.lookup(v));
      return results;
    }
    if (failed(run(op)))
      return failure();
    if (stopped)
      return std::vector<RefTensor>();
  }
  return func.emitError("reference evaluator: @")
         << func.getSymName() << " has no func.return";
}

//===----------------------------------------------------------------------===//
// Helpers shared by the kernel files
//===----------------------------------------------------------------------===//

std::vector<int64_t> shapeOf(Value v) {
  auto shape = cast<RankedTensorType>(v.getType()).getShape();
  return std::vector<int64_t>(shape.begin(), shape.end());
}

ElementKind kindOfValue(Value v) {
  return *kindOf(cast<RankedTensorType>(v.getType()).getElementType());
}

RefTensor makeResult(Value v) { return RefTensor(kindOfValue(v), shapeOf(v)); }

BroadcastMap::BroadcastMap(const std::vector<int64_t> &operandShape,
                           const std::vector<int64_t> &resultShape)
    : resultShape_(resultShape), operandStrides_(resultShape.size(), 0) {
  std::vector<int64_t> strides = stridesOf(operandShape);
  size_t offset = resultShape.size() - operandShape.size();
  for (size_t d = 0; d < operandShape.size(); ++d)
    if (operandShape[d] != 1)
      operandStrides_[d + offset] = strides[d];
}

int64_t BroadcastMap::operator()(int64_t resultIndex) const {
  int64_t src = 0;
  for (int64_t d = static_cast<int64_t>(resultShape_.size()) - 1; d >= 0; --d) {
    src += (resultIndex % resultShape_[d]) * operandStrides_[d];
    resultIndex /= resultShape_[d];
  }
  return src;
}

bool heldUnrounded(Operation *op) {
  if (!isa_and_nonnull<mlir::llmc::KernelOp>(op->getParentOp()) ||
      !isGeluEpilogue(op->getParentOp()))
    return false;
  // DGELU multiplies gelu'(aux) by the unrounded product (its grad operand);
  // the aux itself is a bf16 tensor read from memory.
  return llvm::any_of(op->getUses(), [](OpOperand &use) {
    Operation *user = use.getOwner();
    if (auto grad = dyn_cast<mlir::llmc::GeluGradOp>(user))
      return use.get() == grad.getGrad() && use.get() != grad.getInput();
    return isa<mlir::llmc::GeluOp>(user);
  });
}

void roundInPlace(RefTensor &t) {
  if (t.isFloat()) {
    FloatFormat format = floatFormatOf(t.kind);
    for (double &v : t.floats)
      v = roundToFormat(v, format);
  } else {
    for (int64_t &v : t.ints)
      v = wrapToKind(v, t.kind);
  }
}

double roundProbability(double p, ElementKind kind) {
  return kind == ElementKind::BF16 || kind == ElementKind::F16
             ? roundToKind(p, kind)
             : p;
}

int64_t normalizedAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

} // namespace llmc
