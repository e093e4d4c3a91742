//===- ShapeKernels.cpp - Constants and data movement ---------------------===//
//
// constant, iota, reshape, transpose, broadcast_to, slice, concat, split,
// gather and gather_elements. These ops copy elements without arithmetic,
// so they work on every element kind alike (RefTensor::copyElement). Gather
// indices may be negative (counted from the end, as ONNX allows); an index
// outside [-size, size) is an error that names it.
//
//===----------------------------------------------------------------------===//
#include "compiler/eval/AttrTensors.h"
#include "compiler/eval/Kernels.h"

#include "dialects/llmc/LlmcOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc {

namespace {

int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d)
    n *= shape[d];
  return n;
}

LogicalResult constantKernel(ConstantOp op, Operands,
                             std::vector<RefTensor> &out) {
  std::string error;
  auto t = tensorFromAttr(op.getValue(), error);
  if (!t)
    return op.emitError("reference evaluator: ") << error;
  out.push_back(std::move(*t));
  return success();
}

LogicalResult iotaKernel(IotaOp op, Operands, std::vector<RefTensor> &out) {
  RefTensor r = makeResult(op.getResult());
  double start = op.getStart().convertToDouble();
  double step = op.getStep().convertToDouble();
  if (!r.isFloat() && (start != std::trunc(start) || step != std::trunc(step)))
    return op.emitError("reference evaluator: iota of ")
           << kindName(r.kind) << " needs integer start and step, got " << start
           << " and " << step;
  int64_t dim = op.getDimension();
  int64_t inner = product(r.shape, dim + 1, r.shape.size());
  for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
    int64_t k = (i / inner) % r.shape[dim];
    if (r.isFloat())
      r.floats[i] = start + step * static_cast<double>(k);
    else
      r.ints[i] = static_cast<int64_t>(start) + static_cast<int64_t>(step) * k;
  }
  roundInPlace(r);
  out.push_back(std::move(r));
  return success();
}

LogicalResult reshapeKernel(ReshapeOp op, Operands in,
                            std::vector<RefTensor> &out) {
  RefTensor r = *in[0];
  r.shape = shapeOf(op.getResult());
  out.push_back(std::move(r));
  return success();
}

LogicalResult transposeKernel(TransposeOp op, Operands in,
                              std::vector<RefTensor> &out) {
  RefTensor r = makeResult(op.getResult());
  ArrayRef<int64_t> perm = op.getPermutation();
  std::vector<int64_t> inStrides = stridesOf(in[0]->shape);
  for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
    int64_t rem = i, src = 0;
    for (int64_t d = r.rank() - 1; d >= 0; --d) {
      src += (rem % r.shape[d]) * inStrides[perm[d]];
      rem /= r.shape[d];
    }
    r.copyElement(i, *in[0], src);
  }
  out.push_back(std::move(r));
  return success();
}

LogicalResult broadcastKernel(BroadcastToOp op, Operands in,
                              std::vector<RefTensor> &out) {
  RefTensor r = makeResult(op.getResult());
  BroadcastMap map(in[0]->shape, r.shape);
  for (int64_t i = 0, e = r.numElements(); i < e; ++i)
    r.copyElement(i, *in[0], map(i));
  out.push_back(std::move(r));
  return success();
}

LogicalResult sliceKernel(SliceOp op, Operands in,
                          std::vector<RefTensor> &out) {
  RefTensor r = makeResult(op.getResult());
  ArrayRef<int64_t> starts = op.getStarts(), strides = op.getStrides();
  std::vector<int64_t> inStrides = stridesOf(in[0]->shape);
  for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
    int64_t rem = i, src = 0;
    for (int64_t d = r.rank() - 1; d >= 0; --d) {
      src += (starts[d] + (rem % r.shape[d]) * strides[d]) * inStrides[d];
      rem /= r.shape[d];
    }
    r.copyElement(i, *in[0], src);
  }
  out.push_back(std::move(r));
  return success();
}

