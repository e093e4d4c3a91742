//===- PadShapes.h - What llmc-pad-shapes knows about the target -----------===//
//
// Shared by the parts of the pass: parameter dims (PadShapes.cpp), norms
// over a padded dim (PadNorms.cpp) and attention head dims
// (PadHeadDims.cpp). docs/padding.md gives the sources of every number.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_PADSHAPES_H
#define LLMC_PASSES_PADSHAPES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <string>

namespace mlir::llmc {

/// The cost table of one GPU.
struct ArchCosts {
  const char *arch;
  double fp32Rate;      // FLOP/s of large cuBLASLt GEMMs in fp32 (no TF32)
  double bf16Rate;      // the same in bf16 (8192^3 measured on sm_90)
  double bandwidth;     // bytes/s of device memory
  double launchSeconds; // the floor of a GEMM's time: below it, launch-bound
  int64_t tile;         // output tile width GEMM kernels quantize to
  double misaligned;    // time factor of a GEMM whose dim is not 16-byte
                        // aligned (vocab GEMMs 50257 vs 50304, bf16)
  // Attention forward + backward FLOP/s: llmc's bf16 tensor-core kernels
  // (head dims % 16 == 0, <= 128) and the f32 kernels bf16 operands fall
  // to otherwise (3xTF32), both at [16, 12, 1024, 64] causal on an H100
  // (docs/codegen.md: 0.714 ms against 3.73 ms for the same 9.0e10 FLOPs).
  double attentionBf16Rate;
  double attentionF32Rate;
};

inline constexpr ArchCosts kArchCosts[] = {
    {"sm_90", 5.0e13, 7.93e14, 3.35e12, 4e-6, 128, 5.1, 1.26e14, 2.42e13},
    // sm_80's attention rates are sm_90's scaled by the bf16 GEMM rates
    // (280 / 793): not measured.
    {"sm_80", 1.9e13, 2.8e14, 2.0e12, 4e-6, 128, 5.1, 4.45e13, 8.5e12},
};

/// `dims=FROM:TO,...`: sizes padded whatever the cost model says (tests,
/// and users who know better); FROM -> TO.
using ForcedDims = llvm::DenseMap<int64_t, int64_t>;

/// Parses `spec`; false with `error` set on a malformed list or TO <= FROM.
bool parseForcedDims(llvm::StringRef spec, ForcedDims &dims,
                     std::string &error);

/// Pads the head dims of @forward's `llmc.attention` ops where the cost
/// model (or `forced`) says so: q, k and v are zero-padded along the head
/// dim, `scale` is pinned to the real 1/sqrt(D), and the result is sliced
/// back. Appends one `llmc.padding` entry per head-dim size.
void padAttentionHeadDims(func::FuncOp forward, const ArchCosts &arch,
                          bool bf16, bool always, const ForcedDims &forced,
                          SmallVectorImpl<Attribute> &decisions);

/// `v` with its last dim zero-padded to `to`: a concat with zeros, whose
/// gradient is a slice.
Value padLastDim(OpBuilder &b, Location loc, Value v, int64_t to);

/// `v`'s first `real` entries along its last dim.
Value sliceLastDim(OpBuilder &b, Location loc, Value v, int64_t real);

/// A `layer_norm` or `rms_norm` whose normalized (last) dim was padded from
/// `real` normalizes the first `real` columns only and leaves zeros in the
/// padding: rewritten as slice, the norm at the real size, and zero padding.
void maskNormOverPadding(Operation *norm, int64_t real);

/// One `llmc.padding` entry (docs/padding.md, "The report").
DictionaryAttr paddingEntry(Builder &b, ArrayRef<std::string> params,
                            int64_t from, int64_t to, double extraFlops,
                            const std::string &why);

} // namespace mlir::llmc

#endif // LLMC_PASSES_PADSHAPES_H
