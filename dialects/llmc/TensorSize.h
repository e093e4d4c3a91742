//===- TensorSize.h - Tensor types llmc can count and hold ------*- C++ -*-===//
//
// MLIR builds tensor<4294967296x4294967296xf32> without complaint, and
// ShapedType::getNumElements then wraps to 0. These checks, on
// runtime/CheckedSize.h, reject such a type (and any tensor past
// kMaxTensorBytes) wherever llmc reads IR: the importers, the reshape
// verifier and every model the CLI loads (docs/limits.md).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_LLMC_TENSORSIZE_H
#define LLMC_DIALECTS_LLMC_TENSORSIZE_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Types.h"
#include "mlir/Support/LogicalResult.h"

#include <string>

namespace mlir::llmc {

/// "" when a tensor of `type` has an element count and byte size within
/// kMaxTensorBytes (any non-tensor type passes; dynamic dims count as 1),
/// else why not, ready to follow a name: "has shape [4294967296,
/// 4294967296] (about 1.8e+19 elements, 64.0 EiB), more elements than a
/// 64-bit count holds".
std::string tensorTypeSizeError(Type type);

/// Checks every block argument, operand and result under `root` with
/// tensorTypeSizeError; emits an error at the first offending op (or
/// function argument) and fails.
LogicalResult verifyTensorSizes(Operation *root);

} // namespace mlir::llmc

#endif // LLMC_DIALECTS_LLMC_TENSORSIZE_H
