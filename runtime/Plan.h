//===- Plan.h - The compiler/runtime contract -------------------*- C++ -*-===//
//
// A Plan is everything the runtime needs to run one training step, and the
// only thing the compiler hands to it (STYLE.md §8): a buffer table laid out
// in one device arena, device scalar slots in that arena, kernels (CUDA C++
// and/or cubin) and the launch sequence of one step. The runtime never sees
// the IR it came from.
//
//   arena:  [ buffers and scalar slots at plan-given offsets ][ cuBLASLt ws ]
//           ^ arena base (one cuMemAlloc)        arenaBytes ^
//
// Pointers are arena base + offset, fixed for the life of the executor, so a
// captured CUDA graph replays without re-capture: what changes between steps
// (learning rate, step count, the batch) is written into the arena first.
//
// Bundle.h serializes a Plan to a .llmc file; docs/runtime.md documents the
// format. validatePlan rejects plans the runtime cannot run safely.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_PLAN_H
#define LLMC_RUNTIME_PLAN_H

#include "runtime/Status.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace llmc {

//===----------------------------------------------------------------------===//
// Element types and buffer roles
//===----------------------------------------------------------------------===//

enum class DType : uint8_t {
  F32,
  F16,
  BF16,
  F8E4M3,
  F8E5M2,
  I32,
  I64,
  U8,
  U16
};

/// Bytes per element.
size_t dtypeSize(DType type);
/// "f32", "bf16", ...: the spelling in the plan JSON.
const char *dtypeName(DType type);
bool parseDType(const std::string &name, DType &type);

enum class BufferRole : uint8_t {
  Param,          // trained weights (master copy); has initial data
  Grad,           // gradients of params
  OptimizerState, // AdamW moments etc.; zero at load
  Input,          // written by the host before each step (token batches)
  Output,         // read by the host after a step (logits, metrics)
  Activation,     // forward values kept for the backward pass
  Scratch,        // temporaries whose lifetime the compiler planned
};

const char *roleName(BufferRole role);
bool parseRole(const std::string &name, BufferRole &role);

//===----------------------------------------------------------------------===//
// Buffers, scalar slots and kernels
//===----------------------------------------------------------------------===//

struct BufferInfo {
  std::string name;
  BufferRole role = BufferRole::Scratch;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  // The model's own shape of a padded parameter or its optimizer state
  // (llmc-pad-shapes, docs/padding.md): `shape` is what lives on the GPU,
  // this is what users see (runtime/Padding.h converts). Empty: not padded.
  std::vector<int64_t> realShape;
  uint64_t offset = 0; // bytes from the arena base
  uint64_t bytes = 0;  // may exceed elements * dtype size (padding)
  uint64_t alignment = 256;
  std::vector<uint8_t> init; // initial contents; empty means zeros
  /// Initial contents held elsewhere instead of `init` (a compile cache hit
  /// points into the mapped model file rather than copying 500 MB of
  /// weights); the pointer shares ownership of what holds the bytes. At
  /// most one of `init` and `initView` is set; read through initData().
  std::shared_ptr<const uint8_t> initView;
  uint64_t initViewBytes = 0;

  uint64_t elementCount() const;
  bool hasInit() const { return initView ? true : !init.empty(); }
  const uint8_t *initData() const {
    return initView ? initView.get() : init.data();
  }
  uint64_t initBytes() const { return initView ? initViewBytes : init.size(); }
};

/// A device scalar in the arena that kernels read through a pointer argument
/// (learning rate, step count) or write (loss). Setting one before a replay
/// changes the step without re-capturing the graph.
struct ScalarSlot {
  std::string name;
  DType dtype = DType::F32; // f32, i32 or i64
  uint64_t offset = 0;      // bytes from the arena base
  double init = 0;
};

struct KernelInfo {
  std::string name;   // unique; for messages and the NVRTC file name
  std::string entry;  // the extern "C" __global__ symbol
  std::string source; // CUDA C++; used when the cubin does not fit the GPU
  std::string arch;   // what `cubin` was compiled for ("sm_90")
  std::vector<uint8_t> cubin;
  std::string origin;    // which source ops this kernel fuses (for humans)
  bool fastMath = false; // NVRTC options to recompile with
  std::vector<std::string> options; // extra NVRTC options
};

