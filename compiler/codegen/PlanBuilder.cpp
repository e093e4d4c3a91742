//===- PlanBuilder.cpp - A lowered function as a memory-planned plan ------===//
//
// 1. One request (MemoryPlan.h) per argument, group result, scratch buffer
//    and alias (reshape); positions are the lowered groups' indices.
// 2. Uses extend live ranges (a fused bias is used at its matmul); returned
//    values, the optimizer's gradients and constants become persistent.
// 3. `llmc.next` results alias their argument when their group says so
//    (`in_place`, set by llmc-mark-in-place), else they are copied at the
//    end (position N).
// 4. Scalars (lr, step, loss) are chosen; planMemory places everything;
//    offset tables of multi-tensor kernels get their data.
// 5. Buffers, slots and the launch sequence are written out.
//
// Gradient accumulation (buildAccumulatingPlan) builds two functions into one
// plan: @accumulate_step's ops take positions [0, A), the apply step's
// [A, A + B), so one layout places the transients of both over the same
// space; arguments of the same name (parameters; the accumulators, state of
// the one and inputs of the other) share one buffer.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/PlanBuilder.h"
#include "compiler/codegen/MemoryPlan.h"
#include "compiler/codegen/SliceViews.h"
#include "compiler/codegen/StepPhases.h"
#include "runtime/CheckedSize.h"

#include "compiler/codegen/DeviceBytes.h"
#include "compiler/codegen/Emitters.h"
#include "compiler/common/ParameterInit.h"
#include "dialects/llmc/LlmcOps.h"
#include "passes/FusionUtils.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <map>
#include <set>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

/// What a request becomes in the plan (roots only).
struct Meta {
  std::string name;
  BufferRole role = BufferRole::Activation;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> realShape; // a padded parameter's (llmc.real_shape)
  std::vector<uint8_t> init;
  std::string scalar; // non-empty: a scalar slot of this name
  bool view = false;  // a slice read in place: a buffer inside its root's
};

/// The argument whose buffer `v` is written into, when its group says so
/// (llmc-mark-in-place); -1 otherwise.
int64_t inPlaceArgument(Value v) {
  auto group = v.getDefiningOp<KernelOp>();
  if (!group || !group.getInPlace())
    return -1;
  return (*group.getInPlace())[cast<OpResult>(v).getResultNumber()];
}

/// The input of its group whose buffer `v` is written over
/// (llmc-fuse-classifier's `llmc.overwrites`), or -1.
int64_t overwrittenInput(Value v) {
  auto group = v.getDefiningOp<KernelOp>();
  if (!group)
    return -1;
  return fusion::overwrittenInput(group, cast<OpResult>(v).getResultNumber());
}

/// The gradients an optimizer op reads, with their parameters.
SmallVector<std::pair<Value, Value>> gradientsRead(Operation *op) {
  SmallVector<std::pair<Value, Value>> out;
  if (auto update = dyn_cast<AdamWUpdateOp>(op))
    out.push_back({update.getGrad(), update.getParam()});
  if (auto multi = dyn_cast<MultiAdamWUpdateOp>(op))
    for (auto [g, p] : llvm::zip(multi.getGrads(), multi.getParams()))
      out.push_back({g, p});
  return out;
}

std::string stringAttr(func::FuncOp func, unsigned i, StringRef name) {
  auto a = func.getArgAttrOfType<StringAttr>(i, name);
  return a ? a.getValue().str() : "";
}

std::vector<int64_t> shapeOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return {t.getShape().begin(), t.getShape().end()};
}

