//===- ParameterLayout.cpp - Logical parameters in device buffers ---------===//
#include "compiler/jit/ParameterLayout.h"

#include <algorithm>
#include <cstring>

namespace llmc::jit {

ParameterLayout parameterLayout(const BufferInfo &buffer) {
  ParameterLayout layout;
  layout.stored = buffer.shape;
  layout.logical = buffer.shape;
  layout.elementBytes = dtypeSize(buffer.dtype);
  return layout;
}

static int64_t product(const std::vector<int64_t> &shape, size_t from) {
  int64_t n = 1;
  for (size_t i = from; i < shape.size(); ++i)
    n *= shape[i];
  return n;
}

/// Copies the logical block between the two row-major layouts, one
/// innermost row at a time; `toStored` picks the direction.
static void copyBlock(const ParameterLayout &l, const uint8_t *src,
                      uint8_t *dst, bool toStored) {
  size_t rank = l.logical.size();
  if (rank == 0) {
    std::memcpy(dst, src, l.elementBytes);
    return;
  }
  size_t rowBytes = l.logical.back() * l.elementBytes;
  int64_t rows = product(l.logical, 0) / std::max<int64_t>(l.logical.back(), 1);
  std::vector<int64_t> index(rank, 0);
  for (int64_t r = 0; r < rows && rowBytes; ++r) {
    int64_t storedRow = 0, logicalRow = 0;
    for (size_t d = 0; d + 1 < rank; ++d) {
      storedRow = storedRow * l.stored[d] + index[d];
      logicalRow = logicalRow * l.logical[d] + index[d];
    }
    size_t storedOff = storedRow * l.stored.back() * l.elementBytes;
    size_t logicalOff = logicalRow * rowBytes;
    if (toStored)
      std::memcpy(dst + storedOff, src + logicalOff, rowBytes);
    else
      std::memcpy(dst + logicalOff, src + storedOff, rowBytes);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < l.logical[d])
        break;
      index[d] = 0;
    }
  }
}

void unpad(const ParameterLayout &layout, const uint8_t *stored,
           std::vector<uint8_t> &logical) {
  logical.assign(product(layout.logical, 0) * layout.elementBytes, 0);
  if (layout.identity())
    std::memcpy(logical.data(), stored, logical.size());
  else
    copyBlock(layout, stored, logical.data(), false);
}

void pad(const ParameterLayout &layout, const uint8_t *logical,
         std::vector<uint8_t> &stored) {
  stored.assign(product(layout.stored, 0) * layout.elementBytes, 0);
  if (layout.identity())
    std::memcpy(stored.data(), logical, stored.size());
  else
    copyBlock(layout, logical, stored.data(), true);
}

} // namespace llmc::jit
