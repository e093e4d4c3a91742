//===- TensorConvert.cpp - API tensors to and from the backends -----------===//
#include "compiler/jit/TensorConvert.h"

#include <cstring>

namespace llmc::jit {

int64_t elementCount(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string typeText(DType dtype, const std::vector<int64_t> &shape) {
  return std::string(dtypeName(dtype)) + shapeString(shape);
}

std::optional<DType> dtypeOfKind(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return DType::F32;
  case ElementKind::F16:
    return DType::F16;
  case ElementKind::BF16:
    return DType::BF16;
  case ElementKind::I32:
    return DType::I32;
  case ElementKind::I64:
    return DType::I64;
  default:
    return std::nullopt;
  }
}

std::optional<DType> dtypeOfPlan(llmc::DType dtype) {
  switch (dtype) {
  case llmc::DType::F32:
    return DType::F32;
  case llmc::DType::F16:
    return DType::F16;
  case llmc::DType::BF16:
    return DType::BF16;
  case llmc::DType::I32:
    return DType::I32;
  case llmc::DType::I64:
    return DType::I64;
  case llmc::DType::U8:
    return DType::U8;
  default:
    return std::nullopt;
  }
}

llmc::DType planDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return llmc::DType::F32;
  case DType::F16:
    return llmc::DType::F16;
  case DType::BF16:
    return llmc::DType::BF16;
  case DType::I32:
    return llmc::DType::I32;
  case DType::I64:
    return llmc::DType::I64;
  case DType::U8:
    return llmc::DType::U8;
  }
  return llmc::DType::F32;
}

/// Element i of a host view, as a double (floats) or int64 (integers).
static double floatAt(const TensorView &v, int64_t i) {
  const auto *p = static_cast<const uint8_t *>(v.data);
  switch (v.dtype) {
  case DType::F32: {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  case DType::F16:
  case DType::BF16: {
    uint16_t bits;
    std::memcpy(&bits, p + 2 * i, 2);
    return bitsToFloat(bits, v.dtype == DType::F16 ? FloatFormat::F16
                                                   : FloatFormat::BF16);
  }
  default:
    return 0;
  }
}

static int64_t intAt(const TensorView &v, int64_t i) {
  const auto *p = static_cast<const uint8_t *>(v.data);
  switch (v.dtype) {
  case DType::I64: {
    int64_t x;
    std::memcpy(&x, p + 8 * i, 8);
    return x;
  }
  case DType::I32: {
    int32_t x;
    std::memcpy(&x, p + 4 * i, 4);
    return x;
  }
  case DType::U8:
    return p[i];
  default:
    return 0;
  }
}

Status hostToRef(const TensorView &view, RefTensor &dst) {
  int64_t n = dst.numElements();
  if (elementCount(view.shape) != n)
    return Status::error("internal: a " + typeText(view.dtype, view.shape) +
                         " view for " + dst.typeString());
  if (dst.isFloat()) {
    for (int64_t i = 0; i < n; ++i)
      dst.floats[i] = roundToKind(floatAt(view, i), dst.kind);
  } else {
    for (int64_t i = 0; i < n; ++i)
      dst.ints[i] = wrapToKind(intAt(view, i), dst.kind);
  }
  return Status::ok();
}

void refToF32(const RefTensor &src, std::vector<uint8_t> &f32) {
  int64_t n = src.numElements();
  f32.resize(4 * n);
  for (int64_t i = 0; i < n; ++i) {
    float f = static_cast<float>(src.getDouble(i));
    std::memcpy(f32.data() + 4 * i, &f, 4);
  }
}

} // namespace llmc::jit