/// A kernel that copies `bytes` from one buffer to another: the end-of-step
/// copy of an llmc.next result that could not be updated in place.
EmittedKernel copyKernel(const std::string &name, uint64_t bytes,
                         const std::string &what,
                         const CodegenOptions &options) {
  bool words = bytes % 4 == 0;
  uint64_t n = words ? bytes / 4 : bytes;
  std::string type = words ? "unsigned int" : "unsigned char";
  EmittedKernel k;
  k.name = name;
  k.source = "// " + name + ": " + what +
             "\n// copied at the end of the step (not updated in place)\n"
             "extern \"C\" __global__ void " +
             name + "(const " + type + " *__restrict__ src, " + type +
             " *__restrict__ dst) {\n  constexpr unsigned long long n = " +
             std::to_string(n) +
             "ull;\n  for (unsigned long long i = blockIdx.x * "
             "(unsigned long long)blockDim.x + threadIdx.x; i < n;\n"
             "       i += (unsigned long long)gridDim.x * blockDim.x)\n"
             "    dst[i] = src[i];\n}\n";
  k.block = {options.blockSize, 1, 1};
  uint64_t blocks = (n + options.blockSize - 1) / options.blockSize;
  k.grid = {static_cast<unsigned>(std::max<uint64_t>(
                1, std::min<uint64_t>(blocks, options.maxBlocks))),
            1, 1};
  k.origin = what;
  return k;
}

class Builder {
public:
  struct Part {
    func::FuncOp func;
    const LoweredFunction *lowered;
  };
  Builder(std::vector<Part> parts, const PlanBuildOptions &options)
      : parts_(std::move(parts)), options_(options) {}

  FailureOr<PlannedFunction> build();

private:
  int64_t addRequest(Meta meta, uint64_t bytes, bool persistent, int64_t pos) {
    BufferRequest r;
    r.bytes = bytes;
    r.persistent = persistent;
    r.first = r.last = pos;
    requests_.push_back(r);
    meta_.push_back(std::move(meta));
    return static_cast<int64_t>(requests_.size() - 1);
  }
  int64_t addValue(Value v, Meta meta, bool persistent, int64_t pos) {
    auto type = cast<RankedTensorType>(v.getType());
    meta.dtype = *dtypeOf(type.getElementType());
    meta.shape = shapeOf(v);
    uint64_t bytes = type.getNumElements() * dtypeSize(meta.dtype);
    int64_t slot = addRequest(std::move(meta), bytes, persistent, pos);
    slotOf_[v] = slot;
    return slot;
  }
  int64_t rootOf(int64_t slot) const {
    while (requests_[slot].aliasOf >= 0)
      slot = requests_[slot].aliasOf;
    return slot;
  }
  int64_t rootOf(Value v) const { return rootOf(slotOf_.lookup(v)); }
  /// The buffer `v` is known by: its root's, or a slice view's own.
  const Meta &named(Value v) const {
    int64_t slot = slotOf_.lookup(v);
    while (!meta_[slot].view && requests_[slot].aliasOf >= 0)
      slot = requests_[slot].aliasOf;
    return meta_[slot];
  }

  LogicalResult addArguments();
  LogicalResult addOps();
  LogicalResult markOutputs();
  LogicalResult chooseScalars();
  std::string uniqueName(const std::string &base);
  ::llmc::KernelArg location(Value v);
  std::string bufferName(Value v) { return named(v).name; }
  void enterPart(size_t part);
  void emitSteps(Plan &plan);
  void endAccumulateSequence(Plan &plan);
  void zeroAccumulators(Plan &plan);
  void fillOffsetTables(const MemoryLayout &layout);

  std::vector<Part> parts_;
  // The part being built (enterPart): its function, its lowering, and where
  // its ops start among all parts' positions.
  func::FuncOp func_;
  const LoweredFunction *lowered_ = nullptr;
  size_t part_ = 0;
  int64_t opBase_ = 0;
  std::string prefix_;
  // Argument names of earlier parts, for sharing their buffers.
  std::map<std::string, int64_t> argumentSlots_;
  const PlanBuildOptions &options_;
  std::vector<BufferRequest> requests_;
  std::vector<Meta> meta_;
  llvm::DenseMap<Value, int64_t> slotOf_;
  std::vector<std::vector<int64_t>> scratchSlots_; // per lowered op, all parts
  struct Copy {
    size_t part;
    unsigned result; // function result index
    Value value;
    int64_t argSlot; // where the next value goes
  };
  std::vector<Copy> copies_; // end-of-step copies, in result order
  std::set<std::string> names_;
  PlannedFunction out_;
};

std::string Builder::uniqueName(const std::string &base) {
  std::string name = base;
  for (int i = 2; names_.count(name); ++i)
    name = base + "#" + std::to_string(i);
  names_.insert(name);
  return name;
}

