//===- LlmcGradOps.cpp - Verifiers and inference of backward ops ----------===//
//
// Backward ops check that their forward operands would verify for the
// forward op and that each cotangent has the shape of the value it is the
// cotangent of, so a malformed backward graph fails where it is built.
//
//===----------------------------------------------------------------------===//
#include "dialects/llmc/InferUtils.h"
#include "dialects/llmc/LlmcOps.h"

#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmc;

/// Checks that cotangent `grad` has `expected`'s type.
template <typename OpTy>
static LogicalResult checkGradType(std::optional<Location> loc, Value grad,
                                   Type expected, StringRef of) {
  if (grad.getType() == expected)
    return success();
  return inferError<OpTy>(loc, "grad has type ", grad.getType(), " but ", of,
                          " has type ", expected);
}

//===----------------------------------------------------------------------===//
// LayerNormGradOp, RmsNormGradOp
//===----------------------------------------------------------------------===//

/// Shared by both norms: dx, then dweight (with a weight), then dbias.
template <typename OpTy>
static LogicalResult inferNormGrad(std::optional<Location> loc, Value input,
                                   Value grad, Value weight, int64_t axisAttr,
                                   double epsilon, bool withBias,
                                   SmallVectorImpl<Type> &out) {
  auto x = rankedOf(input);
  auto axis = normAxis<OpTy>(loc, x, axisAttr);
  if (failed(axis) ||
      failed(checkNormParam<OpTy>(loc, x, *axis, weight, "weight")) ||
      failed(checkGradType<OpTy>(loc, grad, x, "input")))
    return failure();
  if (epsilon < 0)
    return inferError<OpTy>(loc, "epsilon must not be negative");
  out.push_back(x);
  Type paramType = x.clone(x.getShape().drop_front(*axis));
  if (weight)
    out.push_back(weight.getType());
  if (withBias)
    out.push_back(weight ? weight.getType() : paramType);
  return success();
}

LogicalResult LayerNormGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor a,
                                                SmallVectorImpl<Type> &out) {
  return inferNormGrad<LayerNormGradOp>(
      loc, a.getInput(), a.getGrad(), a.getWeight(), a.getAxis(),
      a.getEpsilon().convertToDouble(), a.getBiasGrad(), out);
}

LogicalResult RmsNormGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor a,
                                              SmallVectorImpl<Type> &out) {
  return inferNormGrad<RmsNormGradOp>(loc, a.getInput(), a.getGrad(),
                                      a.getWeight(), a.getAxis(),
                                      a.getEpsilon().convertToDouble(),
                                      /*withBias=*/false, out);
}

//===----------------------------------------------------------------------===//
// SoftmaxGradOp, LogSoftmaxGradOp
//===----------------------------------------------------------------------===//

template <typename OpTy> static LogicalResult verifySoftmaxGrad(OpTy op) {
  int64_t rank = op.getOutput().getType().getRank();
  if (rank == 0)
    return op.emitOpError("needs an operand of rank 1 or more");
  if (!normalizeAxis(op.getAxis(), rank))
    return op.emitOpError("axis ")
           << op.getAxis() << " is out of range for rank " << rank;
  return success();
}

LogicalResult SoftmaxGradOp::verify() { return verifySoftmaxGrad(*this); }
LogicalResult LogSoftmaxGradOp::verify() { return verifySoftmaxGrad(*this); }

//===----------------------------------------------------------------------===//
// AttentionLseOp, AttentionGradOp
//===----------------------------------------------------------------------===//

static double attentionScale(std::optional<APFloat> scale, Value query) {
  if (scale)
    return scale->convertToDouble();
  int64_t d = rankedOf(query).getDimSize(3);
  return 1.0 / std::sqrt(static_cast<double>(d));
}

/// [B, Hq, T] in f32 (f64 for f64 reference runs): the row statistics of
/// attention.
static RankedTensorType lseType(Value query, bool seqMajor,
                                std::optional<ArrayRef<int64_t>> qkvHeads) {
  auto q = rankedOf(query);
  Type element = q.getElementType().isF64()
                     ? Type(q.getElementType())
                     : Type(Float32Type::get(query.getContext()));
  SmallVector<int64_t> shape = attentionLogicalShape(q.getShape(), seqMajor);
  if (qkvHeads && !qkvHeads->empty())
    shape[1] = qkvHeads->front();
  shape.resize(3);
  return RankedTensorType::get(shape, element);
}