/// Calls fn(wholeIndex, partIndex) for every element of a part that sits at
/// `offset` along `axis` of the whole (concat and split).
template <typename Fn>
void forEachInPart(const std::vector<int64_t> &whole,
                   const std::vector<int64_t> &part, int64_t axis,
                   int64_t offset, Fn fn) {
  int64_t outer = product(part, 0, axis);
  int64_t partRow = product(part, axis, part.size());
  int64_t wholeRow = product(whole, axis, whole.size());
  int64_t inner = product(part, axis + 1, part.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < partRow; ++j)
      fn(o * wholeRow + offset * inner + j, o * partRow + j);
}

LogicalResult concatKernel(ConcatOp op, Operands in,
                           std::vector<RefTensor> &out) {
  RefTensor r = makeResult(op.getResult());
  int64_t axis = op.getAxis(), offset = 0;
  for (const RefTensor *t : in) {
    forEachInPart(r.shape, t->shape, axis, offset,
                  [&](int64_t w, int64_t p) { r.copyElement(w, *t, p); });
    offset += t->shape[axis];
  }
  out.push_back(std::move(r));
  return success();
}

LogicalResult splitKernel(SplitOp op, Operands in,
                          std::vector<RefTensor> &out) {
  int64_t axis = op.getAxis(), offset = 0;
  const RefTensor &whole = *in[0];
  for (Value v : op.getResults()) {
    RefTensor part = makeResult(v);
    forEachInPart(whole.shape, part.shape, axis, offset,
                  [&](int64_t w, int64_t p) { part.copyElement(p, whole, w); });
    offset += part.shape[axis];
    out.push_back(std::move(part));
  }
  return success();
}

/// The index at `indices[i]` checked against `size`; negative counts from
/// the end.
FailureOr<int64_t> checkedIndex(Operation *op, const RefTensor &indices,
                                int64_t i, int64_t size) {
  int64_t k = indices.ints[i];
  if (k < -size || k >= size)
    return op->emitError("reference evaluator: index ")
           << k << " (indices element " << i << ") is out of range for size "
           << size;
  return k < 0 ? k + size : k;
}

LogicalResult gatherKernel(GatherOp op, Operands in,
                           std::vector<RefTensor> &out) {
  const RefTensor &data = *in[0], &indices = *in[1];
  RefTensor r = makeResult(op.getResult());
  int64_t axis = op.getAxis(), size = data.shape[axis];
  int64_t inner = product(data.shape, axis + 1, data.shape.size());
  int64_t count = indices.numElements();
  int64_t outer = product(data.shape, 0, axis);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t n = 0; n < count; ++n) {
      auto k = checkedIndex(op, indices, n, op.getIndexBound());
      if (failed(k))
        return failure();
      for (int64_t j = 0; j < inner; ++j)
        r.copyElement((o * count + n) * inner + j, data,
                      (o * size + *k) * inner + j);
    }
  out.push_back(std::move(r));
  return success();
}

LogicalResult gatherElementsKernel(GatherElementsOp op, Operands in,
                                   std::vector<RefTensor> &out) {
  const RefTensor &data = *in[0], &indices = *in[1];
  RefTensor r = makeResult(op.getResult());
  int64_t axis = op.getAxis();
  std::vector<int64_t> dataStrides = stridesOf(data.shape);
  for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
    auto k = checkedIndex(op, indices, i, data.shape[axis]);
    if (failed(k))
      return failure();
    int64_t rem = i, src = 0;
    for (int64_t d = r.rank() - 1; d >= 0; --d) {
      int64_t coord = d == axis ? *k : rem % r.shape[d];
      src += coord * dataStrides[d];
      rem /= r.shape[d];
    }
    r.copyElement(i, data, src);
  }
  out.push_back(std::move(r));
  return success();
}

} // namespace

void registerShapeKernels(KernelTable &table) {
  addKernel<ConstantOp>(table, constantKernel);
  addKernel<IotaOp>(table, iotaKernel);
  addKernel<ReshapeOp>(table, reshapeKernel);
  addKernel<TransposeOp>(table, transposeKernel);
  addKernel<BroadcastToOp>(table, broadcastKernel);
  addKernel<SliceOp>(table, sliceKernel);
  addKernel<ConcatOp>(table, concatKernel);
  addKernel<SplitOp>(table, splitKernel);
  addKernel<GatherOp>(table, gatherKernel);
  addKernel<GatherElementsOp>(table, gatherElementsKernel);
}

} // namespace llmc
