//===- DeviceTensors.cpp - RefTensors as device bytes and back ------------===//
#include "compiler/eval/DeviceTensors.h"

#include <cstring>

namespace llmc {

size_t elementBytes(ElementKind kind) {
  switch (kind) {
  case ElementKind::F64:
  case ElementKind::I64:
    return 8;
  case ElementKind::F32:
  case ElementKind::I32:
    return 4;
  case ElementKind::F16:
  case ElementKind::BF16:
    return 2;
  default:
    return 1;
  }
}

std::vector<uint8_t> toDeviceBytes(const RefTensor &t) {
  size_t width = elementBytes(t.kind);
  int64_t n = t.numElements();
  std::vector<uint8_t> bytes(n * width);
  for (int64_t i = 0; i < n; ++i) {
    uint8_t *p = bytes.data() + i * width;
    switch (t.kind) {
    case ElementKind::F32: {
      float f = static_cast<float>(t.floats[i]);
      std::memcpy(p, &f, 4);
      break;
    }
    case ElementKind::F16:
    case ElementKind::BF16: {
      auto bits = static_cast<uint16_t>(
          floatToBits(t.floats[i], floatFormatOf(t.kind)));
      std::memcpy(p, &bits, 2);
      break;
    }
    case ElementKind::I64:
      std::memcpy(p, &t.ints[i], 8);
      break;
    case ElementKind::I32: {
      auto v = static_cast<int32_t>(t.ints[i]);
      std::memcpy(p, &v, 4);
      break;
    }
    case ElementKind::I1:
      *p = t.ints[i] != 0;
      break;
    default: // f64/f8 never reach the device (lowerOp rejects them)
      break;
    }
  }
  return bytes;
}

RefTensor fromDeviceBytes(const std::vector<uint8_t> &bytes, ElementKind kind,
                          std::vector<int64_t> shape) {
  RefTensor t(kind, std::move(shape));
  size_t width = elementBytes(kind);
  for (int64_t i = 0, n = t.numElements(); i < n; ++i) {
    const uint8_t *p = bytes.data() + i * width;
    switch (kind) {
    case ElementKind::F32: {
      float f;
      std::memcpy(&f, p, 4);
      t.floats[i] = f;
      break;
    }
    case ElementKind::F16:
    case ElementKind::BF16: {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      t.floats[i] = bitsToFloat(bits, floatFormatOf(kind));
      break;
    }
    case ElementKind::I64:
      std::memcpy(&t.ints[i], p, 8);
      break;
    case ElementKind::I32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      t.ints[i] = v;
      break;
    }
    case ElementKind::I1:
      t.ints[i] = *p != 0;
      break;
    default:
      break;
    }
  }
  return t;
}

} // namespace llmc