void Builder::enterPart(size_t part) {
  opBase_ = 0;
  for (size_t p = 0; p < part; ++p)
    opBase_ += static_cast<int64_t>(parts_[p].lowered->ops.size());
  part_ = part;
  // Both functions number their ops from 0: the accumulate step's buffers
  // and kernels take a prefix (endAccumulateSequence renames the kernels).
  prefix_ = parts_.size() > 1 && part == 0 ? "acc." : "";
  func_ = parts_[part].func;
  lowered_ = parts_[part].lowered;
}

LogicalResult Builder::addArguments() {
  for (unsigned i = 0; i < func_.getNumArguments(); ++i) {
    BlockArgument arg = func_.getArgument(i);
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape() || !dtypeOf(type.getElementType()))
      return func_.emitError("codegen: argument #")
             << i << " has type " << arg.getType()
             << ", which the CUDA backend cannot hold (a static tensor of "
                "f32, bf16, f16, i32, i64 or i1)";
    Meta m;
    std::string param = stringAttr(func_, i, "llmc.param");
    std::string input = stringAttr(func_, i, "llmc.input");
    std::string state = stringAttr(func_, i, "llmc.state");
    if (options_.unplanned) {
      // Named after the IR, as `llmc codegen` shows them; no data.
      m.role = param.empty() ? BufferRole::Input : BufferRole::Param;
      std::string label = param.empty() ? input : param;
      m.name = "arg" + std::to_string(i) + (label.empty() ? "" : ":" + label);
    } else if (!param.empty()) {
      m.role = BufferRole::Param;
      m.name = param;
      if (options_.initialData) {
        std::string error;
        auto bytes = initialParameterBytes(func_, i, options_.seed, error);
        if (!bytes)
          return func_.emitError("codegen: ") << error;
        m.init = std::move(*bytes);
      }
    } else if (!state.empty()) {
      // Accumulators are zero at every window's end: gradients, not state
      // that a checkpoint or a validation must keep.
      m.role = StringRef(state).starts_with("accum.")
                   ? BufferRole::Grad
                   : BufferRole::OptimizerState;
      std::string of = stringAttr(func_, i, "llmc.state_of");
      m.name = of.empty() ? state : state + ":" + of;
      // State starts at zero (the arena is cleared) unless the IR gives it
      // a value: fp16's loss scale (`amp.scale`, llmc.init = the initial
      // scale). Left at zero, the backward was seeded with 0 and the
      // unscale multiplied every gradient by 1/0: NaN on every step.
      if (options_.initialData && func_.getArgAttr(i, "llmc.init")) {
        std::string error;
        auto bytes = initialParameterBytes(func_, i, options_.seed, error);
        if (!bytes)
          return func_.emitError("codegen: ") << error;
        m.init = std::move(*bytes);
      }
    } else {
      m.role = BufferRole::Input;
      m.name = input.empty() ? "arg" + std::to_string(i) : input;
    }
    if (auto real = realShapeOf(func_, i))
      m.realShape = *real;
    // A later part's argument of an earlier one's name is that buffer.
    if (auto shared = argumentSlots_.find(m.name);
        !options_.unplanned && shared != argumentSlots_.end()) {
      int64_t slot = shared->second;
      if (meta_[slot].dtype != *dtypeOf(type.getElementType()) ||
          meta_[slot].shape != shapeOf(arg))
        return func_.emitError("codegen: argument #")
               << i << " '" << m.name << "' of @" << func_.getSymName()
               << " has another type than the argument of that name of @"
               << parts_[0].func.getSymName();
      slotOf_[arg] = slot;
      continue;
    }
    std::string name = m.name;
    m.name = uniqueName(m.name);
    argumentSlots_[name] = addValue(arg, std::move(m), /*persistent=*/true, -1);
  }
  return success();
}

