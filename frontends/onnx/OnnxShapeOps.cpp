//===- OnnxShapeOps.cpp - Shapes, constants and reshapes ------------------===//
//
// The ops exporters use to compute shapes at run time (Shape, Size,
// ConstantOfShape, Range, Trilu) and the ops that consume a shape tensor
// (Reshape, Expand, Squeeze, Unsqueeze). Shape tensors must be known at
// import time; the ops that produce them evaluate on constants, so that a
// Shape -> Gather -> Concat -> Reshape chain ends in an llmc.reshape with a
// static result type and nothing else.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxConstants.h"
#include "frontends/onnx/OnnxGraph.h"
#include "frontends/onnx/OnnxSizes.h"
#include "frontends/onnx/onnx.pb.h"

#include "dialects/llmc/LlmcOps.h"
#include "runtime/CheckedSize.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
namespace ll = mlir::llmc;

namespace llmc::onnximport {

/// Output 0 is input 0 reshaped to `shape` (a constant stays one).
static LogicalResult setReshaped(OnnxNode &n, llvm::ArrayRef<int64_t> shape) {
  if (const TensorData *x = n.constant(0); x && n.canFold(shape)) {
    n.setOutput(0, x->reshaped(shape.vec()));
    return success();
  }
  auto x = n.value(0);
  if (failed(x))
    return failure();
  n.setOutput(0, n.reshape(*x, shape));
  return success();
}

static LogicalResult identityOp(OnnxNode &n) {
  n.setOutput(0, n.input(0));
  return success();
}

static LogicalResult constantOp(OnnxNode &n) {
  if (n.proto.attribute_size() != 1)
    return n.emitError() << "needs exactly one value attribute";
  const onnx::AttributeProto &a = n.proto.attribute(0);
  const std::string &kind = a.name();
  if (kind == "value") {
    auto t = decodeTensor(a.t(), n.graph.baseDir, "Constant value");
    if (!t)
      return n.evalError(t.takeError());
    n.setOutput(0, std::move(*t));
  } else if (kind == "value_float") {
    n.setOutput(0, TensorData::fromDoubles(DType::Float, {}, {a.f()}));
  } else if (kind == "value_floats") {
    std::vector<double> v(a.floats().begin(), a.floats().end());
    n.setOutput(0, TensorData::fromDoubles(DType::Float,
                                           {int64_t(v.size())}, v));
  } else if (kind == "value_int") {
    n.setOutput(0, TensorData::scalarInt(DType::Int64, a.i()));
  } else if (kind == "value_ints") {
    std::vector<int64_t> v(a.ints().begin(), a.ints().end());
    n.setOutput(0, TensorData::fromInts(DType::Int64, {int64_t(v.size())}, v));
  } else {
    return n.emitError() << "has a '" << kind
                         << "' value, which llmc cannot import (it takes "
                            "tensor, float and int values)";
  }
  return success();
}

static LogicalResult shapeOp(OnnxNode &n) {
  SmallVector<int64_t> shape = n.shape(0);
  int64_t rank = shape.size();
  // Shape's start/end clamp like Slice bounds (opset 15).
  SliceBounds bounds =
      sliceBounds(n.getInt("start", 0), n.getInt("end", rank), 1, rank);
  std::vector<int64_t> dims(shape.begin() + bounds.start,
                            shape.begin() + bounds.start + bounds.count);
  if (llvm::any_of(dims, ShapedType::isDynamic))
    return n.requireStaticShape(0, "Shape");
  n.setOutput(0, TensorData::fromInts(DType::Int64, {int64_t(dims.size())},
                                      dims));
  return success();
}

static LogicalResult sizeOp(OnnxNode &n) {
  if (failed(n.requireStaticShape(0, "Size")))
    return failure();
  n.setOutput(0, TensorData::scalarInt(DType::Int64,
                                       shapeElementCount(n.shape(0))));
  return success();
}

/// ONNX Reshape: 0 copies the input dim (unless allowzero), -1 is inferred.
static LogicalResult reshapeOp(OnnxNode &n) {
  auto target = n.requireConstant(1, "target shape");
  if (failed(target))
    return failure();
  std::vector<int64_t> shape = (*target)->toInts();
  SmallVector<int64_t> in = n.shape(0);
  bool allowZero = n.getInt("allowzero", 0) != 0;
  bool needsInput = llvm::is_contained(shape, -1) ||
                    (!allowZero && llvm::is_contained(shape, 0));
  if (needsInput && failed(n.requireStaticShape(0, "Reshape with 0 or -1")))
    return failure();
  int64_t inferred = -1, known = 1;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (d == 0 && !allowZero) {
      if (i >= in.size())
        return n.emitError() << "target dim " << i
                             << " is 0 (copy the input dim), but the input "
                                "has rank "
                             << in.size();
      d = in[i];
    }
    if (d == -1) {
      if (inferred >= 0)
        return n.emitError() << "target shape has more than one -1";
      inferred = i;
      continue;
    }
    if (d < 0)
      return n.emitError() << "target shape has dim " << d;
    known = ::llmc::elementCount({known, d}).value(); // checked below
  }
  // Check the known dims before any product can wrap: [5,
  // 3689348814741910324] has 4 elements modulo 2^64.
  std::vector<int64_t> knownDims;
  for (auto [i, d] : llvm::enumerate(shape))
    if (int64_t(i) != inferred)
      knownDims.push_back(d == 0 && !allowZero ? in[i] : d);
  if (failed(checkResultSize(n, knownDims, dtypeSize(n.dtype(0)), "the target")))
    return failure();
  if (inferred >= 0) {
    int64_t total = shapeElementCount(in);
    if (known == 0 || total % known != 0)
      return n.emitError() << "cannot reshape " << total
                           << " elements with target "
                           << "dims whose product is " << known;
    shape[inferred] = total / known;
  }
  if (llvm::none_of(in, ShapedType::isDynamic) &&
      shapeElementCount(in) != shapeElementCount(shape))
    return n.emitError() << "cannot reshape " << shapeElementCount(in)
                         << " elements to " << shapeElementCount(shape);
  return setReshaped(n, shape);
}