//===----------------------------------------------------------------------===//
// Steps
//===----------------------------------------------------------------------===//

struct KernelArg {
  enum class Kind : uint8_t {
    Buffer, // arena base + buffer offset + `offset` (a device pointer)
    Scalar, // pointer to the scalar slot `name`
    I32,
    I64,
    F32,
  };
  Kind kind = Kind::I32;
  std::string name;    // Buffer, Scalar
  uint64_t offset = 0; // Buffer: bytes into the buffer
  int64_t intValue = 0;
  float floatValue = 0;

  static KernelArg buffer(std::string name, uint64_t offset = 0);
  static KernelArg scalar(std::string name);
  static KernelArg i32(int32_t value);
  static KernelArg i64(int64_t value);
  static KernelArg f32(float value);
};

struct LaunchStep {
  uint32_t kernel = 0; // index into Plan::kernels
  std::array<uint32_t, 3> grid = {1, 1, 1};
  std::array<uint32_t, 3> block = {1, 1, 1};
  uint32_t sharedBytes = 0; // dynamic shared memory
  std::vector<KernelArg> args;
};

/// What cuBLASLt computes after the product (docs/codegen.md "GELU and
/// bias-gradient epilogues"); `bias` (None, Gelu) adds a row vector first.
enum class MatmulEpilogue {
  None,
  Gelu,      // D = gelu_tanh(acc [+ bias]); aux, if named, gets acc [+ bias]
  GeluGrad,  // D = gelu_tanh'(aux) * acc; biasGrad, if named, = D's row sum
  BiasGradA, // biasGrad = the sum of op(A) over k, an [m] vector (transA)
  BiasGradB, // biasGrad = the sum of op(B) over k, an [n] vector (transA)
};
const char *matmulEpilogueName(MatmulEpilogue e);
bool matmulEpilogueFromName(const std::string &name, MatmulEpilogue &out);

/// D = alpha * op(A) @ op(B) + beta * C (+ bias), per batch, ROW-MAJOR:
/// op(A) is [m,k] (A stored [k,m] when transA), op(B) is [k,n] (B stored
/// [n,k] when transB), C and D are [m,n]. Batch b starts at b * stride
/// elements (stride 0 broadcasts, e.g. one weight for all batches). The
/// executor maps this onto cuBLASLt's column-major API; compute is always
/// CUBLAS_COMPUTE_32F (no TF32), alpha/beta are f32.
struct MatmulStep {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool transA = false, transB = false;
  DType typeA = DType::F32, typeB = DType::F32, typeC = DType::F32,
        typeD = DType::F32;
  float alpha = 1, beta = 0;
  // f32 operands read as TF32 on tensor cores, f32 accumulation (cuBLASLt's
  // CUBLAS_COMPUTE_32F_FAST_TF32; --precision tf32). Only with f32 A and B.
  bool tf32 = false;
  std::string a, b, c, d; // buffer names; empty c means C = D
  std::string bias;       // optional [n] vector added to every row of D
  MatmulEpilogue epilogue = MatmulEpilogue::None;
  std::string aux;      // [m, n] of typeD: Gelu writes it, GeluGrad reads it
  std::string biasGrad; // typeD: [n] (GeluGrad, BiasGradB) or [m] (BiasGradA)
  // Elements between consecutive batches; -1 means densely packed.
  int64_t strideA = -1, strideB = -1, strideC = -1, strideD = -1;

  int64_t effectiveStrideA() const { return strideA < 0 ? m * k : strideA; }
  int64_t effectiveStrideB() const { return strideB < 0 ? k * n : strideB; }
  int64_t effectiveStrideC() const { return strideC < 0 ? m * n : strideC; }
  int64_t effectiveStrideD() const { return strideD < 0 ? m * n : strideD; }
};

struct MemsetStep {
  std::string buffer; // the whole buffer is set
  uint8_t value = 0;
};

