//===- AttentionCudnn.h - attention ops as cuDNN steps ----------*- C++ -*-===//
//
// The second attention backend's lowering (docs/codegen.md "cuDNN
// attention"): attention_lse and attention_grad become an AttentionStep
// (runtime/Plan.h) when cuDNN's fused engines take the op, the generated
// kernels otherwise.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_ATTENTIONCUDNN_H
#define LLMC_COMPILER_CODEGEN_ATTENTIONCUDNN_H

#include "compiler/codegen/AttentionMma.h"

#include <string>

namespace llmc::codegen {

/// Why cuDNN does not take the op ("" when it does): bf16 or f16 q, k, v
/// and output of one type, f32 lse, no mask operand, equal q/k and v head
/// dims that are multiples of 8 up to 128, query heads a multiple of the
/// key/value heads, equal lengths when causal (cuDNN's mask is aligned top
/// left, llmc's bottom right: the same only then).
std::string cudnnAttentionRefusal(const AttentionParts &a);

/// The element strides [batch, head, row, 1] of operand i (0 q, 1 k, 2 v)
/// and, for i = 3, of the output (and dO): what the op's cuDNN step reads.
std::array<int64_t, 4> cudnnViewStrides(const AttentionParts &a, unsigned i);

/// Fills `out` with the op's cuDNN step (Kind::Attention) when
/// `ctx.options.cudnnAttention` is set and cuDNN takes it; false (and
/// `out` untouched) otherwise, so the caller emits its kernels.
bool lowerAttentionToCudnn(const AttentionParts &a, bool backward,
                           const EmitContext &ctx, OpLowering &out);

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_ATTENTIONCUDNN_H