LogicalResult AttentionLseOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor a,
                                               SmallVectorImpl<Type> &out) {
  auto shape =
      inferAttentionShape(loc, getOperationName(), a.getQuery(), a.getKey(),
                          a.getValue(), a.getMask(), a.getScale(),
                          a.getSeqMajor(), qkvHeadsOrEmpty(a.getQkvHeads()));
  if (failed(shape))
    return failure();
  out.push_back(rankedOf(a.getQuery()).clone(*shape));
  out.push_back(lseType(a.getQuery(), a.getSeqMajor(), a.getQkvHeads()));
  return success();
}

double AttentionLseOp::getScaleOrDefault() {
  return attentionScale(getScale(), getQuery());
}

LogicalResult AttentionGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor a,
                                                SmallVectorImpl<Type> &out) {
  auto shape =
      inferAttentionShape(loc, getOperationName(), a.getQuery(), a.getKey(),
                          a.getValue(), a.getMask(), a.getScale(),
                          a.getSeqMajor(), qkvHeadsOrEmpty(a.getQkvHeads()));
  if (failed(shape))
    return failure();
  Type outType = rankedOf(a.getQuery()).clone(*shape);
  if (failed(checkGradType<AttentionGradOp>(loc, a.getOutput(), outType,
                                            "the attention result")) ||
      failed(checkGradType<AttentionGradOp>(loc, a.getGrad(), outType,
                                            "the attention result")))
    return failure();
  Type lse = lseType(a.getQuery(), a.getSeqMajor(), a.getQkvHeads());
  if (a.getLse().getType() != lse)
    return inferError<AttentionGradOp>(loc, "lse has type ",
                                       a.getLse().getType(), ", expected ",
                                       lse);
  // Packed: one gradient laid out as the packed q, k, v.
  if (a.getQkvHeads()) {
    out.push_back(a.getQuery().getType());
    return success();
  }
  out.push_back(a.getQuery().getType());
  out.push_back(a.getKey().getType());
  out.push_back(a.getValue().getType());
  return success();
}

double AttentionGradOp::getScaleOrDefault() {
  return attentionScale(getScale(), getQuery());
}

//===----------------------------------------------------------------------===//
// CrossEntropyGradOp
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyGradOp::inferReturnTypes(MLIRContext *,
                                                   std::optional<Location> loc,
                                                   Adaptor a,
                                                   SmallVectorImpl<Type> &out) {
  auto logits = rankedOf(a.getLogits());
  auto lossType = crossEntropyLossType<CrossEntropyGradOp>(
      loc, logits, rankedOf(a.getTargets()),
      a.getReduction() == LossReduction::none);
  if (failed(lossType))
    return failure();
  if (failed(checkGradType<CrossEntropyGradOp>(loc, a.getGrad(), *lossType,
                                               "the loss")))
    return failure();
  out.push_back(logits);
  return success();
}

int64_t CrossEntropyGradOp::getClassCount() {
  if (std::optional<int64_t> c = getClasses())
    return *c;
  return getLogits().getType().getShape().back();
}

LogicalResult CrossEntropyGradOp::verify() { return verifyClasses(*this); }

//===----------------------------------------------------------------------===//
// GatherGradOp, GatherElementsGradOp, SliceGradOp
//===----------------------------------------------------------------------===//

LogicalResult GatherGradOp::verify() {
  auto data = getResult().getType(), grad = getGrad().getType();
  auto idx = getIndices().getType();
  int64_t axis = getAxis();
  if (failed(verifyIndexBound(*this, getBound(), data, axis)))
    return failure();
  if (grad.getElementType() != data.getElementType())
    return emitOpError("grad element type ")
           << grad.getElementType() << " differs from the result's "
           << data.getElementType();
  if (axis < 0 || axis >= data.getRank())
    return emitOpError("axis ") << axis << " is out of range for a result of "
                                << "rank " << data.getRank();
  SmallVector<int64_t> expected(data.getShape().take_front(axis));
  llvm::append_range(expected, idx.getShape());
  llvm::append_range(expected, data.getShape().drop_front(axis + 1));
  bool ok = grad.getRank() == static_cast<int64_t>(expected.size());
  for (size_t i = 0; ok && i < expected.size(); ++i)
    ok = !dimsConflict(grad.getDimSize(i), expected[i]);
  if (!ok)
    return emitOpError("grad has shape ")
           << shapeToString(grad.getShape()) << " but gathering "
           << shapeToString(data.getShape()) << " at indices "
           << shapeToString(idx.getShape()) << " along axis " << axis
           << " yields " << shapeToString(expected);
  return success();
}

