//===- OnnxIndexOps.cpp - Concat, Slice, Gather, Split and sequences ------===//
//
// Ops that select or join parts of tensors. They evaluate on constants (the
// Gather/Slice/Concat of shape arithmetic) and otherwise map onto llmc.concat,
// llmc.slice, llmc.gather, llmc.gather_elements and llmc.split. ONNX
// sequences only appear as SplitToSequence -> SequenceAt in exporter output;
// the importer keeps a sequence as a list of values, so no sequence reaches
// the IR.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxConstants.h"
#include "frontends/onnx/OnnxGraph.h"
#include "frontends/onnx/onnx.pb.h"

#include "dialects/llmc/LlmcOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
namespace ll = mlir::llmc;

namespace llmc::onnximport {

static LogicalResult concatOp(OnnxNode &n) {
  if (n.numInputs() == 0)
    return n.emitError() << "needs at least one input";
  SmallVector<int64_t> first = n.shape(0);
  auto axis = n.normalizeAxis(n.getInt("axis", 0), first.size());
  if (failed(axis))
    return failure();
  SmallVector<const TensorData *> parts;
  SmallVector<int64_t> shape = first;
  shape[*axis] = 0;
  for (unsigned i = 0; i < n.numInputs(); ++i) {
    SmallVector<int64_t> s = n.shape(i);
    if (s.size() != first.size())
      return n.emitError() << "input " << i << " has rank " << s.size()
                           << ", input 0 has rank " << first.size();
    for (size_t d = 0; d < s.size(); ++d)
      if (int64_t(d) != *axis && s[d] != first[d] &&
          !ShapedType::isDynamic(s[d]) && !ShapedType::isDynamic(first[d]))
        return n.emitError() << "input " << i << " has size " << s[d]
                             << " in dim " << d << ", input 0 has "
                             << first[d];
    shape[*axis] = ShapedType::isDynamic(s[*axis]) ||
                           ShapedType::isDynamic(shape[*axis])
                       ? ShapedType::kDynamic
                       : shape[*axis] + s[*axis];
    parts.push_back(n.constant(i));
  }
  if (llvm::all_of(parts, [](auto *p) { return p; }) && n.canFold(shape)) {
    n.setOutput(0, evalConcat(parts, *axis));
    return success();
  }
  SmallVector<Value> operands;
  for (unsigned i = 0; i < n.numInputs(); ++i) {
    // Empty pieces (a shape [0] tensor) contribute nothing.
    if (n.shape(i)[*axis] == 0)
      continue;
    auto v = n.value(i);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  if (operands.size() == 1) {
    n.setOutput(0, operands[0]);
    return success();
  }
  auto r = n.create<ll::ConcatOp>(
      operands, {n.b.getNamedAttr("axis", n.b.getI64IntegerAttr(*axis))});
  if (failed(r))
    return failure();
  n.setOutput(0, *r);
  return success();
}

/// ONNX Slice: starts, ends, axes and steps are inputs (opset 10+), known at
/// import time; bounds clamp as the spec says.
static LogicalResult sliceOp(OnnxNode &n) {
  auto starts = n.requireConstant(1, "starts");
  auto ends = failed(starts) ? starts : n.requireConstant(2, "ends");
  if (failed(ends))
    return failure();
  SmallVector<int64_t> in = n.shape(0);
  int64_t rank = in.size();
  std::vector<int64_t> s = (*starts)->toInts(), e = (*ends)->toInts(), axes,
                       steps(s.size(), 1);
  if (n.hasInput(3)) {
    auto a = n.requireConstant(3, "axes");
    if (failed(a))
      return failure();
    axes = (*a)->toInts();
  } else {
    for (size_t i = 0; i < s.size(); ++i)
      axes.push_back(i);
  }
  if (n.hasInput(4)) {
    auto st = n.requireConstant(4, "steps");
    if (failed(st))
      return failure();
    steps = (*st)->toInts();
  }
  if (e.size() != s.size() || axes.size() != s.size() ||
      steps.size() != s.size())
    return n.emitError() << "starts, ends, axes and steps differ in length";
  std::vector<int64_t> start(rank, 0), step(rank, 1), count(in.begin(),
                                                           in.end());
  bool negativeStep = false;
  for (size_t i = 0; i < s.size(); ++i) {
    auto axis = n.normalizeAxis(axes[i], rank);
    if (failed(axis))
      return failure();
    if (steps[i] == 0)
      return n.emitError() << "has step 0";
    if (ShapedType::isDynamic(in[*axis]))
      return n.requireStaticShape(0, "Slice");
    SliceBounds b = sliceBounds(s[i], e[i], steps[i], in[*axis]);
    start[*axis] = b.start;
    step[*axis] = b.step;
    count[*axis] = b.count;
    negativeStep |= b.step < 0;
  }
  if (const TensorData *x = n.constant(0); x && n.canFold(count)) {
    n.setOutput(0, evalSlice(*x, start, step, count));
    return success();
  }
  if (negativeStep)
    return n.emitError() << "llmc slices run-time values with positive "
                            "steps only";
  auto x = n.value(0);
  if (failed(x))
    return failure();
  std::vector<int64_t> limit(rank);
  for (int64_t d = 0; d < rank; ++d)
    limit[d] = count[d] ? start[d] + (count[d] - 1) * step[d] + 1 : start[d];
  auto r = n.create<ll::SliceOp>(
      {*x}, {n.b.getNamedAttr("starts", n.b.getDenseI64ArrayAttr(start)),
             n.b.getNamedAttr("limits", n.b.getDenseI64ArrayAttr(limit)),
             n.b.getNamedAttr("strides", n.b.getDenseI64ArrayAttr(step))});
  if (failed(r))
    return failure();
  n.setOutput(0, *r);
  return success();
}

static LogicalResult gatherOp(OnnxNode &n) {
  SmallVector<int64_t> ds = n.shape(0), is = n.shape(1);
  auto axis = n.normalizeAxis(n.getInt("axis", 0), ds.size());
  if (failed(axis))
    return failure();
  const TensorData *data = n.constant(0), *indices = n.constant(1);
  SmallVector<int64_t> shape(ds.begin(), ds.begin() + *axis);
  shape.append(is.begin(), is.end());
  shape.append(ds.begin() + *axis + 1, ds.end());
  if (data && indices && n.canFold(shape)) {
    auto r = evalGather(*data, *indices, *axis);
    if (!r)
      return n.evalError(r.takeError());
    n.setOutput(0, std::move(*r));
    return success();
  }
  auto dv = n.value(0);
  if (failed(dv))
    return failure();
  Value iv;
  if (indices && !ShapedType::isDynamic(ds[*axis])) {
    // Known indices may count from the end; llmc.gather's may not.
    TensorData norm = *indices;
    for (int64_t i = 0, e = norm.numElements(); i < e; ++i) {
      int64_t v = norm.getInt(i);
      if (v < -ds[*axis] || v >= ds[*axis])
        return n.emitError() << "index " << v << " is out of range for dim "
                             << *axis << " of size " << ds[*axis];
      norm.setInt(i, v < 0 ? v + ds[*axis] : v);
    }
    auto c = n.constantValue(norm);
    if (failed(c))
      return failure();
    iv = *c;
  } else {
    auto v = n.value(1);
    if (failed(v))
      return failure();
    iv = *v;
  }
  auto r = n.create<ll::GatherOp>(
      {*dv, iv}, {n.b.getNamedAttr("axis", n.b.getI64IntegerAttr(*axis))});
  if (failed(r))
    return failure();
  n.setOutput(0, *r);
  return success();
}

static LogicalResult gatherElementsOp(OnnxNode &n) {
  auto axis = n.normalizeAxis(n.getInt("axis", 0), n.rank(0));
  if (failed(axis))
    return failure();
  const TensorData *data0 = n.constant(0), *idx = n.constant(1);
  if (data0 && idx && n.canFold(idx->shape())) {
    auto r = evalGatherElements(*data0, *idx, *axis);
    if (!r)
      return n.evalError(r.takeError());
    n.setOutput(0, std::move(*r));
    return success();
  }
  auto data = n.value(0);
  auto indices = failed(data) ? data : n.value(1);
  if (failed(indices))
    return failure();
  auto r = n.create<ll::GatherElementsOp>(
      {*data, *indices},
      {n.b.getNamedAttr("axis", n.b.getI64IntegerAttr(*axis))});
  if (failed(r))
    return failure();
  n.setOutput(0, *r);
  return success();
}

/// Cuts input 0 along `axis` into `sizes`; one ImportValue per piece.
static FailureOr<SmallVector<ImportValue>>
splitPieces(OnnxNode &n, int64_t axis, llvm::ArrayRef<int64_t> sizes) {
  SmallVector<int64_t> in = n.shape(0);
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) {
      n.emitError() << "has negative split size " << s;
      return failure();
    }
    total += s;
  }
  if (total != in[axis]) {
    n.emitError() << "split sizes sum to " << total << ", but dim " << axis
                  << " has size " << in[axis];
    return failure();
  }
  SmallVector<ImportValue> pieces;
  if (const TensorData *x = n.constant(0); x && n.canFold(x->shape())) {
    std::vector<int64_t> start(in.size(), 0), step(in.size(), 1),
        count(in.begin(), in.end());
    for (int64_t s : sizes) {
      count[axis] = s;
      pieces.push_back(ImportValue::of(evalSlice(*x, start, step, count)));
      start[axis] += s;
    }
    return pieces;
  }
  auto x = n.value(0);
  if (failed(x))
    return failure();
  auto op = n.createOp<ll::SplitOp>(
      {*x}, {n.b.getNamedAttr("axis", n.b.getI64IntegerAttr(axis)),
             n.b.getNamedAttr("sizes", n.b.getDenseI64ArrayAttr(sizes))});
  if (failed(op))
    return failure();
  for (Value v : (*op)->getResults())
    pieces.push_back(ImportValue::of(v));
  return pieces;
}