/// A [b, h, s, d] view of a buffer for an attention step: `offset` bytes
/// in, element strides of batch, head, row and head dim (the last 1).
struct AttentionView {
  std::string buffer;
  uint64_t offset = 0;
  std::array<int64_t, 4> strides = {0, 0, 0, 1};
};

/// Scaled dot-product attention through cuDNN's fused engines
/// (runtime/CudnnAttention.h), the second attention backend
/// (docs/codegen.md "cuDNN attention"). Forward: q, k, v -> o and `stats`,
/// the f32 row log-sum-exp [b, hq, sq] (llmc's lse). Backward: q, k, v, o,
/// stats, dO -> dQ, dK, dV. The executor finalizes one cuDNN plan per
/// distinct step at load and gives it a workspace of its own.
struct AttentionStep {
  bool backward = false;
  DType dtype = DType::BF16; // of q, k, v, o and the gradients: bf16 or f16
  bool causal = false;
  bool deterministic = true; // backward: dQ without atomics
  double scale = 0;          // applied to q k^T
  int64_t b = 0, hq = 0, hkv = 0, sq = 0, skv = 0, d = 0;
  AttentionView q, k, v, o, stats, dO, dQ, dK, dV;
};

/// Which part of the training step a launch belongs to, as the compiler
/// derived it from the IR (codegen's PlanBuilder: ops up to the loss are the
/// forward pass, ops after it that autodiff made are the backward pass, the
/// ops AppendOptimizer made are the optimizer). `llmc train --breakdown` and
/// `--trace` group kernel times by it.
enum class StepPhase : uint8_t { Forward, Backward, Optimizer };
const char *phaseName(StepPhase phase);
bool parsePhase(const std::string &name, StepPhase &phase);

struct Step {
  std::variant<LaunchStep, MatmulStep, MemsetStep, AttentionStep> op;
  std::string label; // optional, for messages ("attention backward, layer 3")
  StepPhase phase = StepPhase::Forward;
  // A cuBLASLt call's source ops, as KernelInfo::origin says a kernel's
  // (launches keep theirs in the kernel); for profiles and traces.
  std::string origin;
  // The bytes the step's op must move: each operand read once and each
  // result written once, as the compiler's types say (on the op's first
  // step; 0 on its other steps and when not recorded). The profile's
  // bandwidth table divides them by the op's time.
  uint64_t bytes = 0;
};

//===----------------------------------------------------------------------===//
// Plan
//===----------------------------------------------------------------------===//

struct Plan {
  std::string name;                      // model name, for messages
  uint64_t arenaBytes = 0;               // buffers and scalars live below this
  uint64_t workspaceBytes = 32ull << 20; // cuBLASLt workspace after the arena
  // Classes of the loss: token ids and targets must stay below it, checked
  // when the data is opened (0: unknown, no check). Optional in the JSON.
  int64_t vocab = 0;
  std::vector<BufferInfo> buffers;
  std::vector<ScalarSlot> scalars;
  std::vector<KernelInfo> kernels;
  std::vector<Step> steps;
  // Gradient accumulation (docs/memory.md): the first `accumulateSteps`
  // steps are the accumulate sequence, replayed once per micro-batch as a
  // CUDA graph of their own; the rest is the apply sequence, once per
  // window, which ends by zeroing the accumulators. Both share the arena.
  // 0: a plain step, every step replayed together.
  uint64_t accumulateSteps = 0;

  const BufferInfo *findBuffer(const std::string &name) const;
  const ScalarSlot *findScalar(const std::string &name) const;
  /// "step 3 (launch 'add_f32')": how messages name a step.
  std::string describeStep(size_t index) const;
};

/// Checks what the runtime relies on: unique names, buffers and slots inside
/// the arena and aligned, shapes fitting their bytes, initial data of the
/// right size, kernels with a cubin or source, launch dims in range, every
/// argument naming an existing buffer or slot, matmul operands large enough.
/// Overlap of buffers is the compiler's business (lifetimes) and not checked.
Status validatePlan(const Plan &plan);

} // namespace llmc

#endif // LLMC_RUNTIME_PLAN_H