LogicalResult GatherElementsGradOp::verify() {
  auto data = getResult().getType(), grad = getGrad().getType();
  auto idx = getIndices().getType();
  int64_t axis = getAxis();
  if (grad.getElementType() != data.getElementType())
    return emitOpError("grad element type ")
           << grad.getElementType() << " differs from the result's "
           << data.getElementType();
  if (failed(verifyCompatibleShape(grad.getShape(), idx.getShape())))
    return emitOpError("grad ")
           << shapeToString(grad.getShape()) << " and indices "
           << shapeToString(idx.getShape()) << " must have one shape";
  if (idx.getRank() != data.getRank())
    return emitOpError("indices have rank ")
           << idx.getRank() << " but the result has rank " << data.getRank();
  if (axis < 0 || axis >= data.getRank())
    return emitOpError("axis ")
           << axis << " is out of range for rank " << data.getRank();
  for (int64_t d = 0; d < data.getRank(); ++d) {
    int64_t i = idx.getDimSize(d), r = data.getDimSize(d);
    if (d != axis && !ShapedType::isDynamic(i) && !ShapedType::isDynamic(r) &&
        i > r)
      return emitOpError("indices ")
             << shapeToString(idx.getShape()) << " exceed the result "
             << shapeToString(data.getShape()) << " in dim " << d;
  }
  return success();
}

LogicalResult SliceGradOp::verify() {
  auto data = getResult().getType(), grad = getGrad().getType();
  if (grad.getElementType() != data.getElementType())
    return emitOpError("grad element type ")
           << grad.getElementType() << " differs from the result's "
           << data.getElementType();
  // The forward slice of the result type must produce grad's type.
  int64_t rank = data.getRank();
  ArrayRef<int64_t> starts = getStarts(), limits = getLimits(),
                    strides = getStrides();
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(limits.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    return emitOpError("needs one start, limit and stride per dim: result "
                       "rank ")
           << rank << ", got " << starts.size() << "/" << limits.size() << "/"
           << strides.size();
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = data.getDimSize(d);
    if (strides[d] < 1)
      return emitOpError("stride ")
             << strides[d] << " in dim " << d << " must be at least 1";
    if (starts[d] < 0 || starts[d] > limits[d] ||
        (!ShapedType::isDynamic(size) && limits[d] > size))
      return emitOpError("window [")
             << starts[d] << ", " << limits[d] << ") in dim " << d
             << " is outside the result " << shapeToString(data.getShape());
    shape.push_back((limits[d] - starts[d] + strides[d] - 1) / strides[d]);
  }
  if (failed(verifyCompatibleShape(shape, grad.getShape())))
    return emitOpError("grad has shape ")
           << shapeToString(grad.getShape()) << " but the window has shape "
           << shapeToString(shape);
  return success();
}

//===----------------------------------------------------------------------===//
// AdamWUpdateOp
//===----------------------------------------------------------------------===//

LogicalResult AdamWUpdateOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor a,
                                              SmallVectorImpl<Type> &out) {
  Type p = a.getParam().getType();
  for (auto [name, v] : {std::pair<StringRef, Value>{"grad", a.getGrad()},
                         {"m", a.getM()},
                         {"v", a.getV()}})
    if (v.getType() != p)
      return inferError<AdamWUpdateOp>(loc, name, " has type ", v.getType(),
                                       " but param has type ", p);
  for (auto [name, value] :
       {std::pair<StringRef, double>{"beta1", a.getBeta1().convertToDouble()},
        {"beta2", a.getBeta2().convertToDouble()}})
    if (!(value >= 0 && value < 1))
      return inferError<AdamWUpdateOp>(loc, name, " = ", value,
                                       " must be in [0, 1)");
  if (!(a.getEpsilon().convertToDouble() > 0))
    return inferError<AdamWUpdateOp>(loc, "epsilon must be positive");
  out.append(3, p);
  return success();
}

