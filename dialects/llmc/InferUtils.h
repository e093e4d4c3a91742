//===- InferUtils.h - Helpers for op verification and inference ---*- C++ -*-===//
//
// Type inference runs both while building ops (importers, passes) and while
// verifying them, so its errors must read like verifier errors: they name the
// op ("'llmc.add' op ...") and print the offending shapes.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_LLMC_INFERUTILS_H
#define LLMC_DIALECTS_LLMC_INFERUTILS_H

#include "dialects/llmc/ShapeUtils.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/APFloat.h"

namespace mlir::llmc {

template <typename OpTy, typename... Args>
LogicalResult inferError(std::optional<Location> loc, Args &&...args) {
  return emitOptionalError(loc, "'", OpTy::getOperationName(), "' op ",
                           std::forward<Args>(args)...);
}

/// As inferError, for helpers shared by several ops.
template <typename... Args>
LogicalResult inferErrorNamed(std::optional<Location> loc, StringRef opName,
                              Args &&...args) {
  return emitOptionalError(loc, "'", opName, "' op ",
                           std::forward<Args>(args)...);
}

/// True when both dims are static and differ.
inline bool dimsConflict(int64_t a, int64_t b) {
  return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b;
}

/// Checks the operands of attention-like ops (errors name `opName`) and
/// returns the output shape [B, Hq, T, Dv] ([B, T, Hq, Dv] with `seqMajor`,
/// whose operands are [B, T, H, D]); with `qkvHeads` ({Hq, Hkv}, the
/// attribute; empty without it) q, k and v are [B, T, Hq + 2 Hkv, D] and
/// the op reads its head window of each. Defined in LlmcNNOps.cpp.
FailureOr<SmallVector<int64_t>>
inferAttentionShape(std::optional<Location> loc, StringRef opName, Value query,
                    Value key, Value value, Value mask,
                    std::optional<APFloat> scale, bool seqMajor,
                    ArrayRef<int64_t> qkvHeads);

/// An optional `qkv_heads` attribute's values, empty when absent.
ArrayRef<int64_t> qkvHeadsOrEmpty(std::optional<ArrayRef<int64_t>> heads);

inline RankedTensorType rankedOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Checks that a norm's scale/shift operand has the normalized dims' shape.
template <typename OpTy>
LogicalResult checkNormParam(std::optional<Location> loc,
                             RankedTensorType input, int64_t axis, Value param,
                             StringRef name) {
  if (!param)
    return success();
  auto type = rankedOf(param);
  ArrayRef<int64_t> normalized = input.getShape().drop_front(axis);
  if (type.getElementType() != input.getElementType())
    return inferError<OpTy>(loc, name, " has element type ",
                            type.getElementType(), " but the input has ",
                            input.getElementType());
  bool ok = type.getRank() == static_cast<int64_t>(normalized.size());
  for (size_t i = 0; ok && i < normalized.size(); ++i)
    ok = !dimsConflict(type.getDimSize(i), normalized[i]);
  if (!ok)
    return inferError<OpTy>(
        loc, name, " has shape ", shapeToString(type.getShape()),
        " but the normalized dims are ", shapeToString(normalized));
  return success();
}

template <typename OpTy>
FailureOr<int64_t> normAxis(std::optional<Location> loc, RankedTensorType input,
                            int64_t axis) {
  auto normalized = normalizeAxis(axis, input.getRank());
  if (!normalized)
    return inferError<OpTy>(loc, "axis ", axis, " is out of range for rank ",
                            input.getRank());
  return *normalized;
}

/// The loss type of a cross_entropy (and of its gradient's incoming
/// cotangent): per position for `none`, else a scalar. Checks that the
/// targets have the logits' shape without the class dim.
template <typename OpTy>
FailureOr<RankedTensorType> crossEntropyLossType(std::optional<Location> loc,
                                                 RankedTensorType logits,
                                                 RankedTensorType targets,
                                                 bool perPosition) {
  if (logits.getRank() < 1)
    return inferError<OpTy>(loc, "logits must be [..., classes]");
  ArrayRef<int64_t> lead = logits.getShape().drop_back();
  bool ok = targets.getRank() == static_cast<int64_t>(lead.size());
  for (size_t i = 0; ok && i < lead.size(); ++i)
    ok = !dimsConflict(lead[i], targets.getDimSize(i));
  if (!ok)
    return inferError<OpTy>(
        loc, "targets ", shapeToString(targets.getShape()),
        " must have the logits' shape without the class dim, ",
        shapeToString(lead));
  return perPosition ? logits.clone(lead)
                     : RankedTensorType::get({}, logits.getElementType());
}

/// A cross_entropy's (or its gradient's) `classes` leaves at least one
/// class and names no more than there are columns; the columns past it are
/// padding (llmc-pad-shapes).
template <typename OpTy>
LogicalResult verifyClasses(OpTy op) {
  std::optional<int64_t> classes = op.getClasses();
  auto logits = cast<RankedTensorType>(op.getLogits().getType());
  if (!classes || logits.getRank() < 1 ||
      logits.isDynamicDim(logits.getRank() - 1))
    return success();
  int64_t columns = logits.getShape().back();
  if (*classes < 1 || *classes > columns)
    return op.emitOpError("classes ")
           << *classes << " must be in [1, " << columns
           << "] (the logits' last dim)";
  return success();
}

/// The same for a gather's (or gather_grad's) `bound` against the table's
/// size along the axis.
inline LogicalResult verifyIndexBound(Operation *op, std::optional<int64_t> bound,
                                      RankedTensorType data, int64_t axis) {
  if (!bound || axis < 0 || axis >= data.getRank() ||
      data.isDynamicDim(axis))
    return success();
  if (*bound < 1 || *bound > data.getDimSize(axis))
    return op->emitOpError("bound ")
           << *bound << " must be in [1, " << data.getDimSize(axis)
           << "] (the table's size along axis " << axis << ")";
  return success();
}

} // namespace mlir::llmc

#endif // LLMC_DIALECTS_LLMC_INFERUTILS_H
