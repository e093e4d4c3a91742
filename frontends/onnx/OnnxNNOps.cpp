//===- OnnxNNOps.cpp - MatMul, Gemm, norms, softmax, reductions, losses ---===//
//
// ONNX ops with a composite llmc counterpart map onto it directly
// (LayerNormalization -> llmc.layer_norm, Softmax -> llmc.softmax,
// SoftmaxCrossEntropyLoss -> llmc.cross_entropy). Everything else is
// imported in its decomposed form; raising decomposed patterns (GELU,
// attention, ...) to composite ops is a later pass, not the importer's job.
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

//===----------------------------------------------------------------------===//
// MatMul, Gemm
//===----------------------------------------------------------------------===//

/// numpy.matmul: a rank-1 lhs is a row [1, K] and a rank-1 rhs a column
/// [K, 1]; the inserted dims are dropped from the result again.
static LogicalResult matmulOp(OnnxNode &n) {
  auto a = n.value(0);
  auto b = failed(a) ? a : n.value(1);
  if (failed(b))
    return failure();
  auto at = cast<RankedTensorType>(a->getType());
  auto bt = cast<RankedTensorType>(b->getType());
  if (at.getRank() == 0 || bt.getRank() == 0)
    return n.emitError() << "needs operands of rank 1 or more";
  Value lhs = *a, rhs = *b;
  if (at.getRank() == 1)
    lhs = n.reshape(lhs, {1, at.getDimSize(0)});
  if (bt.getRank() == 1)
    rhs = n.reshape(rhs, {bt.getDimSize(0), 1});
  auto r = n.create<ll::MatmulOp>({lhs, rhs});
  if (failed(r))
    return failure();
  SmallVector<int64_t> shape(cast<RankedTensorType>(r->getType()).getShape());
  if (bt.getRank() == 1)
    shape.erase(shape.end() - 1);
  if (at.getRank() == 1)
    shape.erase(shape.end() - (bt.getRank() == 1 ? 1 : 2));
  n.setOutput(0, n.reshape(*r, shape));
  return success();
}

/// Gemm: alpha * op(A) op(B) + beta * C.
static LogicalResult gemmOp(OnnxNode &n) {
  auto a = n.value(0);
  auto b = failed(a) ? a : n.value(1);
  if (failed(b))
    return failure();
  SmallVector<NamedAttribute> attrs;
  if (n.getInt("transA", 0))
    attrs.push_back(n.b.getNamedAttr("transpose_lhs", n.b.getUnitAttr()));
  if (n.getInt("transB", 0))
    attrs.push_back(n.b.getNamedAttr("transpose_rhs", n.b.getUnitAttr()));
  auto r = n.create<ll::MatmulOp>({*a, *b}, attrs);
  if (failed(r))
    return failure();
  Type elt = cast<RankedTensorType>(r->getType()).getElementType();
  Value out = *r;
  float alpha = n.getFloat("alpha", 1.0f), beta = n.getFloat("beta", 1.0f);
  if (alpha != 1.0f) {
    auto m = n.create<ll::MulOp>({out, n.scalar(elt, alpha)});
    if (failed(m))
      return failure();
    out = *m;
  }
  if (n.hasInput(2) && beta != 0.0f) {
    auto c = n.value(2);
    if (failed(c))
      return failure();
    Value bias = *c;
    if (beta != 1.0f) {
      auto m = n.create<ll::MulOp>({bias, n.scalar(elt, beta)});
      if (failed(m))
        return failure();
      bias = *m;
    }
    auto sum = n.create<ll::AddOp>({out, bias});
    if (failed(sum))
      return failure();
    out = *sum;
  }
  n.setOutput(0, out);
  return success();
}

//===----------------------------------------------------------------------===//
// LayerNormalization, Softmax, LogSoftmax
//===----------------------------------------------------------------------===//