//===----------------------------------------------------------------------===//
// MultiAdamWUpdateOp
//===----------------------------------------------------------------------===//

int64_t MultiAdamWUpdateOp::tensorOfOperand(unsigned i) {
  unsigned n = getNumTensors();
  return i < 4 * n ? static_cast<int64_t>(i % n) : -1;
}

/// A gradient read narrow: a bf16/f16 tensor of an f32 param's shape, which
/// the update widens exactly on load (llmc-batch-adamw reads through the
/// widening cast autodiff leaves after a bf16 weight gradient).
static bool narrowerGrad(Value grad, Type param) {
  auto g = dyn_cast<RankedTensorType>(grad.getType());
  auto p = dyn_cast<RankedTensorType>(param);
  if (!g || !p || g.getShape() != p.getShape())
    return false;
  auto ge = dyn_cast<FloatType>(g.getElementType());
  auto pe = dyn_cast<FloatType>(p.getElementType());
  return ge && pe && ge.getWidth() < pe.getWidth() &&
         (ge.isBF16() || ge.isF16()) && pe.isF32();
}

LogicalResult MultiAdamWUpdateOp::verify() {
  unsigned n = getNumTensors();
  if (n == 0)
    return emitOpError("needs at least one tensor");
  for (auto [name, size] :
       {std::pair<StringRef, size_t>{"grads", getGrads().size()},
        {"m", getMs().size()},
        {"v", getVs().size()},
        {"weight_decays", getWeightDecays().size()}})
    if (size != n)
      return emitOpError("has ") << n << " params but " << size << " " << name;
  if (getNumResults() != 3 * n)
    return emitOpError("has ") << getNumResults() << " results but needs "
                               << 3 * n << " (new params, m, v)";
  Type element = getElementTypeOrSelf(getParams()[0].getType());
  for (unsigned k = 0; k < n; ++k) {
    Type p = getParams()[k].getType();
    if (getElementTypeOrSelf(p) != element)
      return emitOpError("param ")
             << k << " has element type " << getElementTypeOrSelf(p)
             << " but param 0 has " << element
             << "; all tensors of one update share an element type";
    for (auto [name, v] : {std::pair<StringRef, Value>{"grad", getGrads()[k]},
                           {"m", getMs()[k]},
                           {"v", getVs()[k]},
                           {"new param", getNewParam(k)},
                           {"new m", getNewM(k)},
                           {"new v", getNewV(k)}})
      if (v.getType() != p && !(name == "grad" && narrowerGrad(v, p)))
        return emitOpError("tensor ")
               << k << ": " << name << " has type " << v.getType()
               << " but param has type " << p
               << (name == "grad" ? " (a grad may only be a narrower float "
                                    "of the param's shape)"
                                  : "");
  }
  if (Value scale = getScale()) {
    // The scale multiplies the gradient widened to the params' type.
    Type s = getElementTypeOrSelf(scale.getType());
    if (s != element)
      return emitOpError("scale has element type ")
             << s << " but the params have " << element;
  }
  for (auto [name, value] :
       {std::pair<StringRef, double>{"beta1", getBeta1().convertToDouble()},
        {"beta2", getBeta2().convertToDouble()}})
    if (!(value >= 0 && value < 1))
      return emitOpError(name) << " = " << value << " must be in [0, 1)";
  if (!(getEpsilon().convertToDouble() > 0))
    return emitOpError("epsilon must be positive");
  return success();
}

//===----------------------------------------------------------------------===//
// GlobalNormOp
//===----------------------------------------------------------------------===//

LogicalResult GlobalNormOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  bool f64 = llvm::any_of(getInputs(), [](Value v) {
    return getElementTypeOrSelf(v.getType()).isF64();
  });
  Type acc = getElementTypeOrSelf(getNorm().getType());
  if (acc.isF64() != f64)
    return emitOpError("result has element type ")
           << acc << " but must be " << (f64 ? "f64 (an input is f64)" : "f32");
  return success();
}
