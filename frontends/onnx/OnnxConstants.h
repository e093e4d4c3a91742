//===- OnnxConstants.h - Evaluate ONNX ops on import-time constants -*- C++ -*-===//
//
// PyTorch's exporters compute shapes at run time: Shape -> Gather -> Concat
// -> Reshape, Range -> Unsqueeze -> LessOrEqual -> Expand -> Where for a
// causal mask, and so on. Once the importer knows every dim, those subgraphs
// have constant inputs, and evaluating them here folds them away entirely:
// Reshape, Expand, Slice and friends then see constant targets and become
// llmc ops with static attributes.
//
// These functions follow ONNX semantics (numpy broadcasting, negative axes
// and indices, Slice clamping) on TensorData. Results are rounded to the
// element type after every op, as a run-time evaluation would. They are meant
// for small tensors: the importer only calls them when the result is below
// its fold limit.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_FRONTENDS_ONNX_ONNXCONSTANTS_H
#define LLMC_FRONTENDS_ONNX_ONNXCONSTANTS_H

#include "frontends/onnx/OnnxTensor.h"

#include "llvm/Support/Error.h"

#include <optional>

namespace llmc::onnximport {

enum class BinaryKind {
  Add, Sub, Mul, Div, Pow, Max, Min, Mod,                        // arithmetic
  Equal, Less, LessOrEqual, Greater, GreaterOrEqual,             // comparison
  And, Or, Xor,                                                  // logic
};
enum class UnaryKind {
  Neg, Abs, Exp, Log, Sqrt, Reciprocal, Tanh, Erf, Sigmoid, Relu, Cos, Sin,
  Floor, Ceil, Not, IsNaN,
};
enum class ReduceKind { Sum, Mean, Max, Min, Prod };

/// True when the kind yields bool (comparisons and logic).
bool isBoolResult(BinaryKind kind);

/// Numpy broadcast of two static shapes, or std::nullopt.
std::optional<std::vector<int64_t>> broadcastStatic(llvm::ArrayRef<int64_t> a,
                                                    llvm::ArrayRef<int64_t> b);

llvm::Expected<TensorData> evalBinary(BinaryKind kind, const TensorData &a,
                                      const TensorData &b);
TensorData evalUnary(UnaryKind kind, const TensorData &a);
TensorData evalCast(const TensorData &a, DType to);
llvm::Expected<TensorData> evalWhere(const TensorData &cond,
                                     const TensorData &x, const TensorData &y);
/// numpy.broadcast_to(a, shape); `shape` must be a broadcast of a's shape.
TensorData evalBroadcastTo(const TensorData &a, llvm::ArrayRef<int64_t> shape);
TensorData evalTranspose(const TensorData &a, llvm::ArrayRef<int64_t> perm);
/// ONNX Gather with a normalized axis; negative indices count from the end.
llvm::Expected<TensorData> evalGather(const TensorData &data,
                                      const TensorData &indices, int64_t axis);
/// ONNX GatherElements with a normalized axis (torch.gather).
llvm::Expected<TensorData> evalGatherElements(const TensorData &data,
                                              const TensorData &indices,
                                              int64_t axis);
TensorData evalConcat(llvm::ArrayRef<const TensorData *> parts, int64_t axis);
/// Slice with per-dim start/stride/count, already clamped (see SliceBounds).
TensorData evalSlice(const TensorData &a, llvm::ArrayRef<int64_t> starts,
                     llvm::ArrayRef<int64_t> steps,
                     llvm::ArrayRef<int64_t> counts);
TensorData evalTrilu(const TensorData &a, int64_t k, bool upper);
TensorData evalReduce(ReduceKind kind, const TensorData &a,
                      llvm::ArrayRef<int64_t> axes, bool keepdims);
/// ONNX Range: ceil((limit - start) / delta) elements.
llvm::Expected<TensorData> evalRange(const TensorData &start,
                                     const TensorData &limit,
                                     const TensorData &delta);

/// ONNX Slice bounds for one dim of size `dim`: clamps start/end as the spec
/// does and returns (start, step, count).
struct SliceBounds {
  int64_t start, step, count;
};
SliceBounds sliceBounds(int64_t start, int64_t end, int64_t step, int64_t dim);

} // namespace llmc::onnximport

#endif // LLMC_FRONTENDS_ONNX_ONNXCONSTANTS_H
