//===- ParameterLayout.h - Logical parameters in device buffers -*- C++ -*-===//
//
// parameters() and loadParameters() speak the model's names and logical
// shapes; a plan may store a parameter in a larger buffer (shape padding:
// vocab 50257 stored as 50304 rows, the extra rows zero). Every read and
// write of a parameter goes through parameterLayout + unpad/pad, so the
// padding decision is read in one place: the logical shape is the buffer's
// `realShape` when llmc-pad-shapes padded it (docs/padding.md), else its
// shape.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_JIT_PARAMETERLAYOUT_H
#define LLMC_COMPILER_JIT_PARAMETERLAYOUT_H

#include "runtime/Plan.h"

#include <cstdint>
#include <vector>

namespace llmc::jit {

struct ParameterLayout {
  std::vector<int64_t> logical; // what the user sees
  std::vector<int64_t> stored;  // the buffer's shape (each dim >= logical)
  size_t elementBytes = 4;
  bool identity() const { return logical == stored; }
};

ParameterLayout parameterLayout(const BufferInfo &buffer);

/// The logical block of `stored` (row-major, layout.stored) into `logical`
/// (runtime/Padding.h's unpadData, the trainer's helper too).
Status unpad(const ParameterLayout &layout, const uint8_t *stored,
           std::vector<uint8_t> &logical);
/// `logical` into a zeroed buffer of layout.stored: padding stays zero.
Status pad(const ParameterLayout &layout, const uint8_t *logical,
         std::vector<uint8_t> &stored);

} // namespace llmc::jit

#endif // LLMC_COMPILER_JIT_PARAMETERLAYOUT_H
