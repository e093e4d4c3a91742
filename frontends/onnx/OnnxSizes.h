//===- OnnxSizes.h - Size checks of ONNX node results -----------*- C++ -*-===//
//
// A shape an ONNX node computes from data (Reshape's target, Expand's,
// ConstantOfShape's, Range's length) is checked before anything of that
// shape is folded, allocated or built: a 300-byte model must not ask for
// terabytes, and [5, 3689348814741910324] must not pass as 4 elements
// (runtime/CheckedSize.h, docs/limits.md).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_FRONTENDS_ONNX_ONNXSIZES_H
#define LLMC_FRONTENDS_ONNX_ONNXSIZES_H

#include "frontends/onnx/OnnxGraph.h"

namespace llmc::onnximport {

/// Fails, naming node `n`, when a tensor of `shape` with `elementBytes`
/// bytes per element overflows an int64 count or passes kMaxTensorBytes:
/// "node 'r' (Reshape): the target shape has shape [5, ...] (about 1.8e+19
/// elements, ...), more elements than a 64-bit count holds".
mlir::LogicalResult checkResultSize(const OnnxNode &n,
                                    llvm::ArrayRef<int64_t> shape,
                                    int64_t elementBytes,
                                    llvm::StringRef what);

} // namespace llmc::onnximport

#endif // LLMC_FRONTENDS_ONNX_ONNXSIZES_H
