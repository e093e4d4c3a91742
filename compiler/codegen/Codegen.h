//===- Codegen.h - CUDA C++ kernels for llmc ops ----------------*- C++ -*-===//
//
// The emitter half of the GPU backend (docs/codegen.md). Every llmc op lowers
// to one of:
//   - kernels: CUDA C++ strings with their launch metadata (grid, block,
//     shared memory, argument list), launched in order;
//   - a matmul: a cuBLASLt problem (runtime/Plan.h MatmulStep) whose buffer
//     names the plan builder fills in;
//   - an alias (reshape: the result is the operand's buffer);
//   - a constant (a buffer with initial data, no kernel).
//
// Shapes are static: every size and stride is baked into the source as a
// constexpr, and launch preconditions are restated as static_asserts. Floats
// of every width compute in f32 on the device (f64 never does).
//
// Emitters are found through a table keyed by op name, filled by one
// register function per op family (compiler/codegen/Emitters.h), as the
// reference evaluator's kernels are. Element types are the plan's DType
// (compiler/common/ElementTypes.h: dtypeOf); codegen links nothing of the
// evaluator (docs/codegen.md).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_CODEGEN_H
#define LLMC_COMPILER_CODEGEN_CODEGEN_H

#include "compiler/common/ElementTypes.h"
#include "runtime/Plan.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "mlir/Support/LogicalResult.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace llmc::codegen {

struct CodegenOptions {
  /// Threads per block of the one-thread-per-element kernels.
  unsigned blockSize = 256;
  /// Grid-stride kernels launch at most this many blocks (a few waves on an
  /// H100's 132 SMs); the loop covers the rest.
  unsigned maxBlocks = 132 * 16;
  /// A group of one elementwise op lowers through the fused emitter (16
  /// bytes a thread) instead of the one-element-a-thread emitter; off with
  /// elementwise fusion (`--no-fuse=elementwise`), which keeps the one-op
  /// kernels the fused ones are checked against.
  bool vectorSingles = true;
  /// attention_lse and attention_grad that cuDNN's fused engines take
  /// become cuDNN steps (AttentionStep) instead of generated kernels
  /// (`--attention-backend`, docs/codegen.md "cuDNN attention"); the
  /// backward without atomics when `deterministicAttention`.
  bool cudnnAttention = false;
  bool deterministicAttention = true;
};

/// Where a kernel argument comes from. The plan builder resolves operands,
/// results and scratch buffers to device pointers.
struct KernelArg {
  enum class Kind { Operand, Result, Scratch, I32, I64, F32 };
  Kind kind = Kind::Operand;
  unsigned index = 0; // Operand, Result, Scratch
  int64_t intValue = 0;
  float floatValue = 0;
  /// Operand, Result: the pointer is this many bytes into the buffer (a
  /// head window of a packed qkv, docs/fusion.md).
  uint64_t byteOffset = 0;

  static KernelArg operand(unsigned i) { return {Kind::Operand, i, 0, 0}; }
  static KernelArg result(unsigned i) { return {Kind::Result, i, 0, 0}; }
  static KernelArg scratch(unsigned i) { return {Kind::Scratch, i, 0, 0}; }
  static KernelArg i32(int32_t v) { return {Kind::I32, 0, v, 0}; }
  static KernelArg i64(int64_t v) { return {Kind::I64, 0, v, 0}; }
  static KernelArg f32(float v) { return {Kind::F32, 0, 0, v}; }
  KernelArg at(uint64_t bytes) const {
    KernelArg a = *this;
    a.byteOffset = bytes;
    return a;
  }
  /// "operand #1", "result #0", "scratch #0 (lse)" without the name.
  std::string describe() const;
};

struct EmittedKernel;

/// The runtime launch step of `kernel`, the plan's kernel `kernelIndex`:
/// grid, block, shared memory and immediates come from the kernel; each
/// buffer argument (operand, result, scratch) from `bufferArg`.
::llmc::LaunchStep launchStepFor(
    const EmittedKernel &kernel, uint32_t kernelIndex,
    llvm::function_ref<::llmc::KernelArg(const KernelArg &)> bufferArg);

struct EmittedKernel {
  std::string name;   // the extern "C" __global__ symbol; unique per function
  std::string source; // a complete NVRTC translation unit
  std::array<unsigned, 3> grid = {1, 1, 1};
  std::array<unsigned, 3> block = {1, 1, 1};
  unsigned sharedBytes = 0; // dynamic shared memory
  std::vector<KernelArg> args;
  std::string origin; // the source op and its location, for humans
};

/// A device buffer a lowering needs besides the op's operands and results
/// (the per-row losses of a mean cross-entropy, attention's log-sum-exp).
///
/// An offset table (non-empty `offsetsOf`, dtype i64, one entry each) is
/// what a multi-tensor kernel finds its tensors by: entry i is the byte
/// offset of `offsetsOf[i]`'s buffer (an operand or result of the op) minus
/// that of `offsetBase`'s, which the kernel also receives as a pointer. The
/// plan builders fill it once buffers are placed; it is persistent and
/// written at load, so nothing is done on the host per step.
struct ScratchBuffer {
  std::string name; // "lse", "row_loss"
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<KernelArg> offsetsOf;
  KernelArg offsetBase;
  /// Keeps its bytes from step to step (zero at load, as the whole arena):
  /// counters a kernel returns to zero itself, as a column reduction's
  /// tickets (ReduceEmitters.cpp).
  bool persistent = false;
};

struct OpLowering {
  enum class Kind { Kernels, Matmul, Alias, Constant, Attention };
  Kind kind = Kind::Kernels;
  std::vector<EmittedKernel> kernels; // Kernels: in launch order
  std::vector<ScratchBuffer> scratch; // Kernels
  /// Matmul: a = operand 0, b = operand 1, d = result 0; the names and c
  /// are left empty for the plan builder.
  std::optional<MatmulStep> matmul;
  /// Attention: the cuDNN step with its views' buffers left empty;
  /// `attentionArgs` says which operand or result (and how many bytes in)
  /// each view is, in AttentionStep's order q, k, v, o, stats[, dO, dQ, dK,
  /// dV].
  std::optional<AttentionStep> attention;
  std::vector<KernelArg> attentionArgs;
};

/// Lowers one op. `name` is the base of its kernels' symbols ("add_3");
/// empty means the op's mnemonic. Errors are emitted at the op (unsupported
/// op, element type or shape) and the result is failure.
mlir::FailureOr<OpLowering> lowerOp(mlir::Operation *op,
                                    const CodegenOptions &options,
                                    const std::string &name = "");

/// The single kernel of an op that lowers to exactly one kernel; an error
/// otherwise (a matmul, a reshape, a two-kernel cross_entropy).
mlir::FailureOr<EmittedKernel> emitKernel(mlir::Operation *op,
                                          const CodegenOptions &options,
                                          const std::string &name = "");

/// True when ops named `opName` ("llmc.add") have an emitter.
bool hasEmitter(llvm::StringRef opName);

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_CODEGEN_H
