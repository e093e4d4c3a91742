//===- FunctionLowering.cpp - A function's ops lowered, and a plan of them ===//
#include "compiler/codegen/FunctionLowering.h"

#include "compiler/codegen/DeviceBytes.h"
#include "dialects/llmc/LlmcOps.h"

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

FailureOr<LoweredOp> lowerKernel(mlir::llmc::KernelOp group,
                                 const CodegenOptions &options,
                                 unsigned &index) {
  auto ops = group.getGroupOps();
  Operation &first = *ops.begin();
  size_t count = std::distance(ops.begin(), ops.end());
  mlir::llmc::AddOp add = biasAdd(group);
  if (count != 1 && !add)
    return group.emitError("codegen: a kernel group of ")
           << count << " ops ('" << first.getName()
           << "' first) is neither one op nor a matmul with its bias add; no "
              "emitter takes it";
  LoweredOp out;
  out.op = &first;
  out.name = opName(first, index);
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
  // Each result of the op by the group result that yields it; one that is
  // not yielded is still written, into a buffer of its own.
  Operation *yield = group.getYield();
  for (Value r : first.getResults()) {
    Value outer = r;
    for (auto [k, y] : llvm::enumerate(yield->getOperands()))
      if (y == r)
        outer = group.getResult(k);
    out.results.push_back(outer);
  }
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
    lo.results.assign(op.getResults().begin(), op.getResults().end());
    out.ops.push_back(std::move(lo));
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Device bytes
//===----------------------------------------------------------------------===//

static size_t elementBytes(ElementKind kind) {
  switch (kind) {
  case ElementKind::F64:
  case ElementKind::I64:
    return 8;
  case ElementKind::F32:
  case ElementKind::I32:
    return 4;
  case ElementKind::F16:
  case ElementKind::BF16:
    return 2;
  default:
    return 1;
  }
}

std::vector<uint8_t>
offsetTableBytes(const LoweredOp &op, const ScratchBuffer &table,
                 llvm::function_ref<int64_t(Value)> offsetOf) {
  auto valueOf = [&](const KernelArg &a) {
    return a.kind == KernelArg::Kind::Result ? op.results[a.index]
                                             : op.op->getOperand(a.index);
  };
  int64_t base = offsetOf(valueOf(table.offsetBase));
  std::vector<int64_t> entries;
  for (const KernelArg &a : table.offsetsOf)
    entries.push_back(offsetOf(valueOf(a)) - base);
  std::vector<uint8_t> bytes(entries.size() * sizeof(int64_t));
  std::memcpy(bytes.data(), entries.data(), bytes.size());
  return bytes;
}

std::vector<uint8_t> toDeviceBytes(const RefTensor &t) {
  size_t width = elementBytes(t.kind);
  int64_t n = t.numElements();
  std::vector<uint8_t> bytes(n * width);
  for (int64_t i = 0; i < n; ++i) {
    uint8_t *p = bytes.data() + i * width;
    switch (t.kind) {
    case ElementKind::F32: {
      float f = static_cast<float>(t.floats[i]);
      std::memcpy(p, &f, 4);
      break;
    }
    case ElementKind::F16:
    case ElementKind::BF16: {
      auto bits = static_cast<uint16_t>(
          floatToBits(t.floats[i], floatFormatOf(t.kind)));
      std::memcpy(p, &bits, 2);
      break;
    }
    case ElementKind::I64:
      std::memcpy(p, &t.ints[i], 8);
      break;
    case ElementKind::I32: {
      auto v = static_cast<int32_t>(t.ints[i]);
      std::memcpy(p, &v, 4);
      break;
    }
    case ElementKind::I1:
      *p = t.ints[i] != 0;
      break;
    default: // f64/f8 never reach the device (lowerOp rejects them)
      break;
    }
  }
  return bytes;
}

RefTensor fromDeviceBytes(const std::vector<uint8_t> &bytes, ElementKind kind,
                          std::vector<int64_t> shape) {
  RefTensor t(kind, std::move(shape));
  size_t width = elementBytes(kind);
  for (int64_t i = 0, n = t.numElements(); i < n; ++i) {
    const uint8_t *p = bytes.data() + i * width;
    switch (kind) {
    case ElementKind::F32: {
      float f;
      std::memcpy(&f, p, 4);
      t.floats[i] = f;
      break;
    }
    case ElementKind::F16:
    case ElementKind::BF16: {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      t.floats[i] = bitsToFloat(bits, floatFormatOf(kind));
      break;
    }
    case ElementKind::I64:
      std::memcpy(&t.ints[i], p, 8);
      break;
    case ElementKind::I32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      t.ints[i] = v;
      break;
    }
    case ElementKind::I1:
      t.ints[i] = *p != 0;
      break;
    default:
      break;
    }
  }
  return t;
}