LogicalResult Builder::addOps() {
  scratchSlots_.resize(opBase_ + lowered_->ops.size());
  for (auto [k, lo] : llvm::enumerate(lowered_->ops)) {
    int64_t pos = opBase_ + static_cast<int64_t>(k);
    Operation *op = lo.op;
    for (Value operand : lo.operands) {
      BufferRequest &r = requests_[slotOf_.lookup(operand)];
      r.last = std::max(r.last, pos);
    }
    // A fused bias is read by the matmul's epilogue, not by the add: its
    // range must reach the matmul. The later add makes it so already; this
    // does not rely on that.
    for (Value read : {lo.bias, lo.auxIn})
      if (read) {
        BufferRequest &r = requests_[slotOf_.lookup(read)];
        r.last = std::max(r.last, pos);
      }
    const OpLowering &l = lo.lowering;
    if (l.kind == OpLowering::Kind::Alias) {
      int64_t in = slotOf_.lookup(lo.operands[0]), slot;
      if (auto slice = dyn_cast<SliceOp>(op)) { // bytes into its input's
        Meta m;
        m.name = uniqueName(prefix_ + lo.name + ".view");
        m.view = true;
        m.role = options_.unplanned ? BufferRole::Scratch : m.role;
        slot = addValue(lo.results[0], std::move(m), false, pos);
        requests_[slot].aliasOffset = *sliceViewOffset(slice);
      } else {
        slot = addRequest(Meta{}, 0, false, pos);
      }
      requests_[slot].aliasOf = in;
      slotOf_[lo.results[0]] = slot;
      continue;
    }
    for (auto [j, result] : llvm::enumerate(lo.results)) {
      // Written over one of the group's inputs (llmc-fuse-classifier
      // decided it is the input's last reader): an alias, as a reshape.
      if (int64_t input = overwrittenInput(result); input >= 0) {
        auto group = result.getDefiningOp<KernelOp>();
        Value in = fusion::groupInputs(group)[input];
        int64_t inSlot = slotOf_.lookup(in);
        uint64_t bytes = cast<RankedTensorType>(result.getType())
                             .getNumElements() *
                         dtypeSize(*dtypeOf(cast<RankedTensorType>(
                                                result.getType())
                                                .getElementType()));
        if (requests_[rootOf(inSlot)].persistent ||
            requests_[rootOf(inSlot)].bytes != bytes)
          return group.emitError("codegen: result #")
                 << j << " is marked to overwrite input #" << input
                 << ", whose buffer is an argument, a constant or of "
                    "another size";
        int64_t slot = addRequest(Meta{}, 0, false, pos);
        requests_[slot].aliasOf = inSlot;
        slotOf_[result] = slot;
        ++out_.overwrittenInputs;
        continue;
      }
      Meta m;
      m.name = uniqueName(prefix_ + lo.name + ".out" + std::to_string(j));
      if (options_.unplanned)
        m.role = BufferRole::Scratch;
      addValue(result, std::move(m), false, pos);
    }
    if (l.kind == OpLowering::Kind::Constant) {
      std::string error;
      auto bytes = attrDeviceBytes(cast<ConstantOp>(op).getValue(), error);
      if (!bytes)
        return op->emitError("codegen: ") << error;
      int64_t slot = slotOf_.lookup(lo.results[0]);
      requests_[slot].persistent = true;
      meta_[slot].role = BufferRole::Scratch;
      meta_[slot].init = std::move(*bytes);
      continue;
    }
    for (const ScratchBuffer &s : l.scratch) {
      Meta m;
      m.name = uniqueName(prefix_ + lo.name + "." + s.name);
      m.role = BufferRole::Scratch;
      m.dtype = s.dtype;
      m.shape = s.shape;
      uint64_t n = 1;
      for (int64_t d : s.shape)
        n *= d;
      // Offset tables hold data written at load, and persistent scratch
      // (tickets) must keep its zeros: neither shares bytes with others.
      scratchSlots_[pos].push_back(
          addRequest(std::move(m), n * dtypeSize(s.dtype),
                     !s.offsetsOf.empty() || s.persistent, pos));
    }
  }
  return success();
}

