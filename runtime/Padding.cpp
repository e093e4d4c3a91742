//===- Padding.cpp - Parameters between their real and padded shapes ------===//
//
// Both directions copy the real tensor's innermost rows as contiguous runs
// (a [50257, 768] table in a [50304, 768] one is one run), walking the
// outer dims of the real shape in row-major order.
//
//===----------------------------------------------------------------------===//
#include "runtime/Padding.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace llmc {

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Elements of `shape`, or -1 when a dim is negative or the count overflows.
int64_t elementsOf(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d && n > INT64_MAX / d))
      return -1;
    n *= d;
  }
  return n;
}

Status checkShapes(const std::vector<int64_t> &real,
                   const std::vector<int64_t> &padded, size_t elementBytes) {
  bool ok = real.size() == padded.size() && elementBytes > 0;
  for (size_t i = 0; ok && i < real.size(); ++i)
    ok = real[i] >= 0 && real[i] <= padded[i];
  if (!ok || elementsOf(padded) < 0)
    return Status::error("padding: real shape " + shapeText(real) +
                         " does not fit in padded shape " + shapeText(padded));
  return Status::ok();
}

/// Calls copy(realOffset, paddedOffset, elements) for each innermost run.
template <typename Fn>
void forEachRun(const std::vector<int64_t> &real,
                const std::vector<int64_t> &padded, Fn copy) {
  size_t rank = real.size();
  if (rank == 0) {
    copy(0, 0, 1);
    return;
  }
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < rank; ++i)
    rows *= real[i];
  int64_t run = real[rank - 1];
  if (rows == 0 || run == 0)
    return;
  std::vector<int64_t> index(rank - 1, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t realOffset = r * run, paddedOffset = 0;
    for (size_t i = 0; i + 1 < rank; ++i)
      paddedOffset = paddedOffset * padded[i] + index[i];
    copy(realOffset, paddedOffset * padded[rank - 1], run);
    for (size_t i = rank - 1; i-- > 0;) // the next row-major index
      if (++index[i] < real[i])
        break;
      else
        index[i] = 0;
  }
}

} // namespace

bool isPadded(const std::vector<int64_t> &real,
              const std::vector<int64_t> &padded) {
  return real != padded;
}

Status padData(const uint8_t *real, size_t realBytes,
               const std::vector<int64_t> &realShape,
               const std::vector<int64_t> &paddedShape, size_t elementBytes,
               std::vector<uint8_t> &out) {
  LLMC_RETURN_IF_ERROR(checkShapes(realShape, paddedShape, elementBytes));
  if (static_cast<uint64_t>(elementsOf(realShape)) * elementBytes != realBytes)
    return Status::error("padding: " + std::to_string(realBytes) +
                         " bytes of data for shape " + shapeText(realShape));
  out.assign(static_cast<size_t>(elementsOf(paddedShape)) * elementBytes, 0);
  forEachRun(realShape, paddedShape, [&](int64_t r, int64_t p, int64_t n) {
    std::memcpy(out.data() + p * elementBytes, real + r * elementBytes,
                n * elementBytes);
  });
  return Status::ok();
}

Status unpadData(const uint8_t *padded, size_t paddedBytes,
                 const std::vector<int64_t> &paddedShape,
                 const std::vector<int64_t> &realShape, size_t elementBytes,
                 std::vector<uint8_t> &out) {
  LLMC_RETURN_IF_ERROR(checkShapes(realShape, paddedShape, elementBytes));
  if (static_cast<uint64_t>(elementsOf(paddedShape)) * elementBytes !=
      paddedBytes)
    return Status::error("padding: " + std::to_string(paddedBytes) +
                         " bytes of data for shape " + shapeText(paddedShape));
  out.assign(static_cast<size_t>(elementsOf(realShape)) * elementBytes, 0);
  forEachRun(realShape, paddedShape, [&](int64_t r, int64_t p, int64_t n) {
    std::memcpy(out.data() + r * elementBytes, padded + p * elementBytes,
                n * elementBytes);
  });
  return Status::ok();
}

} // namespace llmc
