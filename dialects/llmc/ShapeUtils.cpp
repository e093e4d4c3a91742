//===- ShapeUtils.cpp - Shape arithmetic shared by ops and passes ---------===//
#include "dialects/llmc/ShapeUtils.h"
#include "dialects/llmc/TensorSize.h"

#include "runtime/CheckedSize.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

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

// std::nullopt also when the count overflows int64: callers treat it as
// unknown, and verifyTensorSizes (TensorSize.h) rejects such a type.
std::optional<int64_t> staticElementCount(llvm::ArrayRef<int64_t> shape) {
  if (llvm::any_of(shape, ShapedType::isDynamic))
    return std::nullopt;
  ::llmc::CheckedSize n = ::llmc::elementCount(shape);
  if (!n.valid())
    return std::nullopt;
  return n.value();
}

std::string tensorTypeSizeError(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return "";
  // Dynamic dims count as 1: the static ones alone may already be too many.
  ::llmc::CheckedSize n(1);
  for (int64_t d : tensor.getShape())
    if (!ShapedType::isDynamic(d))
      n *= ::llmc::CheckedSize(d);
  Type element = tensor.getElementType();
  int64_t width = element.isIntOrFloat()
                      ? (element.getIntOrFloatBitWidth() + 7) / 8
                      : 8;
  ::llmc::CheckedSize bytes = n * ::llmc::CheckedSize(width);
  if (bytes.fitsIn(::llmc::kMaxTensorBytes))
    return "";
  std::string s = "has shape " + shapeToString(tensor.getShape()) + " (" +
                  ::llmc::countText(n) + " elements, " +
                  ::llmc::bytesText(bytes.approx()) + ")";
  if (!n.valid())
    return s + ", more elements than a 64-bit count holds";
  return s + ", more than the " +
         ::llmc::bytesText(static_cast<double>(::llmc::kMaxTensorBytes)) +
         " llmc allows for one tensor";
}

LogicalResult verifyTensorSizes(Operation *root) {
  WalkResult walk = root->walk([](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (std::string why = tensorTypeSizeError(arg.getType());
              !why.empty()) {
            op->emitOpError("argument #") << arg.getArgNumber() << " " << why;
            return WalkResult::interrupt();
          }
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      if (std::string why = tensorTypeSizeError(v.getType()); !why.empty()) {
        op->emitOpError("operand #") << i << " " << why;
        return WalkResult::interrupt();
      }
    for (auto [i, v] : llvm::enumerate(op->getResults()))
      if (std::string why = tensorTypeSizeError(v.getType()); !why.empty()) {
        op->emitOpError("result #") << i << " " << why;
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

} // namespace mlir::llmc