/// Returned values are persistent outputs, except llmc.next results that
/// alias their argument; the optimizer's gradients are persistent too.
LogicalResult Builder::markOutputs() {
  if (options_.unplanned) {
    // Every value keeps its buffer: returned op results are outputs.
    auto ret = cast<func::ReturnOp>(func_.getBody().front().getTerminator());
    for (Value v : ret.getOperands())
      if (meta_[rootOf(v)].role == BufferRole::Scratch)
        meta_[rootOf(v)].role = BufferRole::Output;
    return success();
  }
  int64_t end = opBase_ + static_cast<int64_t>(lowered_->ops.size());
  auto ret = cast<func::ReturnOp>(func_.getBody().front().getTerminator());
  std::set<int64_t> claimed; // results and arguments already paired
  for (auto [r, v] : llvm::enumerate(ret.getOperands())) {
    int64_t slot = slotOf_.lookup(v);
    auto next = func_.getResultAttrOfType<IntegerAttr>(r, "llmc.next");
    if (next) {
      int64_t argSlot = slotOf_.lookup(func_.getArgument(next.getInt()));
      if (rootOf(slot) == argSlot)
        continue; // the argument itself, unchanged
      // llmc-mark-in-place decided; what it cannot know (buffer sizes,
      // slots made persistent here) is checked.
      if (inPlaceArgument(v) == next.getInt()) {
        if (requests_[slot].aliasOf >= 0 || requests_[slot].persistent ||
            claimed.count(slot) || claimed.count(argSlot) ||
            requests_[slot].bytes != requests_[argSlot].bytes)
          return v.getDefiningOp()->emitError("codegen: result #")
                 << cast<OpResult>(v).getResultNumber()
                 << " is marked in_place but cannot take argument #"
                 << next.getInt() << "'s buffer";
        requests_[slot].aliasOf = argSlot;
        claimed.insert(slot);
        claimed.insert(argSlot);
        ++out_.inPlaceUpdates;
        continue;
      }
      if (inPlaceArgument(v) >= 0)
        return v.getDefiningOp()->emitError("codegen: result #")
               << cast<OpResult>(v).getResultNumber()
               << " is marked in_place into argument #" << inPlaceArgument(v)
               << ", but it replaces argument #" << next.getInt();
      copies_.push_back({part_, static_cast<unsigned>(r), v, argSlot});
      requests_[slot].last = std::max(requests_[slot].last, end);
      requests_[argSlot].last = std::max(requests_[argSlot].last, end);
      ++out_.copiedUpdates;
      continue;
    }
    int64_t root = rootOf(slot);
    if (requests_[root].persistent)
      continue; // an argument or constant returned as is
    requests_[root].persistent = true;
    meta_[root].role = BufferRole::Output;
    auto output = func_.getResultAttrOfType<StringAttr>(r, "llmc.output");
    auto gradOf = func_.getResultAttrOfType<StringAttr>(r, "llmc.grad_of");
    if (gradOf) {
      meta_[root].role = BufferRole::Grad;
      names_.erase(meta_[root].name);
      meta_[root].name = uniqueName("grad:" + gradOf.getValue().str());
    } else if (output) {
      names_.erase(meta_[root].name);
      meta_[root].name = uniqueName(output.getValue().str());
    }
  }
  for (const LoweredOp &lo : lowered_->ops)
    for (auto [grad, param] : gradientsRead(lo.op)) {
      int64_t root = rootOf(grad);
      if (requests_[root].persistent)
        continue;
      requests_[root].persistent = true;
      meta_[root].role = BufferRole::Grad;
      names_.erase(meta_[root].name);
      meta_[root].name = uniqueName("grad:" + meta_[rootOf(param)].name);
    }
  return success();
}

/// lr, step and loss become scalar slots where llmc-mark-scalar-slots says
/// so (`llmc.slot`); what only the plan knows (one root per slot, a rank-0
/// buffer of the slot's type) is checked.
LogicalResult Builder::chooseScalars() {
  auto choose = [&](int64_t root, StringRef name) -> LogicalResult {
    Meta &m = meta_[root];
    DType dtype = name == "step" ? DType::I64 : DType::F32;
    if (name != "lr" && name != "step" && name != "loss")
      return func_.emitError("codegen: unknown scalar slot '") << name << "'";
    if (m.dtype != dtype || !m.shape.empty() || !m.scalar.empty() ||
        (names_.count(name.str()) && m.name != name))
      return func_.emitError("codegen: '")
             << m.name << "' cannot be the scalar slot '" << name << "'";
    names_.erase(m.name);
    m.scalar = name.str();
    names_.insert(name.str());
    return success();
  };
  for (unsigned i = 0; i < func_.getNumArguments(); ++i)
    if (auto slot = func_.getArgAttrOfType<StringAttr>(i, "llmc.slot"))
      if (failed(choose(rootOf(func_.getArgument(i)), slot.getValue())))
        return failure();
  auto ret = cast<func::ReturnOp>(func_.getBody().front().getTerminator());
  for (auto [r, v] : llvm::enumerate(ret.getOperands()))
    if (auto slot = func_.getResultAttrOfType<StringAttr>(r, "llmc.slot"))
      if (failed(choose(rootOf(v), slot.getValue())))
        return failure();
  return success();
}

