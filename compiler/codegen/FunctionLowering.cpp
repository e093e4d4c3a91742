//===- FunctionLowering.cpp - A function's ops lowered, and a plan of them ===//
#include "compiler/codegen/FunctionLowering.h"
#include "compiler/codegen/StepPhases.h"

#include "compiler/codegen/Emitters.h"
#include "dialects/llmc/LlmcOps.h"
#include "passes/FusionUtils.h"
#include "passes/MatmulEpilogues.h"

#include "llvm/ADT/DenseMap.h"

#include <cstring>

using namespace mlir;

namespace llmc::codegen {

size_t LoweredFunction::kernelCount() const {
  size_t n = 0;
  for (const LoweredOp &op : ops)
    n += op.lowering.kernels.size();
  return n;
}

namespace {

std::string opName(Operation &op, unsigned &index) {
  StringRef full = op.getName().getStringRef();
  return full.substr(full.find('.') + 1).str() + "_" + std::to_string(index++);
}

/// The add of a fused group when `group` is `matmul; add(matmul, b);
/// yield add` (llmc-fuse-epilogues); null otherwise.
mlir::llmc::AddOp biasAdd(mlir::llmc::KernelOp group) {
  auto ops = group.getGroupOps();
  if (std::distance(ops.begin(), ops.end()) != 2)
    return nullptr;
  auto matmul = dyn_cast<mlir::llmc::MatmulOp>(*ops.begin());
  auto add = dyn_cast<mlir::llmc::AddOp>(*std::next(ops.begin()));
  if (!matmul || !add || group.getYield()->getOperands() != add->getResults() ||
      (add.getLhs() == matmul.getResult()) ==
          (add.getRhs() == matmul.getResult()))
    return nullptr;
  return add;
}

} // namespace

namespace {

/// Each result of `op` by the group result that yields it; one that is not
/// yielded is still written, into a buffer of its own.
void resultsThroughYield(mlir::llmc::KernelOp group, Operation *op,
                         LoweredOp &out) {
  Operation *yield = group.getYield();
  for (Value r : op->getResults()) {
    Value outer = r;
    for (auto [k, y] : llvm::enumerate(yield->getOperands()))
      if (y == r)
        outer = group.getResult(k);
    out.results.push_back(outer);
  }
}

/// Every operand and result a static tensor of a type kernels store; the
/// rest goes to the one-op emitter, whose checks say what is wrong.
bool holdsOnlyKernelTypes(Operation *op) {
  auto ok = [](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor || !tensor.hasStaticShape())
      return false;
    Type e = tensor.getElementType();
    return e.isF32() || e.isBF16() || e.isF16() || e.isSignlessInteger(1) ||
           e.isSignlessInteger(32) || e.isSignlessInteger(64);
  };
  return llvm::all_of(op->getOperandTypes(), ok) &&
         llvm::all_of(op->getResultTypes(), ok);
}

FailureOr<LoweredOp> lowerElementwiseGroup(mlir::llmc::KernelOp group,
                                           const CodegenOptions &options,
                                           unsigned &index) {
  LoweredOp out;
  out.op = &*group.getGroupOps().begin();
  out.name = opName(*out.op, index);
  index += std::distance(group.getGroupOps().begin(),
                         group.getGroupOps().end()) - 1;
  SmallVector<Value> inputs = mlir::llmc::fusion::groupInputs(group);
  out.operands.assign(inputs.begin(), inputs.end());
  EmitContext ctx{options, out.name};
  if (failed(emitFusedElementwise(group, inputs, ctx, out.lowering)))
    return failure();
  out.results.assign(group.getResults().begin(), group.getResults().end());
  return out;
}

/// A reduction and the exact casts in its loads and stores: the reduction's
/// emitter runs on a detached copy that reads the casts' inputs and has the
/// epilogue casts' result types; its kernels then read and write those
/// types directly (the emitters load and store through loadAs/storeAs of
/// each value's type).
FailureOr<LoweredOp> lowerReductionGroup(mlir::llmc::KernelOp group,
                                         const CodegenOptions &options,
                                         unsigned &index) {
  Operation *r = mlir::llmc::fusion::reductionOp(group);
  LoweredOp out;
  out.op = r;
  // Named by its own place among the function's ops, after its prologue
  // casts.
  unsigned at = index;
  for (Operation &op : group.getGroupOps()) {
    if (&op == r)
      break;
    ++at;
  }
  out.name = opName(*r, at);
  index += std::distance(group.getGroupOps().begin(),
                         group.getGroupOps().end());
  Operation *copy = r->clone();
  for (unsigned i = 0; i < r->getNumOperands(); ++i)
    if (auto cast = r->getOperand(i).getDefiningOp<mlir::llmc::CastOp>();
        cast && cast->getParentOp() == group.getOperation())
      copy->setOperand(i, cast.getInput());
  out.operands.assign(copy->getOperands().begin(), copy->getOperands().end());
  // Each result: the epilogue cast's value and type where there is one.
  SmallVector<Value> finals(r->getResults());
  for (auto [j, result] : llvm::enumerate(r->getResults()))
    for (Operation *user : result.getUsers())
      if (isa<mlir::llmc::CastOp>(user)) {
        finals[j] = user->getResult(0);
        copy->getResult(j).setType(finals[j].getType());
      }
  FailureOr<OpLowering> lowering = lowerOp(copy, options, out.name);
  copy->erase();
  if (failed(lowering))
    return failure();
  out.lowering = std::move(*lowering);
  Operation *yield = group.getYield();
  for (Value f : finals) {
    Value outer = f;
    for (auto [k, y] : llvm::enumerate(yield->getOperands()))
      if (y == f)
        outer = group.getResult(k);
    out.results.push_back(outer);
  }
  return out;
}

/// cross_entropy and its gradient over the same logits (llmc-fuse-classifier):
/// one row pass; operands are the logits as stored (before the group's
/// widening cast), targets and dloss; results the loss and the gradient.
FailureOr<LoweredOp> lowerClassifierGroup(mlir::llmc::KernelOp group,
                                          const CodegenOptions &options,
                                          unsigned &index) {
  auto [ce, grad] = mlir::llmc::fusion::classifierOps(group);
  LoweredOp out;
  out.op = ce;
  unsigned at = index;
  for (Operation &op : group.getGroupOps()) {
    if (&op == ce.getOperation())
      break;
    ++at;
  }
  out.name = opName(*ce, at);
  index += std::distance(group.getGroupOps().begin(),
                         group.getGroupOps().end());
  Value logits = ce.getLogits();
  if (auto cast = logits.getDefiningOp<mlir::llmc::CastOp>();
      cast && cast->getParentOp() == group.getOperation())
    logits = cast.getInput();
  out.operands = {logits, grad.getTargets(), grad.getGrad()};
  out.results = {group.getResult(0), group.getResult(1)};
  EmitContext ctx{options, out.name};
  if (failed(emitClassifier(ce, grad, elementTypeOf(logits),
                            elementTypeOf(group.getResult(1)), ctx,
                            out.lowering)))
    return failure();
  for (EmittedKernel &k : out.lowering.kernels)
    k.origin = KernelSource::origin(group);
  return out;
}

/// A norm with its elementwise prologue and epilogue (RowFused): one warp
/// row kernel (RowFusedEmitters.cpp) reading the group's inputs; the
/// norm's results no one reads are still written, into buffers of their
/// own, as a one-op group writes them.
FailureOr<LoweredOp> lowerRowFusedGroup(mlir::llmc::KernelOp group,
                                        const CodegenOptions &options,
                                        unsigned &index) {
  Operation *norm = mlir::llmc::fusion::rowFusedParts(group)->norm;
  LoweredOp out;
  out.op = norm;
  unsigned at = index;
  for (Operation &op : group.getGroupOps()) {
    if (&op == norm)
      break;
    ++at;
  }
  out.name = opName(*norm, at);
  index += std::distance(group.getGroupOps().begin(),
                         group.getGroupOps().end());
  SmallVector<Value> inputs = mlir::llmc::fusion::groupInputs(group);
  out.operands.assign(inputs.begin(), inputs.end());
  out.results.assign(group.getResults().begin(), group.getResults().end());
  SmallVector<Value> extra;
  for (Value r : norm->getResults())
    if (r.use_empty())
      extra.push_back(r);
  out.results.insert(out.results.end(), extra.begin(), extra.end());
  EmitContext ctx{options, out.name};
  if (failed(emitRowFused(group, inputs, extra, ctx, out.lowering)))
    return failure();
  return out;
}

} // namespace

