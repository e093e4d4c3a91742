//===- Codegen.cpp - Emitter dispatch ------------------------------------===//
//
// Looks an op up in the emitter table after checking what every emitter
// relies on: static shapes and element types the device handles (f32, bf16,
// f16, i32, i64, i1). The check is here once so that emitters need none.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Emitters.h"

#include "dialects/llmc/ShapeUtils.h"

using namespace mlir;

namespace llmc::codegen {

static const EmitterTable &emitterTable() {
  static const EmitterTable table = [] {
    EmitterTable t;
    registerElementwiseEmitters(t);
    registerShapeEmitters(t);
    registerReduceEmitters(t);
    registerNormEmitters(t);
    registerLossEmitters(t);
    registerAttentionEmitters(t);
    registerMatmulEmitters(t);
    registerNormGradEmitters(t);
    registerScatterEmitters(t);
    registerAttentionGradEmitters(t);
    registerOptimizerEmitters(t);
    registerDropoutEmitters(t);
    return t;
  }();
  return table;
}

bool hasEmitter(StringRef opName) { return emitterTable().count(opName); }

::llmc::LaunchStep launchStepFor(
    const EmittedKernel &kernel, uint32_t kernelIndex,
    llvm::function_ref<::llmc::KernelArg(const KernelArg &)> bufferArg) {
  ::llmc::LaunchStep step;
  step.kernel = kernelIndex;
  step.grid = {kernel.grid[0], kernel.grid[1], kernel.grid[2]};
  step.block = {kernel.block[0], kernel.block[1], kernel.block[2]};
  step.sharedBytes = kernel.sharedBytes;
  for (const KernelArg &a : kernel.args) {
    switch (a.kind) {
    case KernelArg::Kind::I32:
      step.args.push_back(
          ::llmc::KernelArg::i32(static_cast<int32_t>(a.intValue)));
      break;
    case KernelArg::Kind::I64:
      step.args.push_back(::llmc::KernelArg::i64(a.intValue));
      break;
    case KernelArg::Kind::F32:
      step.args.push_back(::llmc::KernelArg::f32(a.floatValue));
      break;
    default:
      step.args.push_back(bufferArg(a));
      step.args.back().offset += a.byteOffset;
      break;
    }
  }
  return step;
}

std::string KernelArg::describe() const {
  switch (kind) {
  case Kind::Operand:
    return "operand #" + std::to_string(index);
  case Kind::Result:
    return "result #" + std::to_string(index);
  case Kind::Scratch:
    return "scratch #" + std::to_string(index);
  case Kind::I32:
    return "i32 " + std::to_string(intValue);
  case Kind::I64:
    return "i64 " + std::to_string(intValue);
  case Kind::F32:
    return "f32 " + floatLiteral(floatValue);
  }
  return "?";
}

/// Checks one operand or result; `what` names it in the error.
static LogicalResult checkValue(Operation *op, Value v,
                                const std::string &what) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type)
    return op->emitError("codegen: ") << what << " has type " << v.getType()
                                      << "; only ranked tensors are supported";
  if (!type.hasStaticShape())
    return op->emitError("codegen: ")
           << what << " has the dynamic shape "
           << mlir::llmc::shapeToString(type.getShape())
           << "; specialize shapes first (--shape NAME=VALUE)";
  if (!dtypeOf(type.getElementType()))
    return op->emitError("codegen: ")
           << what << " has the element type " << type.getElementType()
           << ", which the CUDA backend does not support yet (f32, bf16, "
              "f16, i32, i64, i1)";
  return success();
}

FailureOr<OpLowering> lowerOp(Operation *op, const CodegenOptions &options,
                              const std::string &name) {
  auto it = emitterTable().find(op->getName().getStringRef());
  if (it == emitterTable().end())
    return op->emitError("codegen: no CUDA emitter for '")
           << op->getName() << "'";
  // Messages name the op: `llmc compile` prints locations only.
  std::string quoted = "'" + op->getName().getStringRef().str() + "'";
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    if (failed(checkValue(op, op->getOperand(i),
                          quoted + " operand #" + std::to_string(i))))
      return failure();
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    if (failed(checkValue(op, op->getResult(i),
                          quoted + " result #" + std::to_string(i))))
      return failure();
  std::string base = name;
  if (base.empty()) {
    StringRef full = op->getName().getStringRef();
    base = full.substr(full.find('.') + 1).str();
  }
  EmitContext ctx{options, base};
  OpLowering out;
  if (failed(it->second(op, ctx, out)))
    return failure();
  for (EmittedKernel &k : out.kernels)
    if (k.origin.empty())
      k.origin = KernelSource::origin(op);
  return out;
}

FailureOr<EmittedKernel> emitKernel(Operation *op,
                                    const CodegenOptions &options,
                                    const std::string &name) {
  FailureOr<OpLowering> lowering = lowerOp(op, options, name);
  if (failed(lowering))
    return failure();
  if (lowering->kind != OpLowering::Kind::Kernels ||
      lowering->kernels.size() != 1)
    return op->emitError("codegen: '")
           << op->getName() << "' does not lower to exactly one kernel";
  return std::move(lowering->kernels.front());
}

} // namespace llmc::codegen