::llmc::KernelArg Builder::location(Value v) {
  const Meta &m = named(v);
  return m.scalar.empty() ? ::llmc::KernelArg::buffer(m.name)
                          : ::llmc::KernelArg::scalar(m.scalar);
}

/// What an op must move at the least: every value it reads from outside
/// and every result, once (a view's bytes are its own shape's). Scalars
/// and tensors of a type codegen does not store count nothing.
static uint64_t opBytes(const LoweredOp &lo) {
  llvm::SmallPtrSet<void *, 8> seen;
  uint64_t bytes = 0;
  auto add = [&](Value v) {
    if (!v || !seen.insert(v.getAsOpaquePointer()).second)
      return;
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || !type.hasStaticShape())
      return;
    if (auto dtype = dtypeOf(type.getElementType()))
      bytes += static_cast<uint64_t>(type.getNumElements()) *
               dtypeSize(*dtype);
  };
  for (Value v : lo.operands)
    add(v);
  for (Value v : lo.results)
    add(v);
  add(lo.bias);
  add(lo.auxIn);
  return bytes;
}

void Builder::emitSteps(Plan &plan) {
  std::vector<::llmc::StepPhase> phases = stepPhases(func_, *lowered_);
  for (auto [k, lo] : llvm::enumerate(lowered_->ops)) {
    const OpLowering &l = lo.lowering;
    if (l.kind == OpLowering::Kind::Alias ||
        l.kind == OpLowering::Kind::Constant)
      continue;
    // On the op's first step only: a multi-kernel op counts them once.
    uint64_t bytes = opBytes(lo);
    if (l.kind == OpLowering::Kind::Matmul) {
      MatmulStep mm = *l.matmul;
      mm.a = bufferName(lo.operands[0]);
      mm.b = bufferName(lo.operands[1]);
      mm.d = bufferName(lo.results[0]);
      if (lo.bias)
        mm.bias = bufferName(lo.bias);
      // An epilogue's second result: GELU's aux output or a bias gradient.
      if (lo.auxIn)
        mm.aux = bufferName(lo.auxIn);
      if (lo.results.size() == 2) {
        if (mm.epilogue == ::llmc::MatmulEpilogue::Gelu)
          mm.aux = bufferName(lo.results[1]);
        else
          mm.biasGrad = bufferName(lo.results[1]);
      }
      plan.steps.push_back(
          {mm, lo.name, phases[k], KernelSource::origin(lo.op), bytes});
      continue;
    }
    if (l.kind == OpLowering::Kind::Attention) {
      AttentionStep step = *l.attention;
      AttentionView *views[] = {&step.q,  &step.k,  &step.v,
                                &step.o,  &step.stats, &step.dO,
                                &step.dQ, &step.dK, &step.dV};
      for (auto [i, a] : llvm::enumerate(l.attentionArgs)) {
        Value v = a.kind == KernelArg::Kind::Operand ? lo.operands[a.index]
                                                     : lo.results[a.index];
        views[i]->buffer = bufferName(v);
        views[i]->offset = a.byteOffset;
      }
      plan.steps.push_back(
          {step, lo.name, phases[k], KernelSource::origin(lo.op), bytes});
      continue;
    }
    for (const EmittedKernel &kernel : l.kernels) {
      KernelInfo info;
      info.name = info.entry = kernel.name;
      info.source = kernel.source;
      info.origin = kernel.origin;
      plan.kernels.push_back(std::move(info));
      uint32_t index = static_cast<uint32_t>(plan.kernels.size() - 1);
      LaunchStep step = launchStepFor(kernel, index, [&](const KernelArg &a) {
        switch (a.kind) {
        case KernelArg::Kind::Operand:
          return location(lo.operands[a.index]);
        case KernelArg::Kind::Result:
          return location(lo.results[a.index]);
        default:
          return ::llmc::KernelArg::buffer(
              meta_[scratchSlots_[opBase_ + k][a.index]].name);
        }
      });
      plan.steps.push_back(
          {std::move(step), kernel.name, phases[k], "", bytes});
      bytes = 0;
    }
  }
  CodegenOptions codegen;
  for (auto [i, copy] : llvm::enumerate(copies_)) {
    if (copy.part != part_)
      continue;
    int64_t argSlot = copy.argSlot;
    std::string name = "copy_" + std::to_string(i);
    const Meta &to = meta_[argSlot];
    std::string what = "the next value of '" +
                       (to.scalar.empty() ? to.name : to.scalar) +
                       "' (llmc.next)";
    EmittedKernel k = copyKernel(name, requests_[argSlot].bytes, what, codegen);
    KernelInfo info;
    info.name = info.entry = name;
    info.source = k.source;
    info.origin = what;
    plan.kernels.push_back(std::move(info));
    LaunchStep step;
    step.kernel = static_cast<uint32_t>(plan.kernels.size() - 1);
    step.grid = {k.grid[0], 1, 1};
    step.block = {k.block[0], 1, 1};
    step.args = {location(copy.value),
                 to.scalar.empty() ? ::llmc::KernelArg::buffer(to.name)
                                   : ::llmc::KernelArg::scalar(to.scalar)};
    // The next value of a state argument: the end of the update.
    plan.steps.push_back(
        {std::move(step), name, ::llmc::StepPhase::Optimizer});
  }
}

