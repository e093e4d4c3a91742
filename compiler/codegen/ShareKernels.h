//===- ShareKernels.h - One kernel for launches with the same code -*- C++ -*-===//
//
// Codegen emits one kernel per launch, named after its op (cast_9, cast_21),
// with a header comment naming the op and its ONNX node. The twelve layers of
// GPT-2 launch the same code twelve times: of the 735 kernels of GPT-2 124M
// bf16, 70 differ in more than their name and header comment. NVRTC took
// most of a cold compile compiling the same code again, and the runtime
// loaded one module per copy.
//
// shareIdenticalKernels keeps the first kernel of each set whose sources are
// equal once the leading comment block is dropped and the entry name is
// replaced by a placeholder (and whose NVRTC options agree), and points every
// launch of the set at it. Each launch keeps its own label (cast_21), so step
// profiles and messages still name the op; the kept kernel's source is
// byte-identical to what codegen emitted for the first op of the set.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_SHAREKERNELS_H
#define LLMC_COMPILER_CODEGEN_SHAREKERNELS_H

#include "runtime/Plan.h"

#include <string>

namespace llmc::codegen {

/// The text two kernels must share to share one cubin: the source without
/// its leading `//` comment lines, with every whole-word occurrence of
/// `entry` replaced by `__llmc_kernel__`.
std::string canonicalKernelSource(const std::string &source,
                                  const std::string &entry);

/// Merges kernels with equal canonical sources and NVRTC options (fastMath,
/// options); returns how many kernels were removed. Launch steps are
/// renumbered; a merged kernel's origin says how many launches share it.
size_t shareIdenticalKernels(Plan &plan);

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_SHAREKERNELS_H
