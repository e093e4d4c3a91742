//===- Plan.cpp - The execution plan: names and validation ----------------===//
//
// validatePlan runs on every plan the runtime loads, before anything touches
// the GPU, so that a bad plan is a message naming the buffer or step instead
// of an illegal address in some kernel.
//
//===----------------------------------------------------------------------===//
#include "runtime/Plan.h"
#include "runtime/PlanAttention.h"
#include "runtime/CheckedSize.h"

#include <optional>
#include <set>

namespace llmc {

const char *matmulEpilogueName(MatmulEpilogue e) {
  switch (e) {
  case MatmulEpilogue::None:
    return "none";
  case MatmulEpilogue::Gelu:
    return "gelu";
  case MatmulEpilogue::GeluGrad:
    return "gelu_grad";
  case MatmulEpilogue::BiasGradA:
    return "bias_grad_a";
  case MatmulEpilogue::BiasGradB:
    return "bias_grad_b";
  }
  return "?";
}

bool matmulEpilogueFromName(const std::string &name, MatmulEpilogue &out) {
  for (MatmulEpilogue e :
       {MatmulEpilogue::None, MatmulEpilogue::Gelu, MatmulEpilogue::GeluGrad,
        MatmulEpilogue::BiasGradA, MatmulEpilogue::BiasGradB})
    if (name == matmulEpilogueName(e)) {
      out = e;
      return true;
    }
  return false;
}

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

namespace {
struct DTypeEntry {
  DType type;
  const char *name;
  size_t size;
};
const DTypeEntry kDTypes[] = {
    {DType::F32, "f32", 4},       {DType::F16, "f16", 2},
    {DType::BF16, "bf16", 2},     {DType::F8E4M3, "f8e4m3", 1},
    {DType::F8E5M2, "f8e5m2", 1}, {DType::I32, "i32", 4},
    {DType::I64, "i64", 8},       {DType::U8, "u8", 1},
    {DType::U16, "u16", 2},
};

struct RoleEntry {
  BufferRole role;
  const char *name;
};
const RoleEntry kRoles[] = {
    {BufferRole::Param, "param"},
    {BufferRole::Grad, "grad"},
    {BufferRole::OptimizerState, "optimizer_state"},
    {BufferRole::Input, "input"},
    {BufferRole::Output, "output"},
    {BufferRole::Activation, "activation"},
    {BufferRole::Scratch, "scratch"},
};
} // namespace

size_t dtypeSize(DType type) {
  for (const DTypeEntry &entry : kDTypes)
    if (entry.type == type)
      return entry.size;
  return 0;
}

const char *dtypeName(DType type) {
  for (const DTypeEntry &entry : kDTypes)
    if (entry.type == type)
      return entry.name;
  return "?";
}

bool parseDType(const std::string &name, DType &type) {
  for (const DTypeEntry &entry : kDTypes)
    if (name == entry.name) {
      type = entry.type;
      return true;
    }
  return false;
}

const char *roleName(BufferRole role) {
  for (const RoleEntry &entry : kRoles)
    if (entry.role == role)
      return entry.name;
  return "?";
}

bool parseRole(const std::string &name, BufferRole &role) {
  for (const RoleEntry &entry : kRoles)
    if (name == entry.name) {
      role = entry.role;
      return true;
    }
  return false;
}

const char *phaseName(StepPhase phase) {
  switch (phase) {
  case StepPhase::Forward:
    return "forward";
  case StepPhase::Backward:
    return "backward";
  case StepPhase::Optimizer:
    return "optimizer";
  }
  return "?";
}

bool parsePhase(const std::string &name, StepPhase &phase) {
  for (StepPhase p :
       {StepPhase::Forward, StepPhase::Backward, StepPhase::Optimizer})
    if (name == phaseName(p)) {
      phase = p;
      return true;
    }
  return false;
}

uint64_t BufferInfo::elementCount() const {
  uint64_t count = 1;
  for (int64_t dim : shape)
    count *= static_cast<uint64_t>(dim);
  return count;
}

KernelArg KernelArg::buffer(std::string name, uint64_t offset) {
  KernelArg arg;
  arg.kind = Kind::Buffer;
  arg.name = std::move(name);
  arg.offset = offset;
  return arg;
}
KernelArg KernelArg::scalar(std::string name) {
  KernelArg arg;
  arg.kind = Kind::Scalar;
  arg.name = std::move(name);
  return arg;
}
KernelArg KernelArg::i32(int32_t value) {
  KernelArg arg;
  arg.kind = Kind::I32;
  arg.intValue = value;
  return arg;
}
KernelArg KernelArg::i64(int64_t value) {
  KernelArg arg;
  arg.kind = Kind::I64;
  arg.intValue = value;
  return arg;
}
KernelArg KernelArg::f32(float value) {
  KernelArg arg;
  arg.kind = Kind::F32;
  arg.floatValue = value;
  return arg;
}

const BufferInfo *Plan::findBuffer(const std::string &name) const {
  for (const BufferInfo &buffer : buffers)
    if (buffer.name == name)
      return &buffer;
  return nullptr;
}

const ScalarSlot *Plan::findScalar(const std::string &name) const {
  for (const ScalarSlot &slot : scalars)
    if (slot.name == name)
      return &slot;
  return nullptr;
}

std::string Plan::describeStep(size_t index) const {
  std::string text = "step " + std::to_string(index);
  if (index >= steps.size())
    return text;
  const Step &step = steps[index];
  if (const auto *launch = std::get_if<LaunchStep>(&step.op)) {
    text += " (launch";
    if (launch->kernel < kernels.size())
      text += " '" + kernels[launch->kernel].name + "'";
    text += ")";
  } else if (std::holds_alternative<MatmulStep>(step.op)) {
    text += " (matmul)";
  } else if (const auto *a = std::get_if<AttentionStep>(&step.op)) {
    text += a->backward ? " (cudnn attention backward)"
                        : " (cudnn attention forward)";
  } else {
    text += " (memset)";
  }
  if (!step.label.empty())
    text += " \"" + step.label + "\"";
  return text;
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

namespace {

bool isPowerOfTwo(uint64_t x) { return x && !(x & (x - 1)); }

Status checkBuffers(const Plan &plan, std::set<std::string> &names) {
  for (const BufferInfo &b : plan.buffers) {
    std::string what = "buffer '" + b.name + "'";
    if (b.name.empty())
      return Status::error("a buffer has no name");
    if (!names.insert(b.name).second)
      return Status::error("two buffers or scalar slots are named '" + b.name +
                           "'");
    if (!isPowerOfTwo(b.alignment))
      return Status::error(what + ": alignment " + std::to_string(b.alignment) +
                           " is not a power of two");
    if (b.offset % b.alignment != 0)
      return Status::error(what + ": offset " + std::to_string(b.offset) +
                           " is not a multiple of its alignment " +
                           std::to_string(b.alignment));
    if (b.offset > plan.arenaBytes || b.bytes > plan.arenaBytes - b.offset)
      return Status::error(what + ": bytes [" + std::to_string(b.offset) +
                           ", " +
                           (b.bytes > UINT64_MAX - b.offset
                                ? std::string("beyond 2^64")
                                : std::to_string(b.offset + b.bytes)) +
                           ") lie outside the arena of " +
                           std::to_string(plan.arenaBytes) + " bytes");
    for (int64_t dim : b.shape)
      if (dim < 0)
        return Status::error(what + ": negative dimension " +
                             std::to_string(dim));
    // A shape of [2^32, 2^32] wraps to 0 elements in plain arithmetic.
    CheckedSize needed =
        byteSize(b.shape, static_cast<int64_t>(dtypeSize(b.dtype)));
    if (!needed.valid())
      return Status::error(what + ": shape " + shapeText(b.shape) + " has " +
                           countText(elementCount(b.shape)) +
                           " elements, more than a 64-bit count holds");
    if (static_cast<uint64_t>(needed.value()) > b.bytes)
      return Status::error(what + ": shape needs " +
                           std::to_string(needed.value()) +
                           " bytes but the buffer has " +
                           std::to_string(b.bytes));
    bool fits = b.realShape.empty() || b.realShape.size() == b.shape.size();
    for (size_t d = 0; fits && d < b.realShape.size(); ++d)
      fits = b.realShape[d] >= 0 && b.realShape[d] <= b.shape[d];
    if (!fits)
      return Status::error(what + ": real shape " + shapeText(b.realShape) +
                           " does not fit in its padded shape " +
                           shapeText(b.shape));
    if (b.initView && !b.init.empty())
      return Status::error(what + ": initial data is given twice (init and "
                                  "initView)");
    if (b.hasInit() && b.initBytes() != b.bytes)
      return Status::error(what + ": initial data has " +
                           std::to_string(b.initBytes()) +
                           " bytes, the buffer " + std::to_string(b.bytes));
  }
  return Status::ok();
}

Status checkScalars(const Plan &plan, std::set<std::string> &names) {
  for (const ScalarSlot &s : plan.scalars) {
    std::string what = "scalar slot '" + s.name + "'";
    if (s.name.empty())
      return Status::error("a scalar slot has no name");
    if (!names.insert(s.name).second)
      return Status::error("two buffers or scalar slots are named '" + s.name +
                           "'");
    if (s.dtype != DType::F32 && s.dtype != DType::I32 && s.dtype != DType::I64)
      return Status::error(what + ": dtype " + dtypeName(s.dtype) +
                           " is not f32, i32 or i64");
    size_t size = dtypeSize(s.dtype);
    if (s.offset % size != 0)
      return Status::error(what + ": offset " + std::to_string(s.offset) +
                           " is not aligned to " + std::to_string(size));
    if (s.offset > plan.arenaBytes || size > plan.arenaBytes - s.offset)
      return Status::error(what + ": offset " + std::to_string(s.offset) +
                           " lies outside the arena of " +
                           std::to_string(plan.arenaBytes) + " bytes");
  }
  return Status::ok();
}

Status checkKernels(const Plan &plan) {
  std::set<std::string> names;
  for (const KernelInfo &k : plan.kernels) {
    std::string what = "kernel '" + k.name + "'";
    if (k.name.empty())
      return Status::error("a kernel has no name");
    if (!names.insert(k.name).second)
      return Status::error("two kernels are named '" + k.name + "'");
    if (k.entry.empty())
      return Status::error(what + " has no entry symbol");
    if (k.cubin.empty() && k.source.empty())
      return Status::error(what + " has neither a cubin nor CUDA source");
    if (!k.cubin.empty() && k.arch.empty())
      return Status::error(what + " has a cubin but no arch");
  }
  return Status::ok();
}

Status checkLaunch(const Plan &plan, const LaunchStep &launch) {
  if (launch.kernel >= plan.kernels.size())
    return Status::error("kernel index " + std::to_string(launch.kernel) +
                         " is out of range (the plan has " +
                         std::to_string(plan.kernels.size()) + " kernels)");
  uint64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (launch.grid[i] == 0 || launch.block[i] == 0)
      return Status::error("grid and block dimensions must be positive");
    threads *= launch.block[i];
  }
  if (threads > 1024)
    return Status::error("block of " + std::to_string(threads) +
                         " threads exceeds 1024");
  if (launch.grid[1] > 65535 || launch.grid[2] > 65535)
    return Status::error("grid y and z must be at most 65535");
  // CUDA's limit; a grid past it fails at launch, after capture began.
  if (launch.grid[0] > 2147483647u)
    return Status::error("grid x of " + std::to_string(launch.grid[0]) +
                         " exceeds 2147483647");
  for (size_t i = 0; i < launch.args.size(); ++i) {
    const KernelArg &arg = launch.args[i];
    std::string what = "argument " + std::to_string(i);
    if (arg.kind == KernelArg::Kind::Buffer) {
      const BufferInfo *buffer = plan.findBuffer(arg.name);
      if (!buffer)
        return Status::error(what + " names unknown buffer '" + arg.name + "'");
      if (arg.offset > buffer->bytes)
        return Status::error(what + ": offset " + std::to_string(arg.offset) +
                             " lies past the end of buffer '" + arg.name +
                             "' (" + std::to_string(buffer->bytes) + " bytes)");
    } else if (arg.kind == KernelArg::Kind::Scalar &&
               !plan.findScalar(arg.name)) {
      return Status::error(what + " names unknown scalar slot '" + arg.name +
                           "'");
    }
  }
  return Status::ok();
}

/// Checks that `name` is a buffer of `type` holding `elements` elements.
Status checkOperand(const Plan &plan, const char *role, const std::string &name,
                    DType type, uint64_t elements) {
  const BufferInfo *buffer = plan.findBuffer(name);
  if (!buffer)
    return Status::error(std::string("operand ") + role +
                         " names unknown buffer '" + name + "'");
  if (buffer->dtype != type)
    return Status::error(std::string("operand ") + role + " buffer '" + name +
                         "' is " + dtypeName(buffer->dtype) + ", the matmul " +
                         "expects " + dtypeName(type));
  uint64_t needed = 0;
  bool overflow = __builtin_mul_overflow(elements, dtypeSize(type), &needed);
  if (overflow || needed > buffer->bytes)
    return Status::error(std::string("operand ") + role + " needs " +
                         (overflow ? std::string("more than 2^64")
                                   : std::to_string(needed)) +
                         " bytes but buffer '" + name + "' has " +
                         std::to_string(buffer->bytes));
  return Status::ok();
}

/// cuBLASLt's conditions on the epilogues the compiler forms (Matmul.cpp):
/// one GEMM, C = D, the aux matrix's ld (n) a multiple of 8, and the bias
/// gradients of BGRADB and BGRADA only in the wgrad layout, A transposed and
/// B not (the one layout the compiler forms and the GPU test measures).
Status checkEpilogue(const Plan &plan, const MatmulStep &mm) {
  const std::string what =
      std::string("epilogue '") + matmulEpilogueName(mm.epilogue) + "' ";
  bool wantsAux = mm.epilogue == MatmulEpilogue::GeluGrad;
  bool allowsAux = wantsAux || mm.epilogue == MatmulEpilogue::Gelu;
  bool biasGradOnly = mm.epilogue == MatmulEpilogue::BiasGradA ||
                      mm.epilogue == MatmulEpilogue::BiasGradB;
  bool allowsBiasGrad = mm.epilogue == MatmulEpilogue::GeluGrad || biasGradOnly;
  if (mm.epilogue == MatmulEpilogue::None) {
    if (!mm.aux.empty() || !mm.biasGrad.empty())
      return Status::error("aux and biasGrad need an epilogue (gelu, "
                           "gelu_grad, bias_grad_a or bias_grad_b)");
    return Status::ok();
  }
  if (mm.batch != 1 || mm.beta != 0 || !mm.c.empty())
    return Status::error(what + "needs one GEMM (batch 1) and no C");
  if (!allowsAux && !mm.aux.empty())
    return Status::error(what + "takes no aux matrix");
  if (wantsAux && mm.aux.empty())
    return Status::error(what + "needs an aux matrix (the GELU input)");
  if (!allowsBiasGrad && !mm.biasGrad.empty())
    return Status::error(what + "writes no bias gradient");
  if (biasGradOnly && (mm.biasGrad.empty() || !mm.transA || mm.transB))
    return Status::error(what + "needs biasGrad, transA and not transB");
  if (mm.epilogue != MatmulEpilogue::Gelu && !mm.bias.empty())
    return Status::error(what + "adds no bias");
  if (!mm.aux.empty()) {
    if (mm.n % 8 != 0)
      return Status::error(what + "needs n a multiple of 8 (the aux ld), got " +
                           std::to_string(mm.n));
    LLMC_RETURN_IF_ERROR(checkOperand(plan, "aux", mm.aux, mm.typeD,
                                      static_cast<uint64_t>(mm.m) *
                                          static_cast<uint64_t>(mm.n)));
  }
  if (!mm.biasGrad.empty())
    LLMC_RETURN_IF_ERROR(checkOperand(
        plan, "biasGrad", mm.biasGrad, mm.typeD,
        mm.epilogue == MatmulEpilogue::BiasGradA ? mm.m : mm.n));
  return Status::ok();
}

Status checkMatmul(const Plan &plan, const MatmulStep &mm) {
  if (mm.m <= 0 || mm.n <= 0 || mm.k <= 0 || mm.batch <= 0)
    return Status::error(
        "m, n, k and batch must be positive (got m=" + std::to_string(mm.m) +
        " n=" + std::to_string(mm.n) + " k=" + std::to_string(mm.k) +
        " batch=" + std::to_string(mm.batch) + ")");
  for (DType t : {mm.typeA, mm.typeB, mm.typeD})
    if (t == DType::I32 || t == DType::I64 || t == DType::U8 || t == DType::U16)
      return Status::error(std::string("matmul on ") + dtypeName(t) +
                           " is not supported");
  if (mm.typeC != mm.typeD)
    return Status::error("C and D must have the same dtype");
  if (mm.strideA < -1 || mm.strideB < -1 || mm.strideC < -1 || mm.strideD < -1)
    return Status::error("batch strides must be -1 (packed) or non-negative");
  // The elements an operand spans, (batch - 1) * stride + rows * cols, or
  // nullopt when that overflows: the bundle fuzzer found m = 2^63 - 1, whose
  // packed stride m * k is signed overflow before any buffer is compared.
  auto span = [&](int64_t stride, int64_t rows,
                  int64_t cols) -> std::optional<uint64_t> {
    int64_t matrix, batches, total;
    if (__builtin_mul_overflow(rows, cols, &matrix))
      return std::nullopt;
    if (stride < 0) // densely packed
      stride = matrix;
    if (__builtin_mul_overflow(mm.batch - 1, stride, &batches) ||
        __builtin_add_overflow(batches, matrix, &total))
      return std::nullopt;
    return static_cast<uint64_t>(total);
  };
  auto operand = [&](const char *role, const std::string &name, DType type,
                     int64_t stride, int64_t rows, int64_t cols) -> Status {
    std::optional<uint64_t> elements = span(stride, rows, cols);
    if (!elements)
      return Status::error(std::string("operand ") + role + " of m=" +
                           std::to_string(mm.m) + " n=" + std::to_string(mm.n) +
                           " k=" + std::to_string(mm.k) + " batch=" +
                           std::to_string(mm.batch) +
                           " spans more than 2^63 elements");
    return checkOperand(plan, role, name, type, *elements);
  };
  LLMC_RETURN_IF_ERROR(operand("A", mm.a, mm.typeA, mm.strideA, mm.m, mm.k));
  LLMC_RETURN_IF_ERROR(operand("B", mm.b, mm.typeB, mm.strideB, mm.k, mm.n));
  if (!mm.c.empty())
    LLMC_RETURN_IF_ERROR(operand("C", mm.c, mm.typeC, mm.strideC, mm.m, mm.n));
  LLMC_RETURN_IF_ERROR(operand("D", mm.d, mm.typeD, mm.strideD, mm.m, mm.n));
  if (!mm.bias.empty())
    LLMC_RETURN_IF_ERROR(checkOperand(plan, "bias", mm.bias, mm.typeD, mm.n));
  if (mm.tf32 && (mm.typeA != DType::F32 || mm.typeB != DType::F32))
    return Status::error(std::string("tf32 needs f32 A and B, not ") +
                         dtypeName(mm.typeA) + " and " + dtypeName(mm.typeB));
  return checkEpilogue(plan, mm);
}

/// The arena and the workspace allocated after it: each within
/// kMaxArenaBytes, and so is their sum (Executor::allocateArena adds them).
Status checkArena(const Plan &plan) {
  auto tooLarge = [](const char *what, uint64_t bytes) {
    return Status::error(std::string(what) + " of " + std::to_string(bytes) +
                         " bytes (" + bytesText(static_cast<double>(bytes)) +
                         ") is more than the " +
                         bytesText(static_cast<double>(kMaxArenaBytes)) +
                         " llmc allows; the bundle is damaged, or was made "
                         "for a model no GPU holds");
  };
  uint64_t limit = static_cast<uint64_t>(kMaxArenaBytes);
  if (plan.arenaBytes > limit)
    return tooLarge("the arena", plan.arenaBytes);
  if (plan.workspaceBytes > limit)
    return tooLarge("the cuBLASLt workspace", plan.workspaceBytes);
  uint64_t total = (plan.arenaBytes + 255) / 256 * 256 + plan.workspaceBytes;
  if (total > limit)
    return tooLarge("the arena with its cuBLASLt workspace", total);
  return Status::ok();
}

} // namespace

Status validatePlan(const Plan &plan) {
  LLMC_RETURN_IF_ERROR(checkArena(plan));
  std::set<std::string> names;
  LLMC_RETURN_IF_ERROR(checkBuffers(plan, names));
  LLMC_RETURN_IF_ERROR(checkScalars(plan, names));
  LLMC_RETURN_IF_ERROR(checkKernels(plan));
  if (plan.accumulateSteps >= plan.steps.size() && plan.accumulateSteps > 0)
    return Status::error(
        "plan '" + plan.name + "' has " +
        std::to_string(plan.accumulateSteps) + " accumulate steps of " +
        std::to_string(plan.steps.size()) +
        " steps; the apply sequence after them must not be empty");
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &step = plan.steps[i];
    Status status;
    if (const auto *launch = std::get_if<LaunchStep>(&step.op)) {
      status = checkLaunch(plan, *launch);
    } else if (const auto *mm = std::get_if<MatmulStep>(&step.op)) {
      status = checkMatmul(plan, *mm);
    } else if (const auto *attention = std::get_if<AttentionStep>(&step.op)) {
      status = checkAttentionStep(plan, *attention);
    } else {
      const auto &memset = std::get<MemsetStep>(step.op);
      if (!plan.findBuffer(memset.buffer))
        status = Status::error("memset names unknown buffer '" + memset.buffer +
                               "'");
    }
    if (!status)
      return status.withContext(plan.describeStep(i));
  }
  return Status::ok();
}

} // namespace llmc