/// The steps so far are the accumulate sequence. Both functions name their
/// ops `<mnemonic>_<n>` from 0, so its kernels and labels take the prefix
/// `acc.` (the entry symbols stay: each kernel is a module of its own).
void Builder::endAccumulateSequence(Plan &plan) {
  plan.accumulateSteps = plan.steps.size();
  for (KernelInfo &k : plan.kernels)
    k.name = "acc." + k.name;
  for (Step &step : plan.steps)
    if (!step.label.empty())
      step.label = "acc." + step.label;
}

/// The apply sequence ends by zeroing the accumulators (the first part's
/// state), so the next window starts from zero without a host call; the
/// arena is zero at load.
void Builder::zeroAccumulators(Plan &plan) {
  func::FuncOp accumulate = parts_[0].func;
  for (BlockArgument arg : accumulate.getArguments()) {
    if (!accumulate.getArgAttr(arg.getArgNumber(), "llmc.state"))
      continue;
    MemsetStep zero;
    zero.buffer = bufferName(arg);
    plan.steps.push_back({zero, "zero " + zero.buffer,
                          ::llmc::StepPhase::Optimizer});
  }
}

/// Offset tables (ScratchBuffer::offsetsOf): byte offsets of operands and
/// results relative to the base's, now that the layout is known.
void Builder::fillOffsetTables(const MemoryLayout &layout) {
  for (auto [k, lo] : llvm::enumerate(lowered_->ops))
    for (auto [s, scratch] : llvm::enumerate(lo.lowering.scratch))
      if (!scratch.offsetsOf.empty())
        meta_[scratchSlots_[opBase_ + k][s]].init =
            offsetTableBytes(lo, scratch, [&](Value v) {
              return static_cast<int64_t>(layout.offsets[slotOf_.lookup(v)]);
            });
}

