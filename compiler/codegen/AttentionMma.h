//===- AttentionMma.h - Tensor-core (3xTF32) attention kernels --*- C++ -*-===//
//
// The attention forward and backward on tensor cores for f32 training
// without TF32 rounding: every product goes through mma.sync m16n8k8 TF32
// three times, a * b ~ a_hi b_hi + a_hi b_lo + a_lo b_hi with a = a_hi +
// a_lo split into two TF32 values (CUTLASS's "3xTF32", the scheme of
// PyTorch's f32 memory-efficient attention). The dropped a_lo b_lo term and
// the TF32 rounding of the split leave about f32 accuracy (relative error
// near 1e-6 on attention outputs), at several times the speed of CUDA-core
// f32. Needs sm_80 or newer.
//
// Eligible shapes: q/k and v head dims multiples of 8, at most 128 (the
// register tiles); the SIMT kernels handle the rest.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_ATTENTIONMMA_H
#define LLMC_COMPILER_CODEGEN_ATTENTIONMMA_H

#include "compiler/codegen/Emitters.h"

namespace llmc::codegen {

struct AttentionParts {
  mlir::Value query, key, value, mask, result, lse;
  bool causal = false;
  double scale = 1.0;
  /// Operands and results [B, T, H, D] (the op's `seq_major`): rows of a
  /// head are kH * kD elements apart instead of kD.
  bool seqMajor = false;
  /// The attention op, for `qkv_heads`: q, k, v are head windows of packed
  /// [B, T, Hq + 2 Hkv, D] operands (docs/fusion.md), read at a byte
  /// offset with the packed row as their token stride.
  mlir::Operation *op = nullptr;
  /// q, k, v (the head window the op reads) as [B, H, T, D].
  Shape qShape() const { return operandShape(0); }
  Shape kShape() const { return operandShape(1); }
  Shape vShape() const { return operandShape(2); }
  Shape operandShape(unsigned i) const;
  /// Heads in a token's row of operand i's buffer: the packed count, or the
  /// window's own.
  int64_t rowHeads(unsigned i) const;
  /// Operand i (q, k, v) as a kernel argument, at its window's first head.
  KernelArg qkvArg(unsigned i) const;
  /// attention_grad's dq, dk or dv (i = 0, 1, 2): result i, or the window
  /// of the one packed result.
  KernelArg gradArg(unsigned i) const;
};

/// True when the tensor-core kernels take head dims `d` (q/k) and `dv`.
bool attentionMmaEligible(int64_t d, int64_t dv);

/// Device helpers: tf32 split, the m16n8k8 mma, and mmaTile (a warp's
/// 16 x 8NT accumulator += A[16 x K] B[K x 8NT] from shared memory).
extern const char *const kMmaTf32Helpers;

/// kB, kHq, kHkv, kT, kS, kD, kDv, kGroup: the constants of every attention
/// kernel (both schemes, forward and backward); `q`, `k` as [B, H, T, D].
void attentionShapeConstants(KernelSource &src, const Shape &q, const Shape &k,
                             int64_t dv);

/// Element strides of batch, head and row (token) of each attention
/// operand, for the dense [B, H, T, D] or the `seqMajor` [B, T, H, D]
/// layout: kQsB/kQsH/kQsT (q, dq), kKs* (k, dk), kVs* (v, dv), kOs* (out,
/// dout). The head dim is contiguous in both.
void attentionStrideConstants(KernelSource &src, const AttentionParts &a);

/// The scores' mask as CUDA statements on `x` at (b, h, row, col), using the
/// kernel constants kMaskB/H/T/S that `maskConstants` defines.
std::string maskStatements(mlir::Type maskType, const std::string &row,
                           const std::string &col, const std::string &x,
                           const std::string &indent);
void maskConstants(KernelSource &src, mlir::Value mask, const Shape &scores);

/// What both forward kernels (3xTF32 and bf16) share: the parameters q, k,
/// v[, mask], out, lse and their arguments (lse a scratch when it is not a
/// result), the mask's constants and statements on `x` at (row, col)
/// indented by `maskIndent`, the causal end `kvEnd` of the key loop for
/// query rows q0..q0+kBr-1, and the `visible` test of score (row, col).
struct ForwardInterface {
  std::string params, mask, kvEnd, visible;
  std::vector<KernelArg> args;
};
ForwardInterface forwardInterface(KernelSource &src, OpLowering &out,
                                  const AttentionParts &a,
                                  const std::string &maskIndent);

/// The constants of a tensor-core kernel: the shapes, kBr and kBc (query
/// rows and keys per tile), kThreadsPerBlock, and the shared row strides
/// kLdQ/kLdK/kLdV (kLdO too for the gradient kernels, `grad`), each head
/// dim + `pad` elements (bank-conflict padding).
void tileConstants(KernelSource &src, const AttentionParts &a,
                   int64_t rowTile, int64_t keyTile, unsigned warps,
                   int64_t pad, bool grad);

/// `text` with every "@KEY@" of `values` replaced (the bf16 kernels are
/// written as templates with such holes).
std::string substitute(
    std::string text,
    const std::vector<std::pair<std::string, std::string>> &values);

/// A kernel of `warps` warps per block, `src` compiled as `src.name()`.
EmittedKernel attentionLaunch(const KernelSource &src,
                              std::array<unsigned, 3> grid, unsigned warps,
                              unsigned sharedBytes,
                              std::vector<KernelArg> args);

/// CUDA statements that copy a [rows, cols] tile starting at `src` (rows
/// contiguous) into shared `dst` with row stride `ld`, zero-filling rows at
/// or past `valid`; f32 tiles move as float4 with all loads in flight at
/// once. Needs `kThreadsPerBlock` and `index_t`.
std::string stageTile(mlir::Type t, const std::string &dst,
                      const std::string &ld, const std::string &src,
                      const std::string &srcLd,
                      int64_t rows, int64_t cols, const std::string &valid,
                      const std::string &indent);

/// stageTile for a tile that feeds mma B operands: `dst` is uint2 (the
/// {hi, lo} TF32 split of each element, done once at staging).
std::string stageSplit(mlir::Type t, const std::string &dst,
                       const std::string &ld, const std::string &src,
                       const std::string &srcLd,
                       int64_t rows, int64_t cols, const std::string &valid,
                       const std::string &indent);

/// The forward (flash, online softmax) writing out and the row lse.
mlir::LogicalResult emitAttentionForwardMma(mlir::Operation *op,
                                            const EmitContext &ctx,
                                            OpLowering &out,
                                            const AttentionParts &a);

/// attention_grad's `<name>_kv` and `<name>_q` kernels on tensor cores,
/// appended to `out` after the `<name>_dot` kernel that fills the scratch
/// `rowdot`. `common`/`commonArgs`: the parameters and arguments both
/// kernels take first (q, k, v, lse, dout, rowdot[, mask]).
mlir::LogicalResult
appendAttentionGradMma(mlir::Operation *op, const EmitContext &ctx,
                       OpLowering &out, const AttentionParts &a,
                       const std::string &common,
                       const std::vector<KernelArg> &commonArgs);

/// True when q, k and v are all bf16 or all f16 and the head dims fit the
/// 16-bit kernels (multiples of 16, at most 128): mma.sync m16n8k16, one
/// product per tile.
bool attention16BitEligible(mlir::Type qt, mlir::Type kt, mlir::Type vt,
                            int64_t d, int64_t dv);

/// "bf16" or "f16": the mma operand type of the 16-bit kernels for `t`.
const char *mma16PtxType(mlir::Type t);

/// The holes of the 16-bit kernel texts for element type `t` (bf16 or f16):
/// @ELT@ (the kernels' typedef), @STORAGE@, @PAIR@, @PACK@, @PTX@, @SFX@.
std::vector<std::pair<std::string, std::string>> mma16Holes(mlir::Type t);

/// kScale, kLog2e, kLn2, kScaleLog2, the static_asserts and the device
/// helpers (the m16n8k16 mma, ldmatrix operand loads, cp.async staging;
/// they need kThreadsPerBlock) of every 16-bit attention kernel on `t`.
void mma16AttentionConstants(KernelSource &src, double scale, mlir::Type t);

/// The 16-bit forward and attention_grad's `_kv`/`_q` kernels (as their f32
/// counterparts above, on bf16 or f16 tensor cores).
mlir::LogicalResult emitAttentionForwardMma16(mlir::Operation *op,
                                              const EmitContext &ctx,
                                              OpLowering &out,
                                              const AttentionParts &a);
mlir::LogicalResult
appendAttentionGradMma16(mlir::Operation *op, const EmitContext &ctx,
                         OpLowering &out, const AttentionParts &a,
                         const std::string &common,
                         const std::vector<KernelArg> &commonArgs);

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_ATTENTIONMMA_H