/// `count` pieces of ceil(dim / count), the last one smaller (opset 18).
static std::vector<int64_t> evenSizes(int64_t dim, int64_t count) {
  int64_t chunk = (dim + count - 1) / count;
  std::vector<int64_t> sizes;
  for (int64_t left = dim; left > 0; left -= chunk)
    sizes.push_back(std::min(chunk, left));
  return sizes;
}

static LogicalResult splitOp(OnnxNode &n) {
  SmallVector<int64_t> in = n.shape(0);
  auto axis = n.normalizeAxis(n.getInt("axis", 0), in.size());
  if (failed(axis))
    return failure();
  if (ShapedType::isDynamic(in[*axis]))
    return n.requireStaticShape(0, "Split");
  std::vector<int64_t> sizes;
  if (n.hasInput(1)) {
    auto t = n.requireConstant(1, "split sizes");
    if (failed(t))
      return failure();
    sizes = (*t)->toInts();
  } else if (auto s = n.getInts("split")) {
    sizes = *s;
  } else {
    int64_t parts = n.getInt("num_outputs", n.numOutputs());
    if (parts < 1)
      return n.emitError() << "needs num_outputs >= 1";
    sizes = evenSizes(in[*axis], parts);
  }
  if (sizes.size() != n.numOutputs())
    return n.emitError() << "makes " << sizes.size() << " pieces for "
                         << n.numOutputs() << " outputs";
  auto pieces = splitPieces(n, *axis, sizes);
  if (failed(pieces))
    return failure();
  for (auto [i, p] : llvm::enumerate(*pieces))
    n.setOutput(i, p);
  return success();
}

