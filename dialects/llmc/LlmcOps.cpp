//===- LlmcOps.cpp - Verifiers and type inference of the llmc ops ---------===//
//
// Elementwise and shape ops. The composite transformer ops are in
// LlmcNNOps.cpp, folders and canonicalizations in LlmcFolders.cpp.
//
//===----------------------------------------------------------------------===//
#include "dialects/llmc/LlmcOps.h"
#include "dialects/llmc/InferUtils.h"
#include "dialects/llmc/TensorSize.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::llmc;

//===----------------------------------------------------------------------===//
// Broadcasting elementwise ops
//===----------------------------------------------------------------------===//

/// Result type of a numpy-broadcasting op whose value operands share one
/// element type; `resultElement` is that type or i1 for comparisons.
template <typename OpTy>
static LogicalResult inferBroadcast(std::optional<Location> loc,
                                    ArrayRef<Value> operands,
                                    Type resultElement,
                                    SmallVectorImpl<Type> &inferred) {
  SmallVector<int64_t> shape;
  for (auto [i, v] : llvm::enumerate(operands)) {
    auto type = rankedOf(v);
    if (i == 0) {
      shape.assign(type.getShape().begin(), type.getShape().end());
      continue;
    }
    auto merged = broadcastShapes(shape, type.getShape());
    if (!merged)
      return inferError<OpTy>(loc, "operand shapes ", shapeToString(shape),
                              " and ", shapeToString(type.getShape()),
                              " are not broadcast-compatible");
    shape = std::move(*merged);
  }
  inferred.push_back(RankedTensorType::get(shape, resultElement));
  return success();
}

template <typename OpTy>
static LogicalResult inferBinary(std::optional<Location> loc, Value lhs,
                                 Value rhs, SmallVectorImpl<Type> &inferred) {
  Type le = rankedOf(lhs).getElementType(), re = rankedOf(rhs).getElementType();
  if (le != re)
    return inferError<OpTy>(loc, "operand element types differ: ", le,
                            " vs ", re, " (insert an llmc.cast)");
  return inferBroadcast<OpTy>(loc, {lhs, rhs}, le, inferred);
}

#define LLMC_BINARY_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> l, \
                                     Adaptor a, SmallVectorImpl<Type> &out) {  \
    return inferBinary<OP>(l, a.getLhs(), a.getRhs(), out);                    \
  }
LLMC_BINARY_INFER(AddOp)
LLMC_BINARY_INFER(SubOp)
LLMC_BINARY_INFER(MulOp)
LLMC_BINARY_INFER(DivOp)
LLMC_BINARY_INFER(PowOp)
LLMC_BINARY_INFER(MaxOp)
LLMC_BINARY_INFER(MinOp)
#undef LLMC_BINARY_INFER

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor a,
                                          SmallVectorImpl<Type> &out) {
  Type le = rankedOf(a.getLhs()).getElementType();
  Type re = rankedOf(a.getRhs()).getElementType();
  if (le != re)
    return inferError<CompareOp>(loc, "operand element types differ: ", le,
                                 " vs ", re, " (insert an llmc.cast)");
  return inferBroadcast<CompareOp>(loc, {a.getLhs(), a.getRhs()},
                                   IntegerType::get(ctx, 1), out);
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc, Adaptor a,
                                        SmallVectorImpl<Type> &out) {
  Type te = rankedOf(a.getOnTrue()).getElementType();
  Type fe = rankedOf(a.getOnFalse()).getElementType();
  if (te != fe)
    return inferError<WhereOp>(loc, "value element types differ: ", te,
                               " vs ", fe, " (insert an llmc.cast)");
  return inferBroadcast<WhereOp>(
      loc, {a.getCondition(), a.getOnTrue(), a.getOnFalse()}, te, out);
}

