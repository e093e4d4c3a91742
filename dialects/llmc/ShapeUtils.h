//===- ShapeUtils.h - Shape arithmetic shared by ops and passes ---*- C++ -*-===//
//
// Plain functions on shapes (ShapedType::kDynamic marks an unknown dim), so
// that verifiers, type inference, importers and passes agree on broadcasting.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_LLMC_SHAPEUTILS_H
#define LLMC_DIALECTS_LLMC_SHAPEUTILS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::llmc {

/// Numpy broadcast of two shapes. Dims align at the right; a pair is
/// compatible when equal or when one is 1. A dynamic dim against 1 stays
/// dynamic, against a static n > 1 becomes n. Returns std::nullopt when some
/// pair is incompatible.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

/// True when `from` broadcasts to exactly `to` (numpy.broadcast_to).
bool isBroadcastableTo(llvm::ArrayRef<int64_t> from,
                       llvm::ArrayRef<int64_t> to);

/// "[2, ?, 768]" for messages.
std::string shapeToString(llvm::ArrayRef<int64_t> shape);

/// Element count, or std::nullopt when a dim is dynamic.
std::optional<int64_t> staticElementCount(llvm::ArrayRef<int64_t> shape);

/// Normalizes a possibly negative axis; std::nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

} // namespace mlir::llmc

#endif // LLMC_DIALECTS_LLMC_SHAPEUTILS_H