static LogicalResult layerNormOp(OnnxNode &n) {
  auto x = n.value(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  auto axis = n.normalizeAxis(n.getInt("axis", -1), type.getRank());
  if (failed(axis))
    return failure();
  auto normShape = type.getShape().drop_front(*axis);
  SmallVector<Value> operands = {*x};
  for (unsigned i : {1u, 2u}) {
    if (!n.hasInput(i))
      continue;
    // An initializer used by several norms is a sign of a merged parameter
    // (GraphImporter::warnSharedNormParams).
    if (n.graph.initializerNames.count(n.inputName(i)))
      n.graph.normParamUses[n.inputName(i)].push_back(n.name().str());
    auto p = n.value(i);
    if (failed(p))
      return failure();
    Value param = *p;
    auto pt = cast<RankedTensorType>(param.getType());
    // ONNX lets scale and bias broadcast; llmc wants the normalized shape.
    if (pt.getShape() != normShape) {
      auto bshape = broadcastStatic(pt.getShape(), normShape);
      if (!bshape || llvm::ArrayRef(*bshape) != normShape)
        return n.emitError() << (i == 1 ? "scale" : "bias")
                             << " does not broadcast to the normalized dims";
      param = n.b.create<ll::BroadcastToOp>(n.loc, pt.clone(normShape), param);
    }
    operands.push_back(param);
  }
  int32_t hasScale = n.hasInput(1), hasBias = n.hasInput(2);
  double epsilon = n.getFloatAsDouble("epsilon", 1e-5f);
  auto r = n.create<ll::LayerNormOp>(
      operands,
      {n.b.getNamedAttr("axis", n.b.getI64IntegerAttr(*axis)),
       n.b.getNamedAttr("epsilon", n.b.getF64FloatAttr(epsilon)),
       n.b.getNamedAttr("operandSegmentSizes",
                        n.b.getDenseI32ArrayAttr({1, hasScale, hasBias}))});
  if (failed(r))
    return failure();
  n.setOutput(0, *r);
  if (n.outputUsed(1) || n.outputUsed(2))
    return layerNormStatistics(n, *x, *axis, epsilon);
  return success();
}

/// Gelu (opset 20) is a composite op in ONNX and in llmc.
static LogicalResult geluOp(OnnxNode &n) {
  std::string approx = n.getString("approximate", "none");
  if (approx != "none" && approx != "tanh")
    return n.emitError() << "has approximate '" << approx
                         << "'; ONNX allows none and tanh";
  auto x = n.value(0);
  if (failed(x))
    return failure();
  auto form = approx == "tanh" ? ll::GeluApproximation::tanh
                               : ll::GeluApproximation::erf;
  auto r = n.create<ll::GeluOp>(
      {*x}, {n.b.getNamedAttr("approximation", ll::GeluApproximationAttr::get(
                                                   n.b.getContext(), form))});
  if (failed(r))
    return failure();
  n.setOutput(0, *r);
  return success();
}

FailureOr<SoftmaxAxis> softmaxAxis(OnnxNode &n, Value x) {
  bool coerce = n.opset() < 13;
  int64_t rank = n.rank(0);
  auto axis = n.normalizeAxis(n.getInt("axis", coerce ? 1 : -1), rank);
  if (failed(axis))
    return failure();
  // Rows that end at the last dim are the new form's last axis: what
  // exporters write (dim=-1), imported without reshapes.
  if (!coerce || *axis == rank - 1)
    return SoftmaxAxis{x, *axis, false};
  if (failed(n.requireStaticShape(0, (n.opType() + " before opset 13").str())))
    return failure();
  SmallVector<int64_t> shape = n.shape(0);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < *axis ? outer : inner) *= shape[i];
  return SoftmaxAxis{n.reshape(x, {outer, inner}), 1, true};
}