LogicalResult IsNanOp::inferReturnTypes(MLIRContext *ctx,
                                        std::optional<Location>, Adaptor a,
                                        SmallVectorImpl<Type> &out) {
  out.push_back(rankedOf(a.getInput()).clone(IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult CastOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (failed(verifyCompatibleShape(in.getShape(), out.getShape())))
    return emitOpError("changes the shape from ")
           << shapeToString(in.getShape()) << " to "
           << shapeToString(out.getShape()) << "; cast converts elements only";
  return success();
}

//===----------------------------------------------------------------------===//
// IotaOp
//===----------------------------------------------------------------------===//

LogicalResult IotaOp::verify() {
  int64_t rank = getResult().getType().getRank();
  if (getDimension() < 0 || getDimension() >= rank)
    return emitOpError("dimension ")
           << getDimension() << " is out of range for rank " << rank;
  if (getResult().getType().getShape()[getDimension()] == ShapedType::kDynamic)
    return emitOpError("needs a static size along dimension ")
           << getDimension();
  return success();
}

//===----------------------------------------------------------------------===//
// ReshapeOp, BroadcastToOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("changes the element type from ")
           << in.getElementType() << " to " << out.getElementType();
  // Compare checked counts: [5, 3689348814741910324] is 4 elements
  // modulo 2^64, the same as [2, 2].
  for (auto [what, type] : {std::pair{"input ", in}, std::pair{"result ", out}})
    if (std::string why = tensorTypeSizeError(type); !why.empty())
      return emitOpError(what) << why;
  auto a = staticElementCount(in.getShape());
  auto b = staticElementCount(out.getShape());
  if (a && b && *a != *b)
    return emitOpError("cannot reshape ")
           << shapeToString(in.getShape()) << " (" << *a << " elements) to "
           << shapeToString(out.getShape()) << " (" << *b << " elements)";
  return success();
}

LogicalResult BroadcastToOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("changes the element type from ")
           << in.getElementType() << " to " << out.getElementType();
  if (!isBroadcastableTo(in.getShape(), out.getShape()))
    return emitOpError("cannot broadcast ")
           << shapeToString(in.getShape()) << " to "
           << shapeToString(out.getShape())
           << ": each operand dim must equal the result dim or be 1";
  return success();
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor a,
                                            SmallVectorImpl<Type> &out) {
  auto type = rankedOf(a.getInput());
  ArrayRef<int64_t> perm = a.getPermutation();
  if (static_cast<int64_t>(perm.size()) != type.getRank())
    return inferError<TransposeOp>(loc, "permutation has ", perm.size(),
                                   " entries for an operand of rank ",
                                   type.getRank());
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= type.getRank() || seen[p])
      return inferError<TransposeOp>(
          loc, "permutation ", shapeToString(perm),
          " is not a permutation of 0..", type.getRank() - 1);
    seen[p] = true;
    shape.push_back(type.getDimSize(p));
  }
  out.push_back(type.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc, Adaptor a,
                                        SmallVectorImpl<Type> &out) {
  auto type = rankedOf(a.getInput());
  int64_t rank = type.getRank();
  ArrayRef<int64_t> starts = a.getStarts(), limits = a.getLimits(),
                    strides = a.getStrides();
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(limits.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    return inferError<SliceOp>(loc, "needs one start, limit and stride per "
                                    "dim: operand rank ",
                               rank, ", got ", starts.size(), "/",
                               limits.size(), "/", strides.size());
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = type.getDimSize(d);
    if (strides[d] < 1)
      return inferError<SliceOp>(loc, "stride ", strides[d], " in dim ", d,
                                 " must be at least 1");
    if (starts[d] < 0 || starts[d] > limits[d] ||
        (!ShapedType::isDynamic(size) && limits[d] > size))
      return inferError<SliceOp>(loc, "window [", starts[d], ", ", limits[d],
                                 ") in dim ", d, " is outside [0, ",
                                 ShapedType::isDynamic(size)
                                     ? std::string("?")
                                     : std::to_string(size),
                                 "]");
    shape.push_back((limits[d] - starts[d] + strides[d] - 1) / strides[d]);
  }
  out.push_back(type.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// ConcatOp, SplitOp
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor a,
                                         SmallVectorImpl<Type> &out) {
  ValueRange inputs = a.getInputs();
  if (inputs.empty())
    return inferError<ConcatOp>(loc, "needs at least one operand");
  auto first = rankedOf(inputs.front());
  int64_t rank = first.getRank(), axis = a.getAxis();
  if (axis < 0 || axis >= rank)
    return inferError<ConcatOp>(loc, "axis ", axis,
                                " is out of range for rank ", rank);
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, v] : llvm::enumerate(inputs.drop_front())) {
    auto type = rankedOf(v);
    if (type.getElementType() != first.getElementType() ||
        type.getRank() != rank)
      return inferError<ConcatOp>(loc, "operand ", i + 1, " has type ", type,
                                  ", incompatible with operand 0 of type ",
                                  first);
    for (int64_t d = 0; d < rank; ++d) {
      int64_t s = type.getDimSize(d);
      if (d == axis) {
        shape[d] = ShapedType::isDynamic(shape[d]) || ShapedType::isDynamic(s)
                       ? ShapedType::kDynamic
                       : shape[d] + s;
      } else if (!ShapedType::isDynamic(s) && !ShapedType::isDynamic(shape[d]) &&
                 s != shape[d]) {
        return inferError<ConcatOp>(loc, "operand ", i + 1, " has size ", s,
                                    " in dim ", d, " where operand 0 has ",
                                    shape[d]);
      } else if (ShapedType::isDynamic(shape[d])) {
        shape[d] = s;
      }
    }
  }
  out.push_back(first.clone(shape));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc, Adaptor a,
                                        SmallVectorImpl<Type> &out) {
  auto type = rankedOf(a.getInput());
  int64_t axis = a.getAxis();
  if (axis < 0 || axis >= type.getRank())
    return inferError<SplitOp>(loc, "axis ", axis,
                               " is out of range for rank ", type.getRank());
  int64_t total = 0;
  for (int64_t s : a.getSizes()) {
    if (s < 0)
      return inferError<SplitOp>(loc, "has negative size ", s);
    total += s;
  }
  int64_t dim = type.getDimSize(axis);
  if (!ShapedType::isDynamic(dim) && total != dim)
    return inferError<SplitOp>(loc, "sizes ", shapeToString(a.getSizes()),
                               " sum to ", total, " but dim ", axis, " has ",
                               dim);
  for (int64_t s : a.getSizes()) {
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] = s;
    out.push_back(type.clone(shape));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// GatherOp, GatherElementsOp
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor a,
                                         SmallVectorImpl<Type> &out) {
  auto data = rankedOf(a.getData()), idx = rankedOf(a.getIndices());
  int64_t axis = a.getAxis();
  if (axis < 0 || axis >= data.getRank())
    return inferError<GatherOp>(loc, "axis ", axis,
                                " is out of range for data of rank ",
                                data.getRank());
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, idx.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  out.push_back(data.clone(shape));
  return success();
}

