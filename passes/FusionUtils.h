//===- FusionUtils.h - What the fusion passes and codegen agree on -*- C++ -*-===//
//
// The fusion passes (llmc-fuse-elementwise, llmc-fuse-epilogues) decide what
// becomes one group; the CUDA backend (compiler/codegen/FunctionLowering.cpp)
// must recognise every shape of group they form, and `llmc compile
// --explain` must say why a boundary stayed. The three share these
// predicates so that they cannot drift apart (docs/fusion.md).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_FUSIONUTILS_H
#define LLMC_PASSES_FUSIONUTILS_H

#include "dialects/llmc/LlmcOps.h"

#include "llvm/ADT/DenseSet.h"

#include <optional>
#include <string>

namespace mlir::llmc::fusion {

/// Ops the fused elementwise kernel computes: one result element from the
/// operand elements at the same (broadcast) index. Casts are among them.
bool isElementwise(Operation *op);

/// `v` and the reshapes of it, transitively, from the value whose buffer
/// they all are (a reshape is an alias of its operand's buffer).
llvm::SmallDenseSet<Value> bufferFamily(Value v);

/// A float cast that only widens (bf16/f16 to f32: every value exact) or
/// only narrows (f32 to bf16/f16: one rounding).
bool isWideningFloatCast(Operation *op);
bool isNarrowingFloatCast(Operation *op);

/// Row reductions whose emitters load operand `i` / store result `i` with
/// the element type of the value (NormEmitters, NormGradEmitters,
/// LossEmitters), so that an exact cast can ride in that load or store;
/// also `rotary`'s input and result (AttentionEmitters: f32 arithmetic on
/// loadAs/storeAs of each value's type).
bool absorbsOperandCast(Operation *op, unsigned i);
bool absorbsResultCast(Operation *op, unsigned i);

/// The shapes of group the fusion passes form, as the backend lowers them.
enum class GroupKind {
  Single,      // one op: its own emitter
  MatmulBias,  // matmul + bias add: one cuBLASLt call (llmc-fuse-epilogues)
  MatmulEpilogue, // matmul + the ops its `llmc.epilogue` names: one cuBLASLt
                  // call (passes/MatmulEpilogues.h)
  Elementwise, // elementwise ops: one generated kernel, one segment per
               // independent chain (llmc-fuse-elementwise)
  Reduction,   // one absorbing op and the casts in its loads and stores
  Classifier,  // cross_entropy + cross_entropy_grad over the same logits,
               // with their casts: one row pass (llmc-fuse-classifier)
  RowFused,    // a norm (or norm gradient) with a warp row kernel, the
               // elementwise ops that compute its row operands (prologue)
               // and those that read its row result (epilogue), and for a
               // gradient the column sums of its row values (bias
               // gradients): one warp row kernel (rowFusedParts)
  Unknown,
};
GroupKind classify(KernelOp group);
const char *kindName(GroupKind kind);

/// For a Reduction group: the absorbing op (the one op that is not a cast).
Operation *reductionOp(KernelOp group);

/// The warp row kernels (one warp per row, the row in registers in
/// 4-element vectors; compiler/codegen/NormEmitters.cpp and
/// NormGradEmitters.cpp) take rows of 4k elements up to these lengths.
constexpr int64_t kMaxWarpNormRow = 2048;
constexpr int64_t kMaxWarpNormGradRow = 1024;
/// layer_norm, rms_norm or their gradients whose rows a warp row kernel
/// takes: the ops a RowFused group is built around.
bool hasWarpRowKernel(Operation *op);
/// Whether a RowFused prologue may compute operand `i` of `op` (the row
/// operands the warp kernels load: a norm's input, a gradient's input and
/// cotangent).
bool isRowOperand(Operation *op, unsigned i);

/// A RowFused group: its norm, the elementwise ops before it (each result
/// of the row's shape, read by prologue ops, by the norm as a row operand
/// or outside) and after it (reading the norm's first result or each
/// other, and outside values of the row's shape). Every value they read
/// from outside has the row's shape: no broadcast. A norm gradient's group
/// may also hold `reduce_sum`s over every axis before the norm's of a row
/// value (its dx or an epilogue value): column sums, summed next to the
/// parameter gradients (colSums; isColumnSum).
struct RowFusedParts {
  Operation *norm = nullptr;
  SmallVector<Operation *> prologue, epilogue, colSums;
};
std::optional<RowFusedParts> rowFusedParts(KernelOp group);

/// `sum` adds up `row` (a row value of the norm gradient `norm`: rows of
/// the norm's trailing axes) over every axis before the norm's, without
/// keepdims: one value per column of the row.
bool isColumnSum(Operation *norm, ReduceSumOp sum, Value row);

/// Why the norm-gradient group `producer` does not take `sum` (a reduce_sum
/// in a group of its own or in a bias-gradient matmul epilogue) that
/// reads its result `value`: nullopt when it can (llmc-fuse-elementwise,
/// col-sums).
std::optional<std::string> normColumnSumBlocker(KernelOp producer,
                                                ReduceSumOp sum, Value value);

/// For a Classifier group: its cross_entropy and its cross_entropy_grad.
std::pair<CrossEntropyOp, CrossEntropyGradOp> classifierOps(KernelOp group);

/// Segments of an Elementwise group: its ops partitioned by data flow
/// inside the group and by outside tensors read element for element by ops
/// of that tensor's shape (siblings), each in group order. Every op of a
/// segment has the same result shape (the segment's iteration space).
SmallVector<SmallVector<Operation *>> segments(KernelOp group);

/// Why `consumer` (an elementwise group) does not take the elementwise
/// group `producer` that defines `value` it reads: nullopt when it can.
std::optional<std::string> verticalBlocker(KernelOp producer,
                                           KernelOp consumer, Value value);

/// The norm of a group that holds one with a warp row kernel (Single,
/// Reduction or RowFused), or null.
Operation *warpNormOf(KernelOp group);

/// Why the norm group `consumer` does not take the elementwise group
/// `producer` as its prologue, reading its result `value` (directly, or
/// through a widening cast in the consumer) as a row operand of the norm:
/// nullopt when it can (llmc-fuse-elementwise, norm-prologue).
std::optional<std::string> normPrologueBlocker(KernelOp producer,
                                               KernelOp consumer, Value value);
/// Why the norm group `producer` does not take the elementwise group
/// `consumer`, which reads its result `value`, as its epilogue: nullopt
/// when it can (norm-epilogue). The merged group takes the norm's place.
std::optional<std::string> normEpilogueBlocker(KernelOp producer,
                                               KernelOp consumer, Value value);

/// A fused elementwise kernel reads and writes at most this many tensors
/// together: 2 KB of pointers, half of the 4 KB of kernel parameters that
/// every CUDA version accepts (docs/fusion.md).
constexpr unsigned kMaxKernelTensors = 256;
/// A horizontal group holds at most this many segments.
constexpr unsigned kMaxSegments = 128;

/// The distinct values a group's ops read from outside it, in first-use order.
SmallVector<Value> groupInputs(KernelOp group);

/// `llmc.overwrites` (llmc-fuse-classifier): one entry per result of a
/// group, the index in groupInputs of the input whose buffer the result is
/// written over, or -1. The group is that input's last reader and reads
/// each element before it overwrites it; the memory plan makes the result
/// an alias of the input's buffer. The KernelOp verifier checks entries
/// and sizes.
constexpr llvm::StringLiteral kOverwritesAttr = "llmc.overwrites";
/// The entry of result `r` (-1 without the attribute).
int64_t overwrittenInput(KernelOp group, unsigned r);

} // namespace mlir::llmc::fusion

#endif // LLMC_PASSES_FUSIONUTILS_H
