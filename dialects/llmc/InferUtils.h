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

namespace mlir::llmc {

template <typename OpTy, typename... Args>
LogicalResult inferError(std::optional<Location> loc, Args &&...args) {
  return emitOptionalError(loc, "'", OpTy::getOperationName(), "' op ",
                           std::forward<Args>(args)...);
}

inline RankedTensorType rankedOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

} // namespace mlir::llmc

#endif // LLMC_DIALECTS_LLMC_INFERUTILS_H