LogicalResult GatherOp::verify() {
  return verifyIndexBound(*this, getBound(), getData().getType(), getAxis());
}

int64_t GatherOp::getIndexBound() {
  if (std::optional<int64_t> b = getBound())
    return *b;
  return getData().getType().getDimSize(getAxis());
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor a,
                                                 SmallVectorImpl<Type> &out) {
  auto data = rankedOf(a.getData()), idx = rankedOf(a.getIndices());
  int64_t axis = a.getAxis();
  if (idx.getRank() != data.getRank())
    return inferError<GatherElementsOp>(loc, "indices have rank ",
                                        idx.getRank(), " but data has rank ",
                                        data.getRank());
  if (axis < 0 || axis >= data.getRank())
    return inferError<GatherElementsOp>(loc, "axis ", axis,
                                        " is out of range for rank ",
                                        data.getRank());
  out.push_back(data.clone(idx.getShape()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

template <typename OpTy>
static LogicalResult inferReduce(std::optional<Location> loc,
                                 typename OpTy::Adaptor a,
                                 SmallVectorImpl<Type> &out) {
  auto type = rankedOf(a.getInput());
  int64_t rank = type.getRank();
  SmallVector<bool> reduced(rank, false);
  for (int64_t axis : a.getAxes()) {
    if (axis < 0 || axis >= rank)
      return inferError<OpTy>(loc, "axis ", axis,
                              " is out of range for rank ", rank);
    if (reduced[axis])
      return inferError<OpTy>(loc, "axis ", axis, " is listed twice");
    reduced[axis] = true;
  }
  if (a.getAxes().empty())
    return inferError<OpTy>(loc, "needs at least one axis");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d])
      shape.push_back(type.getDimSize(d));
    else if (a.getKeepdims())
      shape.push_back(1);
  }
  out.push_back(type.clone(shape));
  return success();
}

#define LLMC_REDUCE_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> l, \
                                     Adaptor a, SmallVectorImpl<Type> &out) {  \
    return inferReduce<OP>(l, a, out);                                         \
  }
LLMC_REDUCE_INFER(ReduceSumOp)
LLMC_REDUCE_INFER(ReduceMeanOp)
LLMC_REDUCE_INFER(ReduceMaxOp)
#undef LLMC_REDUCE_INFER

#define GET_OP_CLASSES
#include "dialects/llmc/LlmcOps.cpp.inc"
