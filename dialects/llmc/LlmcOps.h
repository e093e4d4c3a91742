//===- LlmcOps.h - Ops of the llmc graph dialect ------------------*- C++ -*-===//
#ifndef LLMC_DIALECTS_LLMC_LLMCOPS_H
#define LLMC_DIALECTS_LLMC_LLMCOPS_H

#include "dialects/llmc/LlmcDialect.h"
#include "dialects/llmc/LlmcInterfaces.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/llmc/LlmcEnums.h.inc"

#define GET_OP_CLASSES
#include "dialects/llmc/LlmcOps.h.inc"

namespace mlir::llmc {
/// The add that makes `matmul` a linear layer: its result's only use, an
/// add of a row vector `[n]` or `[1, ..., 1, n]` (the bias). Null otherwise.
/// The precision policy lowers the bias with the matmul, and the reference
/// evaluator rounds such a narrow-typed pair once, as cuBLASLt's bias
/// epilogue and torch's addmm do (docs/precision.md).
AddOp linearBiasAdd(MatmulOp matmul);

/// An attention operand's shape as [batch, heads, seq, head_dim]: `shape`
/// itself, or with seq and heads swapped when the op is `seq_major` (its
/// operands are [batch, seq, heads, head_dim]). The swap is its own inverse.
SmallVector<int64_t> attentionLogicalShape(ArrayRef<int64_t> shape,
                                           bool seqMajor);

/// Attention operand `index` (0 query, 1 key, 2 value) of `op` (attention,
/// attention_lse or attention_grad) as [batch, heads, seq, head_dim]: its
/// logical shape, or with `qkv_heads` the head window the op reads of the
/// packed [B, T, Hq + 2 Hkv, D] operand.
SmallVector<int64_t> attentionOperandShape(Operation *op, unsigned index);

/// The first head of operand `index`'s window in its packed operand (0
/// without `qkv_heads`): 0, Hq or Hq + Hkv.
int64_t attentionHeadOffset(Operation *op, unsigned index);
} // namespace mlir::llmc

#endif // LLMC_DIALECTS_LLMC_LLMCOPS_H