//===----------------------------------------------------------------------===//
// Unplanned plan
//===----------------------------------------------------------------------===//

namespace {

class PlanAssembler {
public:
  explicit PlanAssembler(Plan &plan) : plan_(plan) {}

  /// Adds a buffer for `v` (or returns the existing one).
  std::string add(Value v, const std::string &name, BufferRole role) {
    auto type = cast<RankedTensorType>(v.getType());
    BufferInfo b;
    b.name = name;
    b.role = role;
    b.dtype = *dtypeOf(type.getElementType());
    b.shape.assign(type.getShape().begin(), type.getShape().end());
    place(b);
    names_[v] = name;
    return name;
  }

  void addScratch(const ScratchBuffer &s, const std::string &name) {
    BufferInfo b;
    b.name = name;
    b.role = BufferRole::Scratch;
    b.dtype = s.dtype;
    b.shape = s.shape;
    place(b);
  }

  void alias(Value result, Value operand) {
    // Copy first: inserting `result` may rehash and move `operand`'s entry.
    std::string name = names_[operand];
    names_[result] = std::move(name);
  }
  const std::string &nameOf(Value v) { return names_[v]; }
  BufferInfo *find(const std::string &name) {
    for (BufferInfo &b : plan_.buffers)
      if (b.name == name)
        return &b;
    return nullptr;
  }
  void finish() { plan_.arenaBytes = next_; }

private:
  void place(BufferInfo &b) {
    b.offset = next_;
    b.bytes = std::max<uint64_t>(1, b.elementCount() * dtypeSize(b.dtype));
    next_ = (b.offset + b.bytes + 255) / 256 * 256;
    plan_.buffers.push_back(std::move(b));
  }

  Plan &plan_;
  uint64_t next_ = 0;
  llvm::DenseMap<Value, std::string> names_;
};

std::string argumentName(func::FuncOp func, unsigned i, BufferRole &role) {
  role = BufferRole::Input;
  std::string name = "arg" + std::to_string(i);
  if (auto p = func.getArgAttrOfType<StringAttr>(i, "llmc.param")) {
    role = BufferRole::Param;
    return name + ":" + p.getValue().str();
  }
  if (auto in = func.getArgAttrOfType<StringAttr>(i, "llmc.input"))
    return name + ":" + in.getValue().str();
  return name;
}

} // namespace

