//===- ParameterLayout.cpp - Logical parameters in device buffers ---------===//
#include "compiler/jit/ParameterLayout.h"

#include "runtime/Padding.h"

namespace llmc::jit {

ParameterLayout parameterLayout(const BufferInfo &buffer) {
  ParameterLayout layout;
  layout.stored = buffer.shape;
  // A padded parameter (llmc-pad-shapes) records the model's shape.
  layout.logical = buffer.realShape.empty() ? buffer.shape : buffer.realShape;
  layout.elementBytes = dtypeSize(buffer.dtype);
  return layout;
}

static size_t bytesOf(const std::vector<int64_t> &shape, size_t elementBytes) {
  size_t n = elementBytes;
  for (int64_t d : shape)
    n *= static_cast<size_t>(d);
  return n;
}

Status unpad(const ParameterLayout &layout, const uint8_t *stored,
             std::vector<uint8_t> &logical) {
  return unpadData(stored, bytesOf(layout.stored, layout.elementBytes),
                   layout.stored, layout.logical, layout.elementBytes,
                   logical);
}

Status pad(const ParameterLayout &layout, const uint8_t *logical,
           std::vector<uint8_t> &stored) {
  return padData(logical, bytesOf(layout.logical, layout.elementBytes),
                 layout.logical, layout.stored, layout.elementBytes, stored);
}

} // namespace llmc::jit
