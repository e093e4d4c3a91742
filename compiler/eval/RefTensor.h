//===- RefTensor.h - Host tensors of the reference evaluator ------*- C++
//-*-===//
//
// A RefTensor is a row-major host tensor: a shape, an element kind and the
// values. Float kinds keep their values as double (already rounded to the
// kind's format); integer kinds and i1 keep exact int64 values, so token ids
// and index arithmetic never pass through a double. This header is free of
// MLIR so that tests and tools can build tensors without a context.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_EVAL_REFTENSOR_H
#define LLMC_COMPILER_EVAL_REFTENSOR_H

#include "compiler/common/FloatFormats.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llmc {

enum class ElementKind { F64, F32, F16, BF16, F8E4M3FN, F8E5M2, I64, I32, I1 };

bool isFloatKind(ElementKind kind);
/// The FloatFormat of a float kind.
FloatFormat floatFormatOf(ElementKind kind);
/// "f32", "bf16", "i64", "i1", ... (MLIR spelling).
const char *kindName(ElementKind kind);
/// The kind spelled `name` in MLIR syntax, if any.
std::optional<ElementKind> kindFromName(const std::string &name);

/// Rounds a double to `kind`'s values: floats to their format, integers
/// truncate toward zero and wrap to their width, i1 is (x != 0).
/// Only for values the caller knows to be in range for integers.
double roundToKind(double x, ElementKind kind);
/// Wraps an int64 to `kind`'s width (two's complement); i1 is (x != 0).
int64_t wrapToKind(int64_t x, ElementKind kind);

struct RefTensor {
  ElementKind kind = ElementKind::F32;
  std::vector<int64_t> shape;
  std::vector<double> floats; // float kinds: one value per element
  std::vector<int64_t> ints;  // integer kinds and i1: one value per element

  RefTensor() = default;
  /// A zero-filled tensor.
  RefTensor(ElementKind kind, std::vector<int64_t> shape);

  static RefTensor fromFloats(ElementKind kind, std::vector<int64_t> shape,
                              std::vector<double> values);
  static RefTensor fromInts(ElementKind kind, std::vector<int64_t> shape,
                            std::vector<int64_t> values);

  bool isFloat() const { return isFloatKind(kind); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numElements() const;
  /// Element `i` as a double (exact for floats and for |ints| <= 2^53).
  double getDouble(int64_t i) const {
    return isFloat() ? floats[i] : static_cast<double>(ints[i]);
  }
  /// Element `i` as an integer (floats truncate toward zero).
  int64_t getInt(int64_t i) const {
    return isFloat() ? static_cast<int64_t>(floats[i]) : ints[i];
  }
  /// Copies element `srcIndex` of `src` (same kind) into element `i`.
  void copyElement(int64_t i, const RefTensor &src, int64_t srcIndex) {
    if (isFloat())
      floats[i] = src.floats[srcIndex];
    else
      ints[i] = src.ints[srcIndex];
  }
  /// "f32[2, 3]".
  std::string typeString() const;
};

/// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape);

/// "[2, 3]".
std::string shapeString(const std::vector<int64_t> &shape);

} // namespace llmc

#endif // LLMC_COMPILER_EVAL_REFTENSOR_H
