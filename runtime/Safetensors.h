//===- Safetensors.h - Reading and writing .safetensors files -----*- C++
//-*-===//
//
// The safetensors format (Hugging Face): an 8-byte little-endian header
// length N, N bytes of JSON `{name: {"dtype", "shape", "data_offsets":
// [begin, end]}, "__metadata__": {...}}`, then the raw little-endian tensor
// bytes, offsets relative to the end of the header. llmc reads it for input
// batches and weights (`llmc run --inputs x.safetensors`) and the runtime
// will read and write checkpoints in it.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SAFETENSORS_H
#define LLMC_RUNTIME_SAFETENSORS_H

#include "runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llmc {

struct SafeTensor {
  std::string name;
  std::string dtype; // "F32", "BF16", "I64", "BOOL", ... as in the file
  std::vector<int64_t> shape;
  std::vector<uint8_t> data; // raw little-endian bytes
};

/// Bytes per element of a safetensors dtype, or 0 if the dtype is unknown.
size_t safetensorsDtypeSize(const std::string &dtype);

/// Reads every tensor of a file, in the order of their data offsets. Errors
/// name the file and, where it applies, the tensor.
Status readSafetensors(const std::string &path,
                       std::vector<SafeTensor> &tensors);

/// Writes tensors (data laid out in the given order); the inverse of
/// readSafetensors.
Status writeSafetensors(const std::string &path,
                        const std::vector<SafeTensor> &tensors);

} // namespace llmc

#endif // LLMC_RUNTIME_SAFETENSORS_H