FailureOr<UnplannedPlan> buildUnplannedPlan(func::FuncOp func,
                                            const LoweredFunction &lowered) {
  UnplannedPlan out;
  Plan &plan = out.plan;
  plan.name = func.getSymName().str();
  PlanAssembler asm_(plan);
  struct Table {
    const LoweredOp *op;
    const ScratchBuffer *scratch;
    std::string buffer;
  };
  std::vector<Table> tables; // offset tables, filled once all are placed
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    BufferRole role;
    std::string name = argumentName(func, i, role);
    if (!dtypeOf(cast<RankedTensorType>(func.getArgument(i).getType())
                     .getElementType()))
      return func.emitError("codegen: argument #")
             << i << " has an element type the CUDA backend does not support";
    out.argumentBuffers.push_back(asm_.add(func.getArgument(i), name, role));
  }

  for (const LoweredOp &lo : lowered.ops) {
    Operation *op = lo.op;
    const OpLowering &l = lo.lowering;
    if (l.kind == OpLowering::Kind::Alias) {
      asm_.alias(lo.results[0], op->getOperand(0));
      continue;
    }
    for (auto [j, result] : llvm::enumerate(lo.results))
      asm_.add(result, lo.name + ".out" + std::to_string(j),
               BufferRole::Scratch);
    if (l.kind == OpLowering::Kind::Constant) {
      std::string error;
      auto value = cast<mlir::llmc::ConstantOp>(op).getValue();
      std::optional<std::vector<uint8_t>> bytes = attrDeviceBytes(value, error);
      if (!bytes)
        return op->emitError("codegen: ") << error;
      asm_.find(asm_.nameOf(lo.results[0]))->init = std::move(*bytes);
      continue;
    }
    if (l.kind == OpLowering::Kind::Matmul) {
      MatmulStep mm = *l.matmul;
      mm.a = asm_.nameOf(op->getOperand(0));
      mm.b = asm_.nameOf(op->getOperand(1));
      mm.d = asm_.nameOf(lo.results[0]);
      if (lo.bias)
        mm.bias = asm_.nameOf(lo.bias);
      plan.steps.push_back({mm, lo.name});
      continue;
    }
    std::vector<std::string> scratch;
    for (const ScratchBuffer &s : l.scratch) {
      scratch.push_back(lo.name + "." + s.name);
      asm_.addScratch(s, scratch.back());
      if (!s.offsetsOf.empty())
        tables.push_back({&lo, &s, scratch.back()});
    }
    for (const EmittedKernel &k : l.kernels) {
      KernelInfo info;
      info.name = k.name;
      info.entry = k.name;
      info.source = k.source;
      info.origin = k.origin;
      plan.kernels.push_back(std::move(info));
      uint32_t index = static_cast<uint32_t>(plan.kernels.size() - 1);
      LaunchStep step = launchStepFor(k, index, [&](const KernelArg &a) {
        switch (a.kind) {
        case KernelArg::Kind::Operand:
          return ::llmc::KernelArg::buffer(asm_.nameOf(op->getOperand(a.index)));
        case KernelArg::Kind::Result:
          return ::llmc::KernelArg::buffer(asm_.nameOf(lo.results[a.index]));
        default:
          return ::llmc::KernelArg::buffer(scratch[a.index]);
        }
      });
      plan.steps.push_back({std::move(step), k.name});
    }
  }

  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (Value v : ret.getOperands()) {
    std::string name = asm_.nameOf(v);
    BufferInfo *b = asm_.find(name);
    if (b && b->role == BufferRole::Scratch)
      b->role = BufferRole::Output;
    out.resultBuffers.push_back(name);
  }
  for (const Table &t : tables)
    asm_.find(t.buffer)->init =
        offsetTableBytes(*t.op, *t.scratch, [&](Value v) {
          return static_cast<int64_t>(asm_.find(asm_.nameOf(v))->offset);
        });
  asm_.finish();
  return out;
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
      for (size_t a = 0; a < l->args.size(); ++a)
        s += (a ? ", " : "") + l->args[a].name;
      s += ")\n";
    } else if (auto *m = std::get_if<MatmulStep>(&step.op)) {
      s += "matmul " + step.label + " m " + std::to_string(m->m) + " n " +
           std::to_string(m->n) + " k " + std::to_string(m->k) + " batch " +
           std::to_string(m->batch) + " transA " + (m->transA ? "1" : "0") +
           " transB " + (m->transB ? "1" : "0") + " strideA " +
           std::to_string(m->effectiveStrideA()) + " strideB " +
           std::to_string(m->effectiveStrideB()) + " (" + m->a + ", " + m->b +
           " -> " + m->d + ")" + (m->bias.empty() ? "" : " bias " + m->bias) +
           "\n";
    } else {
      s += "memset\n";
    }
  }
  return s;
}

} // namespace llmc::codegen