static LogicalResult splitToSequenceOp(OnnxNode &n) {
  SmallVector<int64_t> in = n.shape(0);
  auto axis = n.normalizeAxis(n.getInt("axis", 0), in.size());
  if (failed(axis))
    return failure();
  if (ShapedType::isDynamic(in[*axis]))
    return n.requireStaticShape(0, "SplitToSequence");
  std::vector<int64_t> sizes;
  bool dropAxis = false;
  if (n.hasInput(1)) {
    auto t = n.requireConstant(1, "split sizes");
    if (failed(t))
      return failure();
    if ((*t)->rank() == 0) {
      int64_t chunk = (*t)->getInt(0);
      if (chunk < 1)
        return n.emitError() << "has split size " << chunk;
      for (int64_t left = in[*axis]; left > 0; left -= chunk)
        sizes.push_back(std::min(chunk, left));
    } else {
      sizes = (*t)->toInts();
    }
  } else {
    sizes.assign(in[*axis], 1);
    dropAxis = n.getInt("keepdims", 1) == 0;
  }
  auto pieces = splitPieces(n, *axis, sizes);
  if (failed(pieces))
    return failure();
  ImportValue seq;
  seq.sequence = std::make_shared<std::vector<ImportValue>>();
  for (ImportValue &p : *pieces) {
    if (dropAxis) {
      std::vector<int64_t> shape(in.begin(), in.end());
      shape.erase(shape.begin() + *axis);
      if (p.isConstant()) {
        p = ImportValue::of(p.constant->reshaped(shape));
      } else {
        p = ImportValue::of(n.reshape(p.value, shape));
      }
    }
    seq.sequence->push_back(p);
  }
  n.setOutput(0, std::move(seq));
  return success();
}

