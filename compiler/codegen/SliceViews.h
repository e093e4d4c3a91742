//===- SliceViews.h - Slices read in place --------------------*- C++ -*-===//
//
// A slice whose result is a contiguous run of its input's bytes (a window
// of rows: the chunked classifier's chunks of h and of the targets) needs
// no copy: its readers can read the input at a byte offset. The slice then
// lowers to an alias (no launch) and the memory plan gives its result a
// buffer of its own name that starts that many bytes into the input's
// (MemoryPlan.h `aliasOffset`; docs/memory.md "The chunked classifier").
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_SLICEVIEWS_H
#define LLMC_COMPILER_CODEGEN_SLICEVIEWS_H

#include "dialects/llmc/LlmcOps.h"

#include <cstdint>
#include <optional>

namespace llmc::codegen {

/// The byte offset of `op`'s result in its input when the slice can be
/// read in place: it is the only op of its group; its window is contiguous
/// (unit steps, whole trailing dims, single leading coordinates); the
/// offset is a multiple of 256 bytes (every buffer's alignment, which the
/// vectorized kernels and cuBLASLt rely on); it is not a function result;
/// and nothing writes over the bytes it shares while it lives: no group
/// overwrites its input, the slice or a reshape between them
/// (llmc.overwrites), and the input is not a function argument updated in
/// place (llmc.next). std::nullopt otherwise: the slice is copied.
std::optional<uint64_t> sliceViewOffset(mlir::llmc::SliceOp op);

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_SLICEVIEWS_H