FailureOr<LoweredOp> lowerKernel(mlir::llmc::KernelOp group,
                                 const CodegenOptions &options,
                                 unsigned &index) {
  using mlir::llmc::fusion::GroupKind;
  auto ops = group.getGroupOps();
  Operation &first = *ops.begin();
  size_t count = std::distance(ops.begin(), ops.end());
  if (group->hasAttr(mlir::llmc::epilogue::kAttr))
    return lowerEpilogueGroup(group, options, index);
  GroupKind kind = mlir::llmc::fusion::classify(group);
  // One elementwise op is a group of one: the fused emitter's vector
  // loads and stores (16 bytes a thread) instead of one element a thread.
  if ((count > 1 && kind == GroupKind::Elementwise) ||
      (count == 1 && options.vectorSingles &&
       mlir::llmc::fusion::isElementwise(&first) &&
       first.getNumResults() == 1 && holdsOnlyKernelTypes(&first)))
    return lowerElementwiseGroup(group, options, index);
  if (kind == GroupKind::Reduction)
    return lowerReductionGroup(group, options, index);
  if (kind == GroupKind::Classifier)
    return lowerClassifierGroup(group, options, index);
  if (kind == GroupKind::RowFused)
    return lowerRowFusedGroup(group, options, index);
  mlir::llmc::AddOp add = biasAdd(group);
  if (count != 1 && !add)
    return group.emitError("codegen: a kernel group of ")
           << count << " ops ('" << first.getName()
           << "' first) is not one op, a matmul with its bias add, "
              "elementwise ops, a reduction with casts or a norm with an "
              "elementwise prologue/epilogue; no emitter takes it";
  LoweredOp out;
  out.op = &first;
  out.name = opName(first, index);
  out.operands.assign(first.getOperands().begin(), first.getOperands().end());
  FailureOr<OpLowering> lowering = lowerOp(&first, options, out.name);
  if (failed(lowering))
    return failure();
  out.lowering = std::move(*lowering);
  if (add) {
    ++index; // the add's name, so that later names are the unfused ones
    Value b = add.getLhs() == first.getResult(0) ? add.getRhs() : add.getLhs();
    std::optional<MatmulStep> &mm = out.lowering.matmul;
    auto bType = cast<RankedTensorType>(b.getType());
    if (!mm || mm->batch != 1 || mm->beta != 0 || !mm->c.empty() ||
        bType.getShape().back() != mm->n ||
        dtypeOf(bType.getElementType()) != mm->typeD)
      return group.emitError("codegen: the bias add of this group cannot "
                             "ride in the matmul's epilogue (one GEMM, an [n] "
                             "bias of the product's type)");
    out.bias = b;
    out.results.push_back(group.getResult(0));
    return out;
  }
  resultsThroughYield(group, &first, out);
  return out;
}

