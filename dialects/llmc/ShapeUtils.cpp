//===- ShapeUtils.cpp - Shape arithmetic shared by ops and passes ---------===//
#include "dialects/llmc/ShapeUtils.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"

#include <algorithm>

namespace mlir::llmc {

std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  llvm::SmallVector<int64_t> out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    // Walk from the right: dim i of the result pairs with the operands' dims
    // counted from their own ends.
    int64_t a = i < lhs.size() ? lhs[lhs.size() - 1 - i] : 1;
    int64_t b = i < rhs.size() ? rhs[rhs.size() - 1 - i] : 1;
    int64_t &r = out[rank - 1 - i];
    if (a == b) {
      r = a;
    } else if (a == 1) {
      r = b;
    } else if (b == 1) {
      r = a;
    } else if (ShapedType::isDynamic(a)) {
      r = b;
    } else if (ShapedType::isDynamic(b)) {
      r = a;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

bool isBroadcastableTo(llvm::ArrayRef<int64_t> from,
                       llvm::ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t f = from[i], t = to[offset + i];
    if (f == 1 || f == t || ShapedType::isDynamic(f) || ShapedType::isDynamic(t))
      continue;
    return false;
  }
  return true;
}

std::string shapeToString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += ShapedType::isDynamic(shape[i]) ? "?" : std::to_string(shape[i]);
  }
  return s + "]";
}

std::optional<int64_t> staticElementCount(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (ShapedType::isDynamic(d))
      return std::nullopt;
    n *= d;
  }
  return n;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

} // namespace mlir::llmc