static LogicalResult transposeOp(OnnxNode &n) {
  int64_t rank = n.rank(0);
  std::vector<int64_t> perm;
  if (auto p = n.getInts("perm")) {
    perm = *p;
  } else {
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  }
  std::vector<bool> seen(rank, false);
  if (int64_t(perm.size()) != rank)
    return n.emitError() << "perm has " << perm.size()
                         << " entries for rank " << rank;
  for (int64_t &p : perm) {
    auto axis = n.normalizeAxis(p, rank, "perm entry");
    if (failed(axis))
      return failure();
    if (seen[*axis])
      return n.emitError() << "perm lists dim " << *axis << " twice";
    seen[*axis] = true;
    p = *axis;
  }
  if (const TensorData *x = n.constant(0); x && n.canFold(x->shape())) {
    n.setOutput(0, evalTranspose(*x, perm));
    return success();
  }
  auto x = n.value(0);
  if (failed(x))
    return failure();
  auto r = n.create<ll::TransposeOp>(
      {*x}, {n.b.getNamedAttr("permutation", n.b.getDenseI64ArrayAttr(perm))});
  if (failed(r))
    return failure();
  n.setOutput(0, *r);
  return success();
}

/// The axes of Squeeze/Unsqueeze: input 1 from opset 13, an attribute before.
static FailureOr<std::vector<int64_t>> axesOf(OnnxNode &n, int64_t rank,
                                              bool required) {
  std::vector<int64_t> axes;
  if (n.hasInput(1)) {
    auto t = n.requireConstant(1, "axes");
    if (failed(t))
      return failure();
    axes = (*t)->toInts();
  } else if (auto a = n.getInts("axes")) {
    axes = *a;
  } else if (required) {
    n.emitError() << "needs axes";
    return failure();
  }
  for (int64_t &a : axes) {
    auto axis = n.normalizeAxis(a, rank, "axis");
    if (failed(axis))
      return failure();
    a = *axis;
  }
  return axes;
}

static LogicalResult squeezeOp(OnnxNode &n) {
  SmallVector<int64_t> in = n.shape(0);
  auto axes = axesOf(n, in.size(), /*required=*/false);
  if (failed(axes))
    return failure();
  if (axes->empty() && failed(n.requireStaticShape(0, "Squeeze without axes")))
    return failure();
  std::vector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(in)) {
    bool listed = llvm::is_contained(*axes, int64_t(i));
    if (listed && d != 1 && !ShapedType::isDynamic(d))
      return n.emitError() << "cannot squeeze dim " << i << " of size " << d;
    if (listed || (axes->empty() && d == 1))
      continue;
    shape.push_back(d);
  }
  return setReshaped(n, shape);
}

