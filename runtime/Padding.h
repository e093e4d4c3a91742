//===- Padding.h - Parameters between their real and padded shapes -*- C++ -*-===//
//
// llmc-pad-shapes (docs/padding.md) gives some parameters padded shapes
// (a vocabulary of 50257 rows lives as 50304 on the GPU and in the plan);
// everything a user sees keeps the model's own shapes. This is the one
// place that converts row-major tensor data between the two: the initial
// weights going in (zero padding), and gradients, checkpoints and exported
// weights coming out. MLIR-free, so the trainer, `llmc verify` and the JIT
// API share it.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_PADDING_H
#define LLMC_RUNTIME_PADDING_H

#include "runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace llmc {

/// True when the shapes differ (a padded parameter).
bool isPadded(const std::vector<int64_t> &real,
              const std::vector<int64_t> &padded);

/// `real` (row-major, `real` shape, `elementBytes` per element) placed in
/// the leading corner of a zero tensor of shape `padded`. Each dim of
/// `padded` is at least the same dim of `real`, and the ranks are equal.
Status padData(const uint8_t *real, size_t realBytes,
               const std::vector<int64_t> &realShape,
               const std::vector<int64_t> &paddedShape, size_t elementBytes,
               std::vector<uint8_t> &out);

/// The inverse: the leading `real`-shaped corner of `padded` data.
Status unpadData(const uint8_t *padded, size_t paddedBytes,
                 const std::vector<int64_t> &paddedShape,
                 const std::vector<int64_t> &realShape, size_t elementBytes,
                 std::vector<uint8_t> &out);

/// unpadData for element types held as one value per element (the
/// reference evaluator's doubles): the same corner, as values.
template <typename T>
Status unpadValues(const std::vector<T> &padded,
                   const std::vector<int64_t> &paddedShape,
                   const std::vector<int64_t> &realShape,
                   std::vector<T> &out) {
  std::vector<uint8_t> bytes;
  LLMC_RETURN_IF_ERROR(
      unpadData(reinterpret_cast<const uint8_t *>(padded.data()),
                padded.size() * sizeof(T), paddedShape, realShape, sizeof(T),
                bytes));
  out.resize(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return Status::ok();
}

/// padData for values held one per element (the reference evaluator's).
template <typename T>
Status padValues(const std::vector<T> &real,
                 const std::vector<int64_t> &realShape,
                 const std::vector<int64_t> &paddedShape,
                 std::vector<T> &out) {
  std::vector<uint8_t> bytes;
  LLMC_RETURN_IF_ERROR(padData(reinterpret_cast<const uint8_t *>(real.data()),
                               real.size() * sizeof(T), realShape, paddedShape,
                               sizeof(T), bytes));
  out.resize(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return Status::ok();
}

} // namespace llmc

#endif // LLMC_RUNTIME_PADDING_H
