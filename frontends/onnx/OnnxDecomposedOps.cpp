//===- OnnxDecomposedOps.cpp - ONNX ops built from several llmc ops -------===//
//
// ONNX ops that llmc has no op of its own for, imported as compositions of
// llmc ops, so that the evaluator, autodiff and the code generator need
// nothing new:
//
//   ArgMax(x)        = min over {i : x_i == max(x) or isnan(x_i)} of i
//                      (max of those i with select_last_index)
//   Hardmax(x)       = cast(iota == ArgMax(x, keepdims))
//   ReduceSumSquare  = sum(x * x)       ReduceL1 = sum(|x|)
//   ReduceL2         = sqrt(sum(x * x)) ReduceLogSum = log(sum(x))
//   ReduceLogSumExp  = log(sum(exp(x - max(x)))) + max(x)
//   Mean(x...)       = sum(x...) / count
//   LeakyRelu(x)     = where(x < 0, alpha * x, x); PRelu likewise with slope
//   HardSigmoid(x)   = max(0, min(1, alpha * x + beta))
//   HardSwish(x)     = x * HardSigmoid(x; 1/6, 1/2)
//   Sign(x)          = where(x > 0, 1, where(x < 0, -1, x))   (NaN, 0 kept)
//   Tile(x, r)       = reshape(broadcast_to(reshape(x, [1, d0, 1, d1, ..]),
//                                           [r0, d0, r1, d1, ..]))
//   CumSum(x)        = reduce_sum(where(j <= i, x_j, 0)) over j
//   Elu(x)           = where(x < 0, alpha * (exp(min(x, 0)) - 1), x);
//                      Selu = gamma * Elu(x; Selu's alpha)
//   Celu(x)          = max(0, x) + min(0, alpha * (exp(min(x, 0) / alpha) - 1))
//   Softplus(x)      = max(x, 0) + log(1 + exp(-|x|))
//   Softsign(x)      = x / (1 + |x|)
//   ThresholdedRelu  = where(x > alpha, x, 0); Shrink likewise with two
//   IsInf(x)         = x == inf, x == -inf, or |x| == inf
//   LayerNormalization's Mean and InvStdDev outputs (layerNormStatistics)
//
// The gradients are those of the parts (where: the selected branch; the
// integer results of ArgMax and the comparisons carry none).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"

#include "dialects/llmc/LlmcOps.h"

#include <cmath>

using namespace mlir;
namespace ll = mlir::llmc;

namespace llmc::onnximport {

namespace {

/// Builds llmc ops at a node with a sticky failure: after the first error
/// (already reported on the node) every call returns a null Value, so a
/// handler checks once at the end.
class Emit {
public:
  explicit Emit(OnnxNode &n) : n(n) {}
  bool failed() const { return bad; }