FailureOr<LoweredFunction> lowerFunction(func::FuncOp func,
                                         const CodegenOptions &options) {
  LoweredFunction out;
  unsigned index = 0;
  for (Operation &op : func.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      continue;
    if (auto group = dyn_cast<mlir::llmc::KernelOp>(op)) {
      FailureOr<LoweredOp> lowered = lowerKernel(group, options, index);
      if (failed(lowered))
        return failure();
      out.ops.push_back(std::move(*lowered));
      continue;
    }
    LoweredOp lo;
    lo.op = &op;
    lo.name = opName(op, index);
    FailureOr<OpLowering> lowering = lowerOp(&op, options, lo.name);
    if (failed(lowering))
      return failure();
    lo.lowering = std::move(*lowering);
    lo.operands.assign(op.getOperands().begin(), op.getOperands().end());
    lo.results.assign(op.getResults().begin(), op.getResults().end());
    out.ops.push_back(std::move(lo));
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Device bytes
//===----------------------------------------------------------------------===//

std::vector<uint8_t>
offsetTableBytes(const LoweredOp &op, const ScratchBuffer &table,
                 llvm::function_ref<int64_t(Value)> offsetOf) {
  auto valueOf = [&](const KernelArg &a) {
    return a.kind == KernelArg::Kind::Result ? op.results[a.index]
                                             : op.operands[a.index];
  };
  int64_t base = offsetOf(valueOf(table.offsetBase));
  std::vector<int64_t> entries;
  for (const KernelArg &a : table.offsetsOf)
    entries.push_back(offsetOf(valueOf(a)) - base);
  std::vector<uint8_t> bytes(entries.size() * sizeof(int64_t));
  std::memcpy(bytes.data(), entries.data(), bytes.size());
  return bytes;
}

std::string launchTable(const Plan &plan) {
  std::string s = "# " + plan.name + ": " +
                  std::to_string(plan.buffers.size()) + " buffers, " +
                  std::to_string(plan.arenaBytes) + " bytes unplanned; " +
                  std::to_string(plan.steps.size()) + " steps\n";
  for (const BufferInfo &b : plan.buffers) {
    std::string shape;
    for (int64_t d : b.shape)
      shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    s += "buffer " + b.name + " " + roleName(b.role) + " " +
         dtypeName(b.dtype) + "[" + shape + "] offset " +
         std::to_string(b.offset) + "\n";
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &step = plan.steps[i];
    s += "step " + std::to_string(i) + " ";
    if (auto *l = std::get_if<LaunchStep>(&step.op)) {
      auto dims = [](const std::array<uint32_t, 3> &d) {
        return "[" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " +
               std::to_string(d[2]) + "]";
      };
      s += "launch " + plan.kernels[l->kernel].name + " grid " + dims(l->grid) +
           " block " + dims(l->block) + " smem " +
           std::to_string(l->sharedBytes) + " args (";
      for (size_t a = 0; a < l->args.size(); ++a) {
        s += (a ? ", " : "") + l->args[a].name;
        // A head window of a packed qkv (docs/fusion.md): bytes in.
        if (l->args[a].offset)
          s += "+" + std::to_string(l->args[a].offset);
      }
      s += ")\n";
    } else if (auto *m = std::get_if<MatmulStep>(&step.op)) {
      s += "matmul " + step.label + " m " + std::to_string(m->m) + " n " +
           std::to_string(m->n) + " k " + std::to_string(m->k) + " batch " +
           std::to_string(m->batch) + " transA " + (m->transA ? "1" : "0") +
           " transB " + (m->transB ? "1" : "0") + " strideA " +
           std::to_string(m->effectiveStrideA()) + " strideB " +
           std::to_string(m->effectiveStrideB()) + " (" + m->a + ", " + m->b +
           " -> " + m->d + ")" + (m->bias.empty() ? "" : " bias " + m->bias) +
           (m->epilogue == MatmulEpilogue::None
                ? ""
                : std::string(" epilogue ") +
                      matmulEpilogueName(m->epilogue)) +
           (m->aux.empty() ? "" : " aux " + m->aux) +
           (m->biasGrad.empty() ? "" : " bias_grad " + m->biasGrad) +
           (m->tf32 ? " tf32" : "") + "\n";
    } else if (auto *a = std::get_if<AttentionStep>(&step.op)) {
      // Each view: buffer[+bytes] and its [b, h, s, d] element strides.
      auto view = [](const AttentionView &v) {
        return v.buffer + (v.offset ? "+" + std::to_string(v.offset) : "") +
               " [" + std::to_string(v.strides[0]) + ", " +
               std::to_string(v.strides[1]) + ", " +
               std::to_string(v.strides[2]) + ", " +
               std::to_string(v.strides[3]) + "]";
      };
      s += std::string("cudnn attention ") +
           (a->backward ? "backward" : "forward") + " " + step.label + " " +
           dtypeName(a->dtype) + " [" + std::to_string(a->b) + ", " +
           std::to_string(a->hq) + "/" + std::to_string(a->hkv) + ", " +
           std::to_string(a->sq) + "x" + std::to_string(a->skv) + ", " +
           std::to_string(a->d) + "]" + (a->causal ? " causal" : "") +
           (a->backward && !a->deterministic ? " atomic-dq" : "") + " (" +
           view(a->q) + ", " + view(a->k) + ", " + view(a->v);
      if (a->backward)
        s += ", " + view(a->o) + ", " + a->stats.buffer + ", " +
             view(a->dO) + " -> " + view(a->dQ) + ", " + view(a->dK) + ", " +
             view(a->dV) + ")\n";
      else
        s += " -> " + view(a->o) + ", " + a->stats.buffer + ")\n";
    } else {
      s += "memset\n";
    }
  }
  return s + phaseRuns(plan);
}

} // namespace llmc::codegen