static LogicalResult sequenceAtOp(OnnxNode &n) {
  const ImportValue &seq = n.input(0);
  if (!seq.isSequence())
    return n.emitError() << "input 0 is not a sequence";
  auto pos = n.requireScalar(1, "position");
  if (failed(pos))
    return failure();
  int64_t size = seq.sequence->size(), i = (*pos)->getInt(0);
  if (i < -size || i >= size)
    return n.emitError() << "position " << i
                         << " is out of range for a sequence of " << size;
  n.setOutput(0, (*seq.sequence)[i < 0 ? i + size : i]);
  return success();
}

/// GatherND (batch_dims 0): the first k dims of data are indexed by the
/// last dim of indices. As a Gather on data flattened to
/// [prod(dims[:k]), dims[k:]...] at linear = sum(indices * strides).
static LogicalResult gatherNDOp(OnnxNode &n) {
  if (n.getInt("batch_dims", 0) != 0)
    return n.emitError() << "llmc imports GatherND with batch_dims 0 only";
  if (failed(n.requireStaticShape(0, "GatherND")) ||
      failed(n.requireStaticShape(1, "GatherND")))
    return failure();
  SmallVector<int64_t> ds = n.shape(0), is = n.shape(1);
  int64_t k = is.empty() ? 0 : is.back();
  if (is.empty() || k < 1 || k > int64_t(ds.size()))
    return n.emitError() << "indices' last dim must be in [1, data rank]";
  std::vector<int64_t> strides(k, 1);
  for (int64_t j = k - 2; j >= 0; --j)
    strides[j] = strides[j + 1] * ds[j + 1];
  SmallVector<int64_t> outIdx(is.begin(), is.end() - 1);
  SmallVector<int64_t> flat = {shapeElementCount(llvm::ArrayRef(ds).take_front(k))};
  flat.append(ds.begin() + k, ds.end());
  Value linear;
  if (const TensorData *idx = n.constant(1)) {
    TensorData lin(DType::Int64, std::vector<int64_t>(outIdx.begin(),
                                                      outIdx.end()));
    for (int64_t i = 0, e = lin.numElements(); i < e; ++i) {
      int64_t v = 0;
      for (int64_t j = 0; j < k; ++j) {
        int64_t x = idx->getInt(i * k + j);
        if (x < -ds[j] || x >= ds[j])
          return n.emitError() << "index " << x << " is out of range for dim "
                               << j << " of size " << ds[j];
        v += (x < 0 ? x + ds[j] : x) * strides[j];
      }
      lin.setInt(i, v);
    }
    auto c = n.constantValue(lin);
    if (failed(c))
      return failure();
    linear = *c;
  } else {
    auto iv = n.value(1);
    if (failed(iv))
      return failure();
    Type it = cast<RankedTensorType>(iv->getType()).getElementType();
    auto st = n.constantValue(
        evalCast(TensorData::fromInts(DType::Int64, {k}, strides), dtypeOf(it)));
    if (failed(st))
      return failure();
    auto prod = n.create<ll::MulOp>({*iv, *st});
    if (failed(prod))
      return failure();
    auto sum = n.create<ll::ReduceSumOp>(
        {*prod}, {n.b.getNamedAttr(
                     "axes", n.b.getDenseI64ArrayAttr({int64_t(is.size()) - 1}))});
    if (failed(sum))
      return failure();
    linear = *sum;
  }
  auto data = n.value(0);
  if (failed(data))
    return failure();
  auto r = n.create<ll::GatherOp>(
      {n.reshape(*data, flat), linear},
      {n.b.getNamedAttr("axis", n.b.getI64IntegerAttr(0))});
  if (failed(r))
    return failure();
  n.setOutput(0, *r);
  return success();
}