FailureOr<PlannedFunction> Builder::build() {
  for (size_t p = 0; p < parts_.size(); ++p) {
    enterPart(p);
    if (failed(addArguments()) || failed(addOps()) || failed(markOutputs()))
      return failure();
  }
  MemoryLayout layout;
  if (options_.unplanned) {
    layout = stackMemory(requests_);
  } else {
    for (size_t p = 0; p < parts_.size(); ++p) {
      enterPart(p);
      if (failed(chooseScalars()))
        return failure();
    }
    layout = planMemory(requests_);
  }
  if (layout.tooLarge)
    return func_.emitError("memory plan: @")
           << func_.getSymName() << " needs an arena of about "
           << ::llmc::bytesText(layout.neededBytes) << ", more than the "
           << ::llmc::bytesText(double(::llmc::kMaxArenaBytes))
           << " llmc allows; lower the batch size or sequence length";
  for (size_t p = 0; p < parts_.size(); ++p) {
    enterPart(p);
    fillOffsetTables(layout);
  }

  Plan &plan = out_.plan;
  plan.name = func_.getSymName().str();
  plan.arenaBytes = layout.arenaBytes;
  out_.persistentBytes = layout.persistentBytes;
  out_.unplannedBytes = layout.unplannedBytes;
  for (size_t i = 0; i < requests_.size(); ++i) {
    Meta &m = meta_[i];
    if (layout.roots[i] != static_cast<int64_t>(i) && !m.view)
      continue; // an alias: its root's buffer; a slice view has its own
    if (!m.scalar.empty()) {
      ScalarSlot s;
      s.name = m.scalar;
      s.dtype = m.dtype;
      s.offset = layout.offsets[i];
      plan.scalars.push_back(std::move(s));
      continue;
    }
    BufferInfo b;
    b.name = m.name;
    b.role = m.role;
    b.dtype = m.dtype;
    b.shape = m.shape;
    b.realShape = m.realShape;
    b.offset = layout.offsets[i];
    b.bytes = std::max<uint64_t>(1, requests_[i].bytes);
    b.init = std::move(m.init);
    plan.buffers.push_back(std::move(b));
  }
  for (size_t p = 0; p < parts_.size(); ++p) {
    enterPart(p);
    emitSteps(plan);
    if (p == 0 && parts_.size() > 1)
      endAccumulateSequence(plan);
  }
  if (parts_.size() > 1)
    zeroAccumulators(plan);

  // The last part is the function the plan is called by.
  auto locate = [&](Value v) {
    const Meta &m = named(v);
    return m.scalar.empty() ? ValueLocation{false, m.name}
                            : ValueLocation{true, m.scalar};
  };
  for (BlockArgument arg : func_.getArguments())
    out_.arguments.push_back(locate(arg));
  auto ret = cast<func::ReturnOp>(func_.getBody().front().getTerminator());
  for (Value v : ret.getOperands())
    out_.results.push_back(locate(v));
  for (const Copy &copy : copies_)
    if (copy.part == part_)
      out_.results[copy.result] = locate(func_.getArgument(
        func_.getResultAttrOfType<IntegerAttr>(copy.result, "llmc.next")
            .getInt()));
  return std::move(out_);
}

} // namespace

FailureOr<PlannedFunction> buildPlannedPlan(func::FuncOp func,
                                            const LoweredFunction &lowered,
                                            const PlanBuildOptions &options) {
  return Builder({{func, &lowered}}, options).build();
}

FailureOr<PlannedFunction>
buildAccumulatingPlan(func::FuncOp accumulate,
                      const LoweredFunction &accumulateLowered,
                      func::FuncOp apply, const LoweredFunction &applyLowered,
                      const PlanBuildOptions &options) {
  if (options.unplanned)
    return apply.emitError("codegen: an accumulating plan is always planned");
  return Builder({{accumulate, &accumulateLowered}, {apply, &applyLowered}},
                 options)
      .build();
}

FailureOr<UnplannedPlan> buildUnplannedPlan(func::FuncOp func,
                                            const LoweredFunction &lowered) {
  PlanBuildOptions options;
  options.unplanned = true;
  options.initialData = false;
  FailureOr<PlannedFunction> planned = buildPlannedPlan(func, lowered, options);
  if (failed(planned))
    return failure();
  UnplannedPlan out;
  out.plan = std::move(planned->plan);
  for (const ValueLocation &l : planned->arguments)
    out.argumentBuffers.push_back(l.name);
  for (const ValueLocation &l : planned->results)
    out.resultBuffers.push_back(l.name);
  return out;
}

} // namespace llmc::codegen
