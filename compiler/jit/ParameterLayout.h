//===- ParameterLayout.h - Logical parameters in device buffers -*- C++ -*-===//
//
// parameters() and loadParameters() speak the model's names and logical
// shapes; a plan may store a parameter in a larger buffer (shape padding:
// vocab 50257 stored as 50304 rows, the extra rows zero). Every read and
// write of a parameter goes through parameterLayout + unpad/pad, so the
// padding decision is read in one place: today the stored shape is the
// logical one (the plan records no other), and when the plan records a
// logical shape, parameterLayout is the only function to change.
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

/// The logical block of `stored` (row-major, layout.stored) into `logical`.
void unpad(const ParameterLayout &layout, const uint8_t *stored,
           std::vector<uint8_t> &logical);
/// `logical` into a zeroed buffer of layout.stored: padding stays zero.
void pad(const ParameterLayout &layout, const uint8_t *logical,
         std::vector<uint8_t> &stored);

} // namespace llmc::jit

#endif // LLMC_COMPILER_JIT_PARAMETERLAYOUT_H
