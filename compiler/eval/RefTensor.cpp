//===- RefTensor.cpp - Host tensors of the reference evaluator ------------===//
#include "compiler/eval/RefTensor.h"

#include <cmath>

namespace llmc {

bool isFloatKind(ElementKind kind) {
  switch (kind) {
  case ElementKind::I64:
  case ElementKind::I32:
  case ElementKind::I1:
    return false;
  default:
    return true;
  }
}

FloatFormat floatFormatOf(ElementKind kind) {
  switch (kind) {
  case ElementKind::F64:
    return FloatFormat::F64;
  case ElementKind::F16:
    return FloatFormat::F16;
  case ElementKind::BF16:
    return FloatFormat::BF16;
  case ElementKind::F8E4M3FN:
    return FloatFormat::F8E4M3FN;
  case ElementKind::F8E5M2:
    return FloatFormat::F8E5M2;
  default:
    return FloatFormat::F32;
  }
}

static const std::pair<ElementKind, const char *> kKindNames[] = {
    {ElementKind::F64, "f64"},
    {ElementKind::F32, "f32"},
    {ElementKind::F16, "f16"},
    {ElementKind::BF16, "bf16"},
    {ElementKind::F8E4M3FN, "f8E4M3FN"},
    {ElementKind::F8E5M2, "f8E5M2"},
    {ElementKind::I64, "i64"},
    {ElementKind::I32, "i32"},
    {ElementKind::I1, "i1"},
};

const char *kindName(ElementKind kind) {
  for (auto &[k, name] : kKindNames)
    if (k == kind)
      return name;
  return "?";
}

std::optional<ElementKind> kindFromName(const std::string &name) {
  for (auto &[k, n] : kKindNames)
    if (name == n)
      return k;
  return std::nullopt;
}

int64_t wrapToKind(int64_t x, ElementKind kind) {
  switch (kind) {
  case ElementKind::I32:
    return static_cast<int32_t>(static_cast<uint32_t>(x));
  case ElementKind::I1:
    return x != 0;
  default:
    return x;
  }
}

double roundToKind(double x, ElementKind kind) {
  if (isFloatKind(kind))
    return roundToFormat(x, floatFormatOf(kind));
  if (kind == ElementKind::I1)
    return x != 0;
  return static_cast<double>(
      wrapToKind(static_cast<int64_t>(std::trunc(x)), kind));
}

RefTensor::RefTensor(ElementKind kind, std::vector<int64_t> shape)
    : kind(kind), shape(std::move(shape)) {
  if (isFloat())
    floats.assign(numElements(), 0.0);
  else
    ints.assign(numElements(), 0);
}

RefTensor RefTensor::fromFloats(ElementKind kind, std::vector<int64_t> shape,
                                std::vector<double> values) {
  RefTensor t;
  t.kind = kind;
  t.shape = std::move(shape);
  t.floats = std::move(values);
  for (double &v : t.floats)
    v = roundToFormat(v, floatFormatOf(kind));
  return t;
}

RefTensor RefTensor::fromInts(ElementKind kind, std::vector<int64_t> shape,
                              std::vector<int64_t> values) {
  RefTensor t;
  t.kind = kind;
  t.shape = std::move(shape);
  t.ints = std::move(values);
  for (int64_t &v : t.ints)
    v = wrapToKind(v, kind);
  return t;
}

int64_t RefTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string RefTensor::typeString() const {
  return std::string(kindName(kind)) + shapeString(shape);
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace llmc