  template <typename OpTy>
  Value op(ValueRange operands, ArrayRef<NamedAttribute> attrs = {}) {
    if (bad || llvm::any_of(operands, [](Value v) { return !v; }))
      return fail();
    auto r = n.create<OpTy>(operands, attrs);
    return mlir::failed(r) ? fail() : *r;
  }
  Value cmp(ll::ComparePredicate p, Value a, Value b) {
    return op<ll::CompareOp>(
        {a, b}, {n.b.getNamedAttr("predicate", ll::ComparePredicateAttr::get(
                                                   n.b.getContext(), p))});
  }
  template <typename OpTy>
  Value reduce(Value x, ArrayRef<int64_t> axes, bool keepdims) {
    SmallVector<NamedAttribute> attrs = {
        n.b.getNamedAttr("axes", n.b.getDenseI64ArrayAttr(axes))};
    if (keepdims)
      attrs.push_back(n.b.getNamedAttr("keepdims", n.b.getUnitAttr()));
    return op<OpTy>({x}, attrs);
  }
  Value scalarLike(Value like, double v) {
    if (!like)
      return fail();
    return n.scalar(cast<RankedTensorType>(like.getType()).getElementType(),
                    v);
  }
  Value input(unsigned i) {
    if (bad)
      return Value();
    auto v = n.value(i);
    return mlir::failed(v) ? fail() : *v;
  }
  LogicalResult output(unsigned i, Value v) {
    if (bad || !v)
      return failure();
    n.setOutput(i, v);
    return success();
  }

private:
  Value fail() {
    bad = true;
    return Value();
  }
  OnnxNode &n;
  bool bad = false;
};

} // namespace

//===----------------------------------------------------------------------===//
// ArgMax, ArgMin, Hardmax
//===----------------------------------------------------------------------===//

/// The index of the first (or last) extreme element along `axis`, i64. NaN
/// counts as the extreme, as numpy's argmax/argmin take the first NaN.
static Value argExtreme(OnnxNode &n, Emit &e, Value x, int64_t axis,
                        bool isMax, bool last, bool keepdims) {
  if (!x)
    return Value();
  auto type = cast<RankedTensorType>(x.getType());
  Value key = isMax ? x : e.op<ll::NegOp>({x});
  Value best = e.reduce<ll::ReduceMaxOp>(key, {axis}, /*keepdims=*/true);
  Value hit = e.cmp(ll::ComparePredicate::eq, key, best);
  if (isa<FloatType>(type.getElementType()))
    hit = e.op<ll::WhereOp>({e.op<ll::IsNanOp>({x}),
                             n.scalar(n.b.getI1Type(), 1), hit});
  Type i64 = n.b.getI64Type();
  Value idx = n.b.create<ll::IotaOp>(n.loc, type.clone(i64),
                                     n.b.getI64IntegerAttr(axis),
                                     n.b.getF64FloatAttr(0),
                                     n.b.getF64FloatAttr(1));
  if (last)
    return e.reduce<ll::ReduceMaxOp>(
        e.op<ll::WhereOp>({hit, idx, n.scalar(i64, -1)}), {axis}, keepdims);
  // The first hit: -max(-i) over the hits, the others pushed to -size.
  Value negIdx = e.op<ll::NegOp>({idx});
  Value cand = e.op<ll::WhereOp>(
      {hit, negIdx, n.scalar(i64, -double(type.getDimSize(axis)))});
  return e.op<ll::NegOp>({e.reduce<ll::ReduceMaxOp>(cand, {axis}, keepdims)});
}

template <bool isMax> static LogicalResult argOp(OnnxNode &n) {
  if (failed(n.requireStaticShape(0, n.opType())))
    return failure();
  if (n.rank(0) == 0)
    return n.emitError() << "needs a tensor of rank 1 or more";
  auto axis = n.normalizeAxis(n.getInt("axis", 0), n.rank(0));
  if (failed(axis))
    return failure();
  Emit e(n);
  Value r = argExtreme(n, e, e.input(0), *axis, isMax,
                       n.getInt("select_last_index", 0) != 0,
                       n.getInt("keepdims", 1) != 0);
  return e.output(0, r);
}

static LogicalResult hardmaxOp(OnnxNode &n) {
  if (failed(n.requireStaticShape(0, "Hardmax")))
    return failure();
  if (n.rank(0) == 0)
    return n.emitError() << "needs a tensor of rank 1 or more";
  Emit e(n);
  Value in = e.input(0);
  if (e.failed())
    return failure();
  auto along = softmaxAxis(n, in);
  if (failed(along))
    return failure();
  Value x = along->x;
  Value arg = argExtreme(n, e, x, along->axis, /*isMax=*/true, /*last=*/false,
                         /*keepdims=*/true);
  if (e.failed())
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  Value idx = n.b.create<ll::IotaOp>(n.loc, type.clone(n.b.getI64Type()),
                                     n.b.getI64IntegerAttr(along->axis),
                                     n.b.getF64FloatAttr(0),
                                     n.b.getF64FloatAttr(1));
  Value hot = e.cmp(ll::ComparePredicate::eq, idx, arg);
  if (!hot)
    return failure();
  return e.output(0, n.reshape(n.cast(hot, type.getElementType()),
                               n.shape(0)));
}

//===----------------------------------------------------------------------===//
// ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp
//===----------------------------------------------------------------------===//

enum class ReduceForm { SumSquare, L1, L2, LogSum, LogSumExp };

template <ReduceForm form> static LogicalResult reduceFormOp(OnnxNode &n) {
  auto parsed = reduceAxes(n);
  if (failed(parsed))
    return failure();
  Emit e(n);
  Value x = e.input(0);
  bool keepdims = n.getInt("keepdims", 1) != 0;
  if (!*parsed) {
    // Nothing reduced: the elementwise part alone (onnx's reference).
    switch (form) {
    case ReduceForm::SumSquare:
    case ReduceForm::L2:
      return e.output(0, form == ReduceForm::L2
                             ? e.op<ll::AbsOp>({x})
                             : e.op<ll::MulOp>({x, x}));
    case ReduceForm::L1: return e.output(0, e.op<ll::AbsOp>({x}));
    case ReduceForm::LogSum: return e.output(0, e.op<ll::LogOp>({x}));
    case ReduceForm::LogSumExp: return e.output(0, x);
    }
  }
  const std::vector<int64_t> &axes = **parsed;
  Value r;
  switch (form) {
  case ReduceForm::SumSquare:
    r = e.reduce<ll::ReduceSumOp>(e.op<ll::MulOp>({x, x}), axes, keepdims);
    break;
  case ReduceForm::L1:
    r = e.reduce<ll::ReduceSumOp>(e.op<ll::AbsOp>({x}), axes, keepdims);
    break;
  case ReduceForm::L2:
    r = e.op<ll::SqrtOp>(
        {e.reduce<ll::ReduceSumOp>(e.op<ll::MulOp>({x, x}), axes, keepdims)});
    break;
  case ReduceForm::LogSum:
    r = e.op<ll::LogOp>({e.reduce<ll::ReduceSumOp>(x, axes, keepdims)});
    break;
  case ReduceForm::LogSumExp: {
    // The max is subtracted first so that exp does not overflow.
    Value m = e.reduce<ll::ReduceMaxOp>(x, axes, /*keepdims=*/true);
    Value s = e.reduce<ll::ReduceSumOp>(
        e.op<ll::ExpOp>({e.op<ll::SubOp>({x, m})}), axes, /*keepdims=*/true);
    r = e.op<ll::AddOp>({e.op<ll::LogOp>({s}), m});
    if (r && !keepdims) {
      SmallVector<int64_t> shape;
      for (auto [d, size] : llvm::enumerate(
               cast<RankedTensorType>(r.getType()).getShape()))
        if (!llvm::is_contained(axes, int64_t(d)))
          shape.push_back(size);
      r = n.reshape(r, shape);
    }
    break;
  }
  }
  return e.output(0, r);
}

//===----------------------------------------------------------------------===//
// Mean, Sign, LeakyRelu, PRelu, HardSigmoid, HardSwish
//===----------------------------------------------------------------------===//

static LogicalResult meanOp(OnnxNode &n) {
  Emit e(n);
  Value acc = e.input(0);
  for (unsigned i = 1; i < n.numInputs(); ++i)
    acc = e.op<ll::AddOp>({acc, e.input(i)});
  if (n.numInputs() > 1)
    acc = e.op<ll::DivOp>({acc, e.scalarLike(acc, n.numInputs())});
  return e.output(0, acc);
}

static LogicalResult signOp(OnnxNode &n) {
  Emit e(n);
  Value x = e.input(0);
  Value zero = e.scalarLike(x, 0);
  Value neg = e.op<ll::WhereOp>(
      {e.cmp(ll::ComparePredicate::lt, x, zero), e.scalarLike(x, -1), x});
  Value r = e.op<ll::WhereOp>(
      {e.cmp(ll::ComparePredicate::gt, x, zero), e.scalarLike(x, 1), neg});
  // Keeps x where it is 0 (or NaN), so -0 stays -0 as in numpy.sign.
  return e.output(0, r);
}

/// where(x < 0, slope * x, x): LeakyRelu's alpha or PRelu's slope tensor.
static LogicalResult negativeSlope(OnnxNode &n, Emit &e, Value x,
                                   Value slope) {
  Value r = e.op<ll::WhereOp>(
      {e.cmp(ll::ComparePredicate::lt, x, e.scalarLike(x, 0)),
       e.op<ll::MulOp>({x, slope}), x});
  if (r && cast<RankedTensorType>(r.getType()).getShape() !=
               cast<RankedTensorType>(x.getType()).getShape())
    return n.emitError() << "slope does not broadcast to the input's shape";
  return e.output(0, r);
}

static LogicalResult leakyReluOp(OnnxNode &n) {
  Emit e(n);
  Value x = e.input(0);
  return negativeSlope(n, e, x, e.scalarLike(x, n.getFloat("alpha", 0.01f)));
}

static LogicalResult preluOp(OnnxNode &n) {
  Emit e(n);
  Value x = e.input(0);
  return negativeSlope(n, e, x, e.input(1));
}

static Value hardSigmoid(Emit &e, Value x, double alpha, double beta) {
  Value y = e.op<ll::AddOp>({e.op<ll::MulOp>({x, e.scalarLike(x, alpha)}),
                             e.scalarLike(x, beta)});
  return e.op<ll::MaxOp>({e.op<ll::MinOp>({y, e.scalarLike(x, 1)}),
                          e.scalarLike(x, 0)});
}

static LogicalResult hardSigmoidOp(OnnxNode &n) {
  Emit e(n);
  return e.output(0, hardSigmoid(e, e.input(0), n.getFloat("alpha", 0.2f),
                                 n.getFloat("beta", 0.5f)));
}

static LogicalResult hardSwishOp(OnnxNode &n) {
  Emit e(n);
  Value x = e.input(0);
  return e.output(0, e.op<ll::MulOp>({x, hardSigmoid(e, x, 1.0 / 6, 0.5)}));
}

//===----------------------------------------------------------------------===//
// Elu, Selu, Celu, Softplus, Softsign, ThresholdedRelu, Shrink, IsInf
//===----------------------------------------------------------------------===//

/// alpha * (exp(min(x, 0) / scale) - 1): the negative branch of Elu, Selu
/// and Celu. The min keeps exp finite where the branch is not taken, so
/// its zero gradient there is not 0 * inf.
static Value expBranch(Emit &e, Value x, double alpha, double scale) {
  Value neg = e.op<ll::MinOp>({x, e.scalarLike(x, 0)});
  if (scale != 1)
    neg = e.op<ll::DivOp>({neg, e.scalarLike(x, scale)});
  Value em1 = e.op<ll::SubOp>({e.op<ll::ExpOp>({neg}), e.scalarLike(x, 1)});
  return e.op<ll::MulOp>({em1, e.scalarLike(x, alpha)});
}

/// Elu: x > 0 ? x : alpha (e^x - 1); Selu: gamma times that with Selu's
/// alpha (ONNX's x <= 0 and x < 0 agree: both branches are 0 at 0).
template <bool selu> static LogicalResult eluOp(OnnxNode &n) {
  Emit e(n);
  Value x = e.input(0);
  double alpha = n.getFloat("alpha", selu ? 1.67326319217681884765625f : 1.f);
  Value r = e.op<ll::WhereOp>({e.cmp(ll::ComparePredicate::lt, x,
                                     e.scalarLike(x, 0)),
                               expBranch(e, x, alpha, 1), x});
  if (selu)
    r = e.op<ll::MulOp>(
        {r, e.scalarLike(x, n.getFloat("gamma", 1.05070102214813232421875f))});
  return e.output(0, r);
}

/// Celu: max(0, x) + min(0, alpha (e^(x / alpha) - 1)).
static LogicalResult celuOp(OnnxNode &n) {
  Emit e(n);
  Value x = e.input(0);
  double alpha = n.getFloat("alpha", 1.f);
  if (alpha == 0)
    return n.emitError() << "has alpha 0 (Celu divides by it)";
  Value pos = e.op<ll::MaxOp>({x, e.scalarLike(x, 0)});
  Value neg = e.op<ll::MinOp>({expBranch(e, x, alpha, alpha),
                               e.scalarLike(x, 0)});
  return e.output(0, e.op<ll::AddOp>({pos, neg}));
}

/// Softplus: log(1 + e^x) as max(x, 0) + log(1 + e^-|x|), which neither
/// overflows for large x nor loses the value for very negative x.
static LogicalResult softplusOp(OnnxNode &n) {
  Emit e(n);
  Value x = e.input(0);
  Value tail = e.op<ll::ExpOp>({e.op<ll::NegOp>({e.op<ll::AbsOp>({x})})});
  Value log1p = e.op<ll::LogOp>({e.op<ll::AddOp>({tail, e.scalarLike(x, 1)})});
  return e.output(0, e.op<ll::AddOp>(
                         {e.op<ll::MaxOp>({x, e.scalarLike(x, 0)}), log1p}));
}

/// Softsign: x / (1 + |x|).
static LogicalResult softsignOp(OnnxNode &n) {
  Emit e(n);
  Value x = e.input(0);
  Value den = e.op<ll::AddOp>({e.op<ll::AbsOp>({x}), e.scalarLike(x, 1)});
  return e.output(0, e.op<ll::DivOp>({x, den}));
}

/// ThresholdedRelu: x > alpha ? x : 0.
static LogicalResult thresholdedReluOp(OnnxNode &n) {
  Emit e(n);
  Value x = e.input(0);
  Value keep = e.cmp(ll::ComparePredicate::gt, x,
                     e.scalarLike(x, n.getFloat("alpha", 1.f)));
  return e.output(0, e.op<ll::WhereOp>({keep, x, e.scalarLike(x, 0)}));
}

/// Shrink: x < -lambd ? x + bias : x > lambd ? x - bias : 0.
static LogicalResult shrinkOp(OnnxNode &n) {
  Emit e(n);
  Value x = e.input(0);
  double lambd = n.getFloat("lambd", 0.5f), bias = n.getFloat("bias", 0.f);
  Value high = e.op<ll::WhereOp>(
      {e.cmp(ll::ComparePredicate::gt, x, e.scalarLike(x, lambd)),
       e.op<ll::SubOp>({x, e.scalarLike(x, bias)}), e.scalarLike(x, 0)});
  Value r = e.op<ll::WhereOp>(
      {e.cmp(ll::ComparePredicate::lt, x, e.scalarLike(x, -lambd)),
       e.op<ll::AddOp>({x, e.scalarLike(x, bias)}), high});
  return e.output(0, r);
}

/// IsInf: x == +inf where detect_positive, x == -inf where detect_negative
/// (both: |x| == inf).
static LogicalResult isInfOp(OnnxNode &n) {
  Emit e(n);
  Value x = e.input(0);
  if (x && !isa<FloatType>(
               cast<RankedTensorType>(x.getType()).getElementType()))
    return n.emitError() << "needs a float tensor";
  bool pos = n.getInt("detect_positive", 1) != 0;
  bool neg = n.getInt("detect_negative", 1) != 0;
  if (pos != neg)
    return e.output(0, e.cmp(ll::ComparePredicate::eq, x,
                             e.scalarLike(x, pos ? HUGE_VAL : -HUGE_VAL)));
  // Neither: all false in x's shape; |x| < 0 holds for no x, NaN included.
  Value abs = e.op<ll::AbsOp>({x});
  return e.output(0, pos ? e.cmp(ll::ComparePredicate::eq, abs,
                                 e.scalarLike(x, HUGE_VAL))
                         : e.cmp(ll::ComparePredicate::lt, abs,
                                 e.scalarLike(x, 0)));
}

//===----------------------------------------------------------------------===//
// Tile
//===----------------------------------------------------------------------===//

static LogicalResult tileOp(OnnxNode &n) {
  if (failed(n.requireStaticShape(0, "Tile")))
    return failure();
  auto repeats = n.requireConstant(1, "repeats");
  if (failed(repeats))
    return failure();
  std::vector<int64_t> r = (*repeats)->toInts();
  SmallVector<int64_t> in = n.shape(0);
  if (r.size() != in.size())
    return n.emitError() << "has " << r.size() << " repeats for rank "
                         << in.size();
  SmallVector<int64_t> split, spread, out;
  for (auto [d, k] : llvm::zip(in, r)) {
    if (k < 0)
      return n.emitError() << "has a negative repeat count " << k;
    split.append({1, d});
    spread.append({k, d});
    out.push_back(k * d);
  }
  Emit e(n);
  Value x = e.input(0);
  if (e.failed())
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  Value b = n.b.create<ll::BroadcastToOp>(n.loc, type.clone(spread),
                                          n.reshape(x, split));
  return e.output(0, n.reshape(b, out));
}

//===----------------------------------------------------------------------===//
// CumSum
//===----------------------------------------------------------------------===//

/// y[.., i, ..] = sum over j of where(keep(i, j), x[.., j, ..], 0) with keep
/// j <= i (exclusive: j < i; reverse: j >= i, j > i). The [N, N] mask makes
/// this O(N^2) per row, which is what exporters use it for (position ids
/// from an attention mask, N = the sequence), and it is exact for integers.
static LogicalResult cumSumOp(OnnxNode &n) {
  if (failed(n.requireStaticShape(0, "CumSum")))
    return failure();
  auto axisValue = n.requireScalar(1, "axis");
  if (failed(axisValue))
    return failure();
  SmallVector<int64_t> in = n.shape(0);
  if (in.empty())
    return n.emitError() << "needs a tensor of rank 1 or more";
  auto axis = n.normalizeAxis((*axisValue)->getInt(0), in.size());
  if (failed(axis))
    return failure();
  bool exclusive = n.getInt("exclusive", 0) != 0;
  bool reverse = n.getInt("reverse", 0) != 0;
  auto predicate = reverse ? (exclusive ? ll::ComparePredicate::gt
                                        : ll::ComparePredicate::ge)
                           : (exclusive ? ll::ComparePredicate::lt
                                        : ll::ComparePredicate::le);
  int64_t size = in[*axis];
  Emit e(n);
  Value x = e.input(0);
  if (e.failed())
    return failure();
  auto square = RankedTensorType::get({size, size}, n.b.getI64Type());
  auto iota = [&](int64_t dim) {
    return n.b.create<ll::IotaOp>(n.loc, square, n.b.getI64IntegerAttr(dim),
                                  n.b.getF64FloatAttr(0),
                                  n.b.getF64FloatAttr(1))
        .getResult();
  };
  // keep[i, j]: rows i are outputs, columns j the summed inputs.
  Value rows = iota(0), cols = iota(1);
  Value keep = e.cmp(predicate, cols, rows);
  SmallVector<int64_t> maskShape(in.size() + 1, 1), spread(in);
  maskShape[*axis] = maskShape[*axis + 1] = size;
  spread.insert(spread.begin() + *axis, 1);
  Value picked = e.op<ll::WhereOp>({n.reshape(keep, maskShape),
                                    n.reshape(x, spread),
                                    e.scalarLike(x, 0)});
  return e.output(0, e.reduce<ll::ReduceSumOp>(picked, {*axis + 1}, false));
}

//===----------------------------------------------------------------------===//
// LayerNormalization's Mean and InvStdDev outputs
//===----------------------------------------------------------------------===//

/// mean = reduce_mean(x), inv_std = 1 / sqrt(reduce_mean((x - mean)^2) + eps)
/// over dims axis..<rank, kept as size-1 dims; in f32 for f16/bf16 inputs
/// (ONNX's stash_type 1), else in x's type. The composite llmc.layer_norm
/// still computes output 0: these are extra ops only where the graph reads
/// the statistics.
LogicalResult layerNormStatistics(OnnxNode &n, Value x, int64_t axis,
                                  double epsilon) {
  Emit e(n);
  auto type = cast<RankedTensorType>(x.getType());
  Type elt = type.getElementType();
  if ((elt.isF16() || elt.isBF16()) && n.getInt("stash_type", 1) == 1)
    x = n.cast(x, n.b.getF32Type());
  SmallVector<int64_t> axes;
  for (int64_t d = axis; d < type.getRank(); ++d)
    axes.push_back(d);
  Value mean = e.reduce<ll::ReduceMeanOp>(x, axes, /*keepdims=*/true);
  Value d = e.op<ll::SubOp>({x, mean});
  Value var = e.reduce<ll::ReduceMeanOp>(e.op<ll::MulOp>({d, d}), axes,
                                         /*keepdims=*/true);
  Value inv = e.op<ll::ReciprocalOp>(
      {e.op<ll::SqrtOp>({e.op<ll::AddOp>({var, e.scalarLike(var, epsilon)})})});
  if (n.outputUsed(1) && failed(e.output(1, mean)))
    return failure();
  if (n.outputUsed(2) && failed(e.output(2, inv)))
    return failure();
  return failure(e.failed());
}

void registerDecomposedOps(OpRegistry &r) {
  r["ArgMax"] = argOp<true>;
  r["ArgMin"] = argOp<false>;
  r["Hardmax"] = hardmaxOp;
  r["ReduceSumSquare"] = reduceFormOp<ReduceForm::SumSquare>;
  r["ReduceL1"] = reduceFormOp<ReduceForm::L1>;
  r["ReduceL2"] = reduceFormOp<ReduceForm::L2>;
  r["ReduceLogSum"] = reduceFormOp<ReduceForm::LogSum>;
  r["ReduceLogSumExp"] = reduceFormOp<ReduceForm::LogSumExp>;
  r["Mean"] = meanOp;
  r["Sign"] = signOp;
  r["LeakyRelu"] = leakyReluOp;
  r["PRelu"] = preluOp;
  r["HardSigmoid"] = hardSigmoidOp;
  r["HardSwish"] = hardSwishOp;
  r["Tile"] = tileOp;
  r["CumSum"] = cumSumOp;
  r["Elu"] = eluOp<false>;
  r["Selu"] = eluOp<true>;
  r["Celu"] = celuOp;
  r["Softplus"] = softplusOp;
  r["Softsign"] = softsignOp;
  r["ThresholdedRelu"] = thresholdedReluOp;
  r["Shrink"] = shrinkOp;
  r["IsInf"] = isInfOp;
}

} // namespace llmc::onnximport