static LogicalResult unsqueezeOp(OnnxNode &n) {
  SmallVector<int64_t> in = n.shape(0);
  std::vector<int64_t> raw;
  if (n.hasInput(1)) {
    auto t = n.requireConstant(1, "axes");
    if (failed(t))
      return failure();
    raw = (*t)->toInts();
  } else if (auto a = n.getInts("axes")) {
    raw = *a;
  } else {
    return n.emitError() << "needs axes";
  }
  int64_t outRank = in.size() + raw.size();
  std::vector<bool> inserted(outRank, false);
  for (int64_t a : raw) {
    auto axis = n.normalizeAxis(a, outRank, "axis");
    if (failed(axis))
      return failure();
    inserted[*axis] = true;
  }
  std::vector<int64_t> shape;
  size_t next = 0;
  for (int64_t i = 0; i < outRank; ++i)
    shape.push_back(inserted[i] ? 1 : in[next++]);
  return setReshaped(n, shape);
}

static LogicalResult flattenOp(OnnxNode &n) {
  if (failed(n.requireStaticShape(0, "Flatten")))
    return failure();
  SmallVector<int64_t> in = n.shape(0);
  // axis is in [-r, r]: a negative one counts from the end of the input's
  // r dims (-1 keeps the last dim apart), not of the r + 1 split points.
  int64_t rank = in.size(), axis = n.getInt("axis", 1);
  if (axis < -rank || axis > rank)
    return n.emitError() << "axis " << axis << " is out of range [" << -rank
                         << ", " << rank << "] for rank " << rank;
  if (axis < 0)
    axis += rank;
  std::vector<int64_t> shape = {
      shapeElementCount(llvm::ArrayRef(in).take_front(axis)),
      shapeElementCount(llvm::ArrayRef(in).drop_front(axis))};
  return setReshaped(n, shape);
}