/// Pad in constant mode: per axis, concat(fill[begin], x, fill[end]);
/// negative pads crop. HF causal LMs pad the labels with -100 this way.
static LogicalResult padOp(OnnxNode &n) {
  std::string mode = n.getString("mode", "constant");
  if (mode != "constant")
    return n.emitError() << "has mode '" << mode
                         << "'; llmc imports constant padding only";
  auto pads = n.requireConstant(1, "pads");
  if (failed(pads) || failed(n.requireStaticShape(0, "Pad")))
    return failure();
  SmallVector<int64_t> in = n.shape(0);
  int64_t rank = in.size();
  std::vector<int64_t> p = (*pads)->toInts(), axes;
  if (n.hasInput(3)) {
    auto a = n.requireConstant(3, "axes");
    if (failed(a))
      return failure();
    axes = (*a)->toInts();
  } else {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  if (p.size() != 2 * axes.size())
    return n.emitError() << "has " << p.size() << " pads for "
                         << axes.size() << " axes";
  double fill = 0;
  if (n.hasInput(2)) {
    auto c = n.requireScalar(2, "constant value");
    if (failed(c))
      return failure();
    fill = (*c)->getDouble(0);
  }
  ImportValue x = n.input(0);
  std::vector<int64_t> shape(in.begin(), in.end());
  for (size_t i = 0; i < axes.size(); ++i) {
    auto axis = n.normalizeAxis(axes[i], rank);
    if (failed(axis))
      return failure();
    int64_t before = p[i], after = p[i + axes.size()];
    if (before == 0 && after == 0)
      continue;
    // Crop first (negative pads), then add fill blocks.
    std::vector<int64_t> start(rank, 0), step(rank, 1), count = shape;
    start[*axis] = std::max<int64_t>(-before, 0);
    count[*axis] = shape[*axis] - start[*axis] - std::max<int64_t>(-after, 0);
    if (count[*axis] < 0)
      return n.emitError() << "crops more than dim " << *axis << " holds";
    std::vector<int64_t> lo = count, hi = count;
    lo[*axis] = std::max<int64_t>(before, 0);
    hi[*axis] = std::max<int64_t>(after, 0);
    std::vector<int64_t> out = count;
    out[*axis] += lo[*axis] + hi[*axis];
    DType type = n.dtype(0);
    if (x.isConstant() && n.canFold(out)) {
      TensorData body = evalSlice(*x.constant, start, step, count);
      TensorData a = evalBroadcastTo(TensorData::fromDoubles(type, {}, {fill}), lo);
      TensorData b = evalBroadcastTo(TensorData::fromDoubles(type, {}, {fill}), hi);
      x = ImportValue::of(evalConcat({&a, &body, &b}, *axis));
    } else {
      auto v = n.graph.materialize(x, n.loc, n.inputName(0));
      if (failed(v))
        return failure();
      Value body = *v;
      if (count != shape) {
        std::vector<int64_t> limit(rank);
        for (int64_t d = 0; d < rank; ++d)
          limit[d] = start[d] + count[d];
        auto s = n.create<ll::SliceOp>(
            {body}, {n.b.getNamedAttr("starts", n.b.getDenseI64ArrayAttr(start)),
                     n.b.getNamedAttr("limits", n.b.getDenseI64ArrayAttr(limit)),
                     n.b.getNamedAttr("strides", n.b.getDenseI64ArrayAttr(step))});
        if (failed(s))
          return failure();
        body = *s;
      }
      auto type = cast<RankedTensorType>(body.getType());
      SmallVector<Value> parts;
      if (lo[*axis])
        parts.push_back(n.splat(type.clone(lo), fill));
      parts.push_back(body);
      if (hi[*axis])
        parts.push_back(n.splat(type.clone(hi), fill));
      Value joined = body;
      if (parts.size() > 1) {
        auto c = n.create<ll::ConcatOp>(
            parts, {n.b.getNamedAttr("axis", n.b.getI64IntegerAttr(*axis))});
        if (failed(c))
          return failure();
        joined = *c;
      }
      x = ImportValue::of(joined);
    }
    shape = out;
  }
  n.setOutput(0, std::move(x));
  return success();
}

void registerIndexOps(OpRegistry &r) {
  r["GatherND"] = gatherNDOp;
  r["Pad"] = padOp;
  r["Concat"] = concatOp;
  r["Slice"] = sliceOp;
  r["Gather"] = gatherOp;
  r["GatherElements"] = gatherElementsOp;
  r["Split"] = splitOp;
  r["SplitToSequence"] = splitToSequenceOp;
  r["SequenceAt"] = sequenceAtOp;
}

} // namespace llmc::onnximport