template <typename OpTy> static LogicalResult softmaxOp(OnnxNode &n) {
  auto x = n.value(0);
  if (failed(x))
    return failure();
  auto along = softmaxAxis(n, *x);
  if (failed(along))
    return failure();
  auto r = n.create<OpTy>({along->x}, {n.b.getNamedAttr(
                                          "axis", n.b.getI64IntegerAttr(
                                                      along->axis))});
  if (failed(r))
    return failure();
  n.setOutput(0, along->rows ? n.reshape(*r, n.shape(0)) : *r);
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// ReduceX: axes are an input from opset 18 (ReduceSum: 13), an attribute
/// before. Empty axes reduce everything unless noop_with_empty_axes.
FailureOr<std::optional<std::vector<int64_t>>> reduceAxes(OnnxNode &n) {
  int64_t rank = n.rank(0);
  std::vector<int64_t> axes;
  if (n.hasInput(1)) {
    auto t = n.requireConstant(1, "axes");
    if (failed(t))
      return failure();
    axes = (*t)->toInts();
  } else if (auto a = n.getInts("axes")) {
    axes = *a;
  }
  if (axes.empty()) {
    if (n.getInt("noop_with_empty_axes", 0) || rank == 0)
      return std::optional<std::vector<int64_t>>();
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  for (int64_t &a : axes) {
    auto axis = n.normalizeAxis(a, rank);
    if (failed(axis))
      return failure();
    a = *axis;
  }
  llvm::sort(axes);
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return std::optional<std::vector<int64_t>>(std::move(axes));
}

template <ReduceKind kind> static LogicalResult reduceOp(OnnxNode &n) {
  auto parsed = reduceAxes(n);
  if (failed(parsed))
    return failure();
  if (!*parsed) {
    n.setOutput(0, n.input(0));
    return success();
  }
  std::vector<int64_t> axes = std::move(**parsed);
  bool keepdims = n.getInt("keepdims", 1) != 0;
  if (const TensorData *x = n.constant(0); x && n.canFold(x->shape())) {
    n.setOutput(0, evalReduce(kind, *x, axes, keepdims));
    return success();
  }
  auto x = n.value(0);
  if (failed(x))
    return failure();
  SmallVector<NamedAttribute> attrs = {
      n.b.getNamedAttr("axes", n.b.getDenseI64ArrayAttr(axes))};
  if (keepdims)
    attrs.push_back(n.b.getNamedAttr("keepdims", n.b.getUnitAttr()));
  FailureOr<Value> r = failure();
  switch (kind) {
  case ReduceKind::Sum: r = n.create<ll::ReduceSumOp>({*x}, attrs); break;
  case ReduceKind::Mean: r = n.create<ll::ReduceMeanOp>({*x}, attrs); break;
  case ReduceKind::Max: r = n.create<ll::ReduceMaxOp>({*x}, attrs); break;
  case ReduceKind::Min: {
    // min(x) = -max(-x), exact for floats; integers are not reduced at
    // their minimum value, whose negation wraps.
    auto neg = n.create<ll::NegOp>({*x});
    if (failed(neg))
      return failure();
    auto m = n.create<ll::ReduceMaxOp>({*neg}, attrs);
    r = failed(m) ? m : n.create<ll::NegOp>({*m});
    break;
  }
  default:
    return n.emitError() << "llmc evaluates " << n.opType()
                         << " only on values known at import time";
  }
  if (failed(r))
    return failure();
  n.setOutput(0, *r);
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// ONNX losses put classes in dim 1 ([N, C, d1, ...]); llmc puts them last.
static Value classesLast(OnnxNode &n, Value scores, FailureOr<Value> &err) {
  auto type = cast<RankedTensorType>(scores.getType());
  if (type.getRank() <= 2)
    return scores;
  SmallVector<int64_t> perm = {0};
  for (int64_t d = 2; d < type.getRank(); ++d)
    perm.push_back(d);
  perm.push_back(1);
  err = n.create<ll::TransposeOp>(
      {scores}, {n.b.getNamedAttr("permutation",
                                  n.b.getDenseI64ArrayAttr(perm))});
  return succeeded(err) ? *err : Value();
}

static FailureOr<ll::LossReduction> reductionOf(OnnxNode &n) {
  std::string r = n.getString("reduction", "mean");
  if (auto kind = ll::symbolizeLossReduction(r))
    return *kind;
  n.emitError() << "has reduction '" << r << "'; ONNX allows mean, sum, none";
  return failure();
}

static LogicalResult nllLoss(OnnxNode &n, Value input, Value target,
                             Value weight, ll::LossReduction reduction);

/// With class weights: log_softmax over the classes, then the weighted
/// NegativeLogLikelihoodLoss (llmc.cross_entropy has no weights).
static LogicalResult weightedCrossEntropy(OnnxNode &n,
                                          ll::LossReduction reduction) {
  auto scores = n.value(0);
  auto labels = failed(scores) ? scores : n.value(1);
  auto weight = failed(labels) ? labels : n.value(2);
  if (failed(weight))
    return failure();
  auto logProb = n.create<ll::LogSoftmaxOp>(
      {*scores}, {n.b.getNamedAttr("axis", n.b.getI64IntegerAttr(1))});
  if (failed(logProb) ||
      failed(nllLoss(n, *logProb, *labels, *weight, reduction)))
    return failure();
  if (n.outputUsed(1))
    n.setOutput(1, *logProb);
  return success();
}

static LogicalResult softmaxCrossEntropyOp(OnnxNode &n) {
  auto reduction = reductionOf(n);
  if (succeeded(reduction) && n.hasInput(2)) {
    if (n.rank(0) < 2)
      return n.emitError() << "needs scores of rank 2 or more ([N, C, ...])";
    return weightedCrossEntropy(n, *reduction);
  }
  auto scores = failed(reduction) ? FailureOr<Value>(failure()) : n.value(0);
  auto labels = failed(scores) ? scores : n.value(1);
  if (failed(labels))
    return failure();
  if (n.rank(0) < 2)
    return n.emitError() << "needs scores of rank 2 or more ([N, C, ...])";
  FailureOr<Value> err = success(Value());
  Value logits = classesLast(n, *scores, err);
  if (failed(err))
    return failure();
  SmallVector<NamedAttribute> attrs = {n.b.getNamedAttr(
      "reduction", ll::LossReductionAttr::get(n.b.getContext(), *reduction))};
  // Without ignore_index ONNX ignores nothing; llmc's default -100 is never
  // a valid class either, so the default is equivalent.
  if (n.attr("ignore_index"))
    attrs.push_back(n.b.getNamedAttr(
        "ignore_index", n.b.getI64IntegerAttr(n.getInt("ignore_index", -100))));
  auto loss = n.create<ll::CrossEntropyOp>({logits, *labels}, attrs);
  if (failed(loss))
    return failure();
  n.setOutput(0, *loss);
  if (n.outputUsed(1)) {
    auto logProb = n.create<ll::LogSoftmaxOp>(
        {*scores}, {n.b.getNamedAttr("axis", n.b.getI64IntegerAttr(1))});
    if (failed(logProb))
      return failure();
    n.setOutput(1, *logProb);
  }
  return success();
}

/// NegativeLogLikelihoodLoss, decomposed:
///   picked = gather_elements(input (classes last), target, last axis)
///   w      = weight[target] (1 without class weights)
///   loss   = where(target != ignore, -picked * w, 0)
///   mean   = sum(loss) / sum(where(target != ignore, w, 0))
/// `input` is [N, C, d1, ...] log-probabilities; `weight` may be null.
static LogicalResult nllLoss(OnnxNode &n, Value input, Value target,
                             Value weight, ll::LossReduction reduction) {
  FailureOr<Value> err = success(Value());
  Value x = classesLast(n, input, err);
  if (failed(err))
    return failure();
  auto tt = cast<RankedTensorType>(target.getType());
  SmallVector<int64_t> picked(tt.getShape());
  picked.push_back(1);
  Value t = target, mask;
  bool ignore = n.attr("ignore_index") != nullptr;
  Type elt = cast<RankedTensorType>(x.getType()).getElementType();
  auto fail = [](FailureOr<Value> v) { return failed(v); };
  if (ignore) {
    Value ii = n.scalar(tt.getElementType(), double(n.getInt("ignore_index", 0)));
    auto m = n.create<ll::CompareOp>(
        {t, ii}, {n.b.getNamedAttr("predicate",
                                   ll::ComparePredicateAttr::get(
                                       n.b.getContext(),
                                       ll::ComparePredicate::ne))});
    if (fail(m))
      return failure();
    mask = *m;
    auto safe =
        n.create<ll::WhereOp>({mask, t, n.scalar(tt.getElementType(), 0)});
    if (fail(safe))
      return failure();
    t = *safe;
  }
  int64_t last = cast<RankedTensorType>(x.getType()).getRank() - 1;
  auto g = n.create<ll::GatherElementsOp>(
      {x, n.reshape(t, picked)},
      {n.b.getNamedAttr("axis", n.b.getI64IntegerAttr(last))});
  if (fail(g))
    return failure();
  auto loss = n.create<ll::NegOp>({n.reshape(*g, tt.getShape())});
  if (fail(loss))
    return failure();
  Value w; // weight[target], zero where ignored
  if (weight) {
    auto gw = n.create<ll::GatherOp>(
        {weight, t}, {n.b.getNamedAttr("axis", n.b.getI64IntegerAttr(0))});
    if (fail(gw))
      return failure();
    w = *gw;
    if (ignore) {
      auto kept = n.create<ll::WhereOp>({mask, w, n.scalar(elt, 0)});
      if (fail(kept))
        return failure();
      w = *kept;
    }
    loss = n.create<ll::MulOp>({*loss, w});
    if (fail(loss))
      return failure();
  }
  if (ignore) {
    loss = n.create<ll::WhereOp>({mask, *loss, n.scalar(elt, 0)});
    if (fail(loss))
      return failure();
  }
  if (reduction == ll::LossReduction::none) {
    n.setOutput(0, *loss);
    return success();
  }
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < tt.getRank(); ++d)
    all.push_back(d);
  auto axes = n.b.getNamedAttr("axes", n.b.getDenseI64ArrayAttr(all));
  bool mean = reduction == ll::LossReduction::mean;
  if (mean && !ignore && !weight) {
    auto r = n.create<ll::ReduceMeanOp>({*loss}, {axes});
    if (fail(r))
      return failure();
    n.setOutput(0, *r);
    return success();
  }
  auto sum = n.create<ll::ReduceSumOp>({*loss}, {axes});
  if (fail(sum))
    return failure();
  if (!mean) {
    n.setOutput(0, *sum);
    return success();
  }
  auto count =
      n.create<ll::ReduceSumOp>({weight ? w : n.cast(mask, elt)}, {axes});
  if (fail(count))
    return failure();
  auto r = n.create<ll::DivOp>({*sum, *count});
  if (fail(r))
    return failure();
  n.setOutput(0, *r);
  return success();
}

static LogicalResult nllLossOp(OnnxNode &n) {
  auto reduction = reductionOf(n);
  auto input = failed(reduction) ? FailureOr<Value>(failure()) : n.value(0);
  auto target = failed(input) ? input : n.value(1);
  auto weight = failed(target) || !n.hasInput(2) ? target : n.value(2);
  if (failed(weight))
    return failure();
  return nllLoss(n, *input, *target, n.hasInput(2) ? *weight : Value(),
                 *reduction);
}

void registerNNOps(OpRegistry &r) {
  r["MatMul"] = matmulOp;
  r["Gemm"] = gemmOp;
  r["LayerNormalization"] = layerNormOp;
  r["Gelu"] = geluOp;
  r["Softmax"] = softmaxOp<ll::SoftmaxOp>;
  r["LogSoftmax"] = softmaxOp<ll::LogSoftmaxOp>;
  r["ReduceSum"] = reduceOp<ReduceKind::Sum>;
  r["ReduceMean"] = reduceOp<ReduceKind::Mean>;
  r["ReduceMax"] = reduceOp<ReduceKind::Max>;
  r["ReduceMin"] = reduceOp<ReduceKind::Min>;
  r["ReduceProd"] = reduceOp<ReduceKind::Prod>;
  r["SoftmaxCrossEntropyLoss"] = softmaxCrossEntropyOp;
  r["NegativeLogLikelihoodLoss"] = nllLossOp;
}

} // namespace llmc::onnximport