/// Expand broadcasts both ways: the result is broadcast(input, shape).
static LogicalResult expandOp(OnnxNode &n) {
  auto target = n.requireConstant(1, "target shape");
  if (failed(target) || failed(n.requireStaticShape(0, "Expand")))
    return failure();
  SmallVector<int64_t> in = n.shape(0);
  std::vector<int64_t> dims = (*target)->toInts();
  if (llvm::any_of(dims, [](int64_t d) { return d < 0; }))
    return n.emitError() << "target shape has a negative dim";
  auto shape = broadcastStatic(in, dims);
  if (!shape)
    return n.emitError() << "cannot expand the input to the target shape";
  if (failed(checkResultSize(n, *shape, dtypeSize(n.dtype(0)), "the result")))
    return failure();
  if (const TensorData *x = n.constant(0); x && n.canFold(*shape)) {
    n.setOutput(0, evalBroadcastTo(*x, *shape));
    return success();
  }
  auto x = n.value(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  if (type.getShape() == llvm::ArrayRef(*shape)) {
    n.setOutput(0, *x);
    return success();
  }
  n.setOutput(0, n.b.create<ll::BroadcastToOp>(n.loc, type.clone(*shape), *x)
                     .getResult());
  return success();
}

static LogicalResult constantOfShapeOp(OnnxNode &n) {
  auto target = n.requireConstant(0, "shape");
  if (failed(target))
    return failure();
  std::vector<int64_t> shape = (*target)->toInts();
  if (llvm::any_of(shape, [](int64_t d) { return d < 0; }))
    return n.emitError() << "shape has a negative dim";
  TensorData fill = TensorData::fromDoubles(DType::Float, {}, {0.0});
  if (const onnx::AttributeProto *a = n.attr("value")) {
    auto t = decodeTensor(a->t(), n.graph.baseDir, "ConstantOfShape value");
    if (!t)
      return n.evalError(t.takeError());
    if (t->numElements() != 1)
      return n.emitError() << "value must have one element";
    fill = std::move(*t);
  }
  if (failed(checkResultSize(n, shape, dtypeSize(fill.dtype()), "the result")))
    return failure();
  if (n.canFold(shape)) {
    n.setOutput(0, evalBroadcastTo(fill.reshaped({}), shape));
    return success();
  }
  auto elt = llmcElementType(fill.dtype(), n.b.getContext());
  if (failed(elt))
    return n.emitError() << "fills with "
                         << dtypeName(static_cast<int32_t>(fill.dtype()))
                         << ", which llmc tensors cannot hold";
  n.setOutput(0, n.splat(RankedTensorType::get(shape, *elt),
                         fill.getDouble(0)));
  return success();
}

/// Range with bounds known at import: a constant, or llmc.iota when large.
static LogicalResult rangeOp(OnnxNode &n) {
  auto start = n.requireScalar(0, "start");
  auto limit = failed(start) ? start : n.requireScalar(1, "limit");
  auto delta = failed(limit) ? limit : n.requireScalar(2, "delta");
  if (failed(delta))
    return failure();
  const TensorData *s = *start, *l = *limit, *d = *delta;
  double count = std::ceil((l->getDouble(0) - s->getDouble(0)) /
                           d->getDouble(0));
  if (std::isnan(count) && d->getDouble(0) != 0)
    return n.emitError() << "start, limit and delta must be finite";
  // A count past 2^62 would be undefined as an int64: say how many
  // elements the range has instead.
  if (count > 4.6e18)
    return n.emitError() << "the range from " << s->getDouble(0) << " to "
                         << l->getDouble(0) << " by " << d->getDouble(0)
                         << " has about " << count
                         << " elements, more than a 64-bit count holds";
  if (d->getDouble(0) != 0 &&
      failed(checkResultSize(n, {count > 0 ? int64_t(count) : 0},
                         dtypeSize(s->dtype()), "the result")))
    return failure();
  if (d->getDouble(0) == 0 || n.canFold({count > 0 ? int64_t(count) : 0})) {
    auto r = evalRange(*s, *l, *d);
    if (!r)
      return n.evalError(r.takeError());
    n.setOutput(0, std::move(*r));
    return success();
  }
  auto elt = llmcElementType(s->dtype(), n.b.getContext());
  if (failed(elt))
    return n.emitError() << "has element type "
                         << dtypeName(static_cast<int32_t>(s->dtype()))
                         << ", which llmc tensors cannot hold";
  auto type = RankedTensorType::get({int64_t(count)}, *elt);
  n.setOutput(0, n.b.create<ll::IotaOp>(
                        n.loc, type, n.b.getI64IntegerAttr(0),
                        n.b.getF64FloatAttr(s->getDouble(0)),
                        n.b.getF64FloatAttr(d->getDouble(0)))
                     .getResult());
  return success();
}

/// Trilu keeps j - i <= k (lower) or j - i >= k (upper) of the last two dims.
/// On a run-time value: where(compare(iota_j - iota_i, k), x, 0).
static LogicalResult triluOp(OnnxNode &n) {
  int64_t k = 0;
  if (n.hasInput(1)) {
    auto kt = n.requireScalar(1, "diagonal offset k");
    if (failed(kt))
      return failure();
    k = (*kt)->getInt(0);
  }
  bool upper = n.getInt("upper", 1) != 0;
  if (n.rank(0) < 2)
    return n.emitError() << "needs a tensor of rank 2 or more";
  if (const TensorData *x = n.constant(0); x && n.canFold(x->shape())) {
    n.setOutput(0, evalTrilu(*x, k, upper));
    return success();
  }
  if (failed(n.requireStaticShape(0, "Trilu")))
    return failure();
  auto x = n.value(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  int64_t r = type.getRank();
  auto maskType = RankedTensorType::get(
      {type.getDimSize(r - 2), type.getDimSize(r - 1)}, n.b.getI64Type());
  Value rows = n.b.create<ll::IotaOp>(n.loc, maskType,
                                      n.b.getI64IntegerAttr(0),
                                      n.b.getF64FloatAttr(0),
                                      n.b.getF64FloatAttr(1));
  Value cols = n.b.create<ll::IotaOp>(n.loc, maskType,
                                      n.b.getI64IntegerAttr(1),
                                      n.b.getF64FloatAttr(0),
                                      n.b.getF64FloatAttr(1));
  auto diff = n.create<ll::SubOp>({cols, rows});
  if (failed(diff))
    return failure();
  auto pred = upper ? ll::ComparePredicate::ge : ll::ComparePredicate::le;
  auto keep = n.create<ll::CompareOp>(
      {*diff, n.scalar(n.b.getI64Type(), double(k))},
      {n.b.getNamedAttr("predicate",
                        ll::ComparePredicateAttr::get(n.b.getContext(), pred))});
  if (failed(keep))
    return failure();
  auto out = n.create<ll::WhereOp>(
      {*keep, *x, n.scalar(type.getElementType(), 0)});
  if (failed(out))
    return failure();
  n.setOutput(0, *out);
  return success();
}

void registerShapeOps(OpRegistry &r) {
  r["Identity"] = identityOp;
  r["Constant"] = constantOp;
  r["Shape"] = shapeOp;
  r["Size"] = sizeOp;
  r["Reshape"] = reshapeOp;
  r["Transpose"] = transposeOp;
  r["Squeeze"] = squeezeOp;
  r["Unsqueeze"] = unsqueezeOp;
  r["Flatten"] = flattenOp;
  r["Expand"] = expandOp;
  r["ConstantOfShape"] = constantOfShapeOp;
  r["Range"] = rangeOp;
  r["Trilu"] = triluOp;
  registerIndexOps(r);
}

} // namespace llmc::onnximport
