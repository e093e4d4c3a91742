//===- Kernels.h - Kernel table and helpers of the evaluator -----*- C++
//-*-===//
//
// Internal to compiler/eval. A kernel computes one op: it receives the op and
// its operand tensors and fills one tensor per op result. Each op family
// registers its kernels in one function (registerElementwiseKernels, ...),
// keyed by op name, so adding an op (autodiff's backward ops, say) is one
// kernel function and one line in its family's register function.
//
// The evaluator checks before calling a kernel that every operand and result
// has a static shape and a supported element kind; kernels may rely on that
// and on everything the op's verifier checks.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_EVAL_KERNELS_H
#define LLMC_COMPILER_EVAL_KERNELS_H

#include "compiler/eval/Evaluator.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringMap.h"

#include <functional>

namespace llmc {

using Operands = llvm::ArrayRef<const RefTensor *>;
using Kernel = std::function<mlir::LogicalResult(
    mlir::Operation *op, Operands operands, std::vector<RefTensor> &results)>;
using KernelTable = llvm::StringMap<Kernel>;

/// Registers a kernel written against the op class: `fn(OpTy, operands,
/// results)`.
template <typename OpTy, typename Fn>
void addKernel(KernelTable &table, Fn fn) {
  table[OpTy::getOperationName()] = [fn](mlir::Operation *op, Operands in,
                                         std::vector<RefTensor> &out) {
    return fn(llvm::cast<OpTy>(op), in, out);
  };
}

void registerElementwiseKernels(KernelTable &table);
void registerShapeKernels(KernelTable &table);
void registerReduceKernels(KernelTable &table);
void registerNNKernels(KernelTable &table);
void registerAttentionKernels(KernelTable &table);
/// Backward and optimizer ops (GradKernels.cpp, AttentionGradKernels.cpp).
void registerGradKernels(KernelTable &table);
void registerAttentionGradKernels(KernelTable &table);
/// adamw_update, multi_adamw_update, global_norm (OptimizerKernels.cpp).
void registerOptimizerKernels(KernelTable &table);

//===----------------------------------------------------------------------===//
// Helpers shared by the kernel files
//===----------------------------------------------------------------------===//

/// Shape and element kind of a value whose type the evaluator has checked.
std::vector<int64_t> shapeOf(mlir::Value v);
ElementKind kindOfValue(mlir::Value v);

/// A zero tensor of `v`'s type: the result buffer a kernel fills.
RefTensor makeResult(mlir::Value v);

/// Maps linear indices of a broadcast result to linear indices of an operand
/// whose shape numpy-broadcasts to the result's.
class BroadcastMap {
public:
  BroadcastMap(const std::vector<int64_t> &operandShape,
               const std::vector<int64_t> &resultShape);
  int64_t operator()(int64_t resultIndex) const;

private:
  std::vector<int64_t> resultShape_;
  std::vector<int64_t> operandStrides_; // 0 along broadcast dims
};

/// `kernel` for an attention op that may be `seq_major` (operands and
/// results [B, T, H, D]): such an op's operands at `layoutOperands` are
/// permuted to [B, H, T, D], `kernel` computes as for the dense layout, and
/// its rank-4 results are permuted back. Pure data movement, so the values
/// are those of the transposes the layout replaces (AttentionGradKernels.cpp).
Kernel seqMajorAware(Kernel kernel, std::vector<unsigned> layoutOperands);

/// `kernel` (a seqMajorAware one) for an attention op that may have
/// `qkv_heads`: q, k, v are cut out of their packed operands, and
/// attention_grad's dq, dk, dv are packed into its one result, as the split
/// and the concat the attribute replaces would (AttentionGradKernels.cpp).
Kernel qkvPackedAware(Kernel kernel);

/// Rounds every float element of `t` to its kind's format (after a kernel
/// wrote double values), or wraps every integer to its width.
void roundInPlace(RefTensor &t);

/// Whether `op` leaves its result unrounded: it computes the pre-activation
/// of a `llmc.epilogue = "gelu"` group (the matmul, or its bias add), which
/// cuBLASLt's GELU epilogue hands to gelu in f32 before any rounding, or the
/// product of a `"gelu_grad"` group, which DGELU multiplies by gelu'(aux)
/// in f32. The group rounds what it yields (the aux pre-activation), so only
/// the gelu or gelu_grad sees the unrounded value (docs/precision.md, "The
/// GELU epilogue's rounding").
bool heldUnrounded(mlir::Operation *op);

/// An attention probability as it enters the P V product of an attention
/// with `kind` results: bf16 and f16 attention round the unnormalized
/// exp(score - max) to that type first, as the flash kernels (FA2, cuDNN,
/// llmc's 16-bit kernels) feed P to the tensor cores and llmc's other
/// kernels do for those types, while the row sum uses the unrounded values
/// (docs/precision.md). f32 and f64: unchanged.
double roundProbability(double p, ElementKind kind);

/// `axis` normalized for a rank (negative counts from the end).
int64_t normalizedAxis(int64_t axis, int64_t rank);

} // namespace llmc

#endif // LLMC_COMPILER_EVAL_KERNELS_H
