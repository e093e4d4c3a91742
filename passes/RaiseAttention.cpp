//===- RaiseAttention.cpp - Raise decomposed SDPA to llmc.attention --------===//
//
// PyTorch's exporters decompose scaled_dot_product_attention (and HF's eager
// attention) into
//   p = softmax(scale_q * q  @  scale_k * k^T  * scale_s  + mask, -1)
//   p = where(isnan(p), 0, p)                   (dynamo guard, optional)
//   o = p @ v
// with k^T written as a transpose or as reshape/transpose/reshape, and, for
// grouped-query attention, k and v repeated to the query heads by repeat_kv.
// The pattern starts at the final matmul and walks up:
//   1. strip the NaN guard; find the softmax over the last dim;
//   2. split its input into scores and an additive mask (or a where mask),
//      through a scale applied after the mask (CodeGen: (q @ k^T + m) / s);
//   3. peel scalar scales off the scores, q and k^T and multiply them;
//   4. recover k from k^T and undo repeat_kv on k and v;
//   5. classify the mask: constant causal -> `causal`, constant zero -> none,
//      anything else -> the `mask` operand.
// Everything between the leaves (q, k, v, mask) must have one use, so that
// the raised op replaces the whole chain instead of duplicating it.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/RaisePatterns.h"
#include "passes/RaiseUtils.h"

#include "dialects/llmc/ShapeUtils.h"

#include <cmath>

#define DEBUG_TYPE "llmc-raise-attention"

namespace mlir::llmc {
#define GEN_PASS_DEF_RAISEATTENTIONPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::raise;

namespace {

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// A value the rewrite will build once matching has succeeded: `base`
/// itself, a transpose of it, or a reshape of it to `shape`. Matching only
/// plans; nothing is created before the pattern commits.
struct Planned {
  enum Kind { AsIs, Transpose, Reshape } kind = AsIs;
  Value base;
  SmallVector<int64_t> perm;  // Transpose
  SmallVector<int64_t> shape; // Reshape (and the result shape of every kind)

  static Planned asIs(Value v) {
    return {AsIs, v, {}, llvm::to_vector(shapeOf(v))};
  }
  Value build(PatternRewriter &rewriter, Location loc) const {
    if (kind == AsIs)
      return base;
    if (kind == Transpose)
      return rewriter.create<TransposeOp>(loc, base, perm);
    auto type = RankedTensorType::get(shape, elementTypeOf(base));
    if (type == base.getType())
      return base;
    return rewriter.create<ReshapeOp>(loc, type, base);
  }
};

/// k from k^T ([B, H, D, S] -> [B, H, S, D]):
///   transpose(x, p)                      -> transpose(x, p with last two swapped)
///   reshape(transpose(reshape(y) : [N, S, D], [0, 2, 1]))
///                                        -> reshape(y) : [B, H, S, D]
///   anything else                        -> transpose(kt, [0, 1, 3, 2])
static Planned untranspose(Value kt) {
  SmallVector<int64_t> kShape(shapeOf(kt));
  std::swap(kShape[2], kShape[3]);
  if (auto t = kt.getDefiningOp<TransposeOp>()) {
    SmallVector<int64_t> perm(t.getPermutation());
    std::swap(perm[2], perm[3]);
    if (llvm::equal(perm, llvm::seq<int64_t>(0, 4)))
      return Planned::asIs(t.getInput());
    return {Planned::Transpose, t.getInput(), perm, kShape};
  }
  if (auto outer = kt.getDefiningOp<ReshapeOp>()) {
    auto t = outer.getInput().getDefiningOp<TransposeOp>();
    auto inner = t ? t.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
    ArrayRef<int64_t> ts = t ? shapeOf(t.getResult()) : ArrayRef<int64_t>();
    if (inner && t.getPermutation() == ArrayRef<int64_t>{0, 2, 1} &&
        ts.size() == 3 && ts[0] == kShape[0] * kShape[1] &&
        ts[1] == kShape[3] && ts[2] == kShape[2])
      return {Planned::Reshape, inner.getInput(), {}, kShape};
  }
  return {Planned::Transpose, kt, {0, 1, 3, 2}, kShape};
}

/// HF repeat_kv undone: when `x` ([B, Hq, S, D]) is
/// reshape(broadcast_to(src : [B, Hkv, 1, S, D] -> [B, Hkv, G, S, D])),
/// returns reshape(src) : [B, Hkv, S, D].
static std::optional<Planned> unrepeat(const Planned &x) {
  // A chain of reshapes is one reshape (row-major), so look through all.
  Value repeated;
  if (x.kind == Planned::Reshape || x.kind == Planned::AsIs)
    repeated = x.base;
  while (auto r = repeated ? repeated.getDefiningOp<ReshapeOp>()
                            : ReshapeOp())
    repeated = r.getInput();
  auto bcast = repeated ? repeated.getDefiningOp<BroadcastToOp>()
                        : BroadcastToOp();
  if (!bcast)
    return std::nullopt;
  ArrayRef<int64_t> out = shapeOf(bcast.getResult());
  ArrayRef<int64_t> in = shapeOf(bcast.getInput());
  if (out.size() != 5 || in.size() != 5 || in[2] != 1 || in[0] != out[0] ||
      in[1] != out[1] || in[3] != out[3] || in[4] != out[4] ||
      out[1] * out[2] != x.shape[1] || out[0] != x.shape[0] ||
      out[3] != x.shape[2] || out[4] != x.shape[3])
    return std::nullopt;
  return Planned{Planned::Reshape, bcast.getInput(), {},
                 {in[0], in[1], in[3], in[4]}};
}

/// The single non-constant factor of `v` and its coefficient; `v` itself
/// with coefficient 1 when `v` has other uses or several factors.
static std::pair<Value, double> peelScale(Value v) {
  if (!v.hasOneUse())
    return {v, 1.0};
  Product p = collectProduct(v);
  if (p.factors.size() != 1)
    return {v, 1.0};
  return {p.factors[0], p.coefficient};
}

/// The terms of a sum: `v` itself, or the terms of both operands of an add
/// of one use (the chain the raised op replaces).
static void addTerms(Value v, SmallVectorImpl<Value> &terms,
                     bool root = true) {
  auto add = v.getDefiningOp<AddOp>();
  if (!add || add.getLhs() == add.getRhs() || (!root && !v.hasOneUse())) {
    terms.push_back(v);
    return;
  }
  addTerms(add.getLhs(), terms, false);
  addTerms(add.getRhs(), terms, false);
}

enum class MaskKind { None, Causal, Operand };

/// The [.., T, S] slice of a mask that is the same for every leading index,
/// evaluated without materializing the leading dims: broadcast_to(x) with
/// x of size 1 along them, or where(c, a, b) of such a c and scalars a, b.
/// That is how HF GPT-2's exported mask reaches attention (where over a
/// [B, 1, T, S] broadcast of a [1, 1, T, S] compare), and at batch 16 x 1024
/// it has 16.7M values, too many to evaluate whole.
static std::optional<ConstTensor> evalLeadingInvariant(Value v) {
  ArrayRef<int64_t> shape = shapeOf(v);
  if (shape.size() < 2)
    return std::nullopt;
  if (auto b = v.getDefiningOp<BroadcastToOp>()) {
    ArrayRef<int64_t> in = shapeOf(b.getInput());
    for (size_t d = 0; d + 2 < in.size(); ++d)
      if (in[d] != 1)
        return std::nullopt;
    if (auto c = evalConstant(b.getInput()))
      return c;
    return evalLeadingInvariant(b.getInput());
  }
  if (auto w = v.getDefiningOp<WhereOp>()) {
    auto a = getScalarConstant(w.getOnTrue());
    auto f = getScalarConstant(w.getOnFalse());
    auto c = evalConstant(w.getCondition());
    if (!c)
      c = evalLeadingInvariant(w.getCondition());
    if (!a || !f || !c)
      return std::nullopt;
    for (double &x : c->values)
      x = x != 0 ? *a : *f;
    return c;
  }
  return std::nullopt;
}

/// Classifies mask values `c` against `scores` ([B, H, T, S]). Additive
/// masks keep a position with 0 and drop it with -inf (or finfo.min);
/// boolean masks keep it with true.
static MaskKind classifyValues(const ConstTensor &c, bool isBool,
                               ArrayRef<int64_t> scores) {
  auto keeps = [&](double x) -> std::optional<bool> {
    if (isBool)
      return x != 0;
    if (x == 0)
      return true;
    if (x <= kMaskedScore)
      return false;
    return std::nullopt;
  };
  bool allKeep = true, causal = c.shape.size() >= 2;
  int64_t t = c.shape.size() >= 2 ? c.shape[c.shape.size() - 2] : 0;
  int64_t s = c.shape.empty() ? 0 : c.shape.back();
  causal = causal && t == scores[2] && s == scores[3];
  for (size_t i = 0; i < c.values.size(); ++i) {
    auto keep = keeps(c.values[i]);
    if (!keep)
      return MaskKind::Operand;
    allKeep &= *keep;
    if (causal) {
      int64_t row = (i / s) % t, col = i % s;
      causal = *keep == (col <= row + s - t);
    }
  }
  if (allKeep)
    return MaskKind::None;
  return causal ? MaskKind::Causal : MaskKind::Operand;
}

/// The values of a mask that evaluates to a constant: a folded constant (a
/// larger limit: reading it costs no evaluation; the importer folds the
/// exporter's [B, 1, T, S] mask subgraph, 16.7M values for GPT-2 at batch
/// 16 x 1024), a chain of ops on constants, or a leading-invariant form.
static std::optional<ConstTensor> maskValues(Value mask) {
  bool folded = isa_and_nonnull<ConstantOp>(mask.getDefiningOp());
  auto c = evalConstant(mask, folded ? int64_t{1} << 26 : int64_t{1} << 22);
  if (!c)
    c = evalLeadingInvariant(mask);
  return c;
}

/// Classifies a mask that broadcasts to `scores` ([B, H, T, S]).
static MaskKind classifyMask(Value mask, ArrayRef<int64_t> scores) {
  auto c = maskValues(mask);
  if (!c)
    return MaskKind::Operand;
  return classifyValues(*c, elementTypeOf(mask).isInteger(1), scores);
}

/// where(cond, add, fill) over the broadcast shape of `cond` and `add`: the
/// one additive mask equal to a where mask (`fill` <= kMaskedScore) followed
/// by an additive one. std::nullopt when the shapes do not broadcast or the
/// result would exceed 1 << 26 values.
static std::optional<ConstTensor>
combineWhereMask(const ConstTensor &cond, const ConstTensor &add,
                 double fill) {
  size_t rank = std::max(cond.shape.size(), add.shape.size());
  auto padded = [&](const ConstTensor &x) {
    SmallVector<int64_t> p(rank - x.shape.size(), 1);
    p.append(x.shape.begin(), x.shape.end());
    return p;
  };
  SmallVector<int64_t> cs = padded(cond), as = padded(add), shape(rank);
  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (cs[d] != as[d] && cs[d] != 1 && as[d] != 1)
      return std::nullopt;
    shape[d] = std::max(cs[d], as[d]);
    count *= shape[d];
  }
  if (count > int64_t{1} << 26)
    return std::nullopt;
  ConstTensor out{shape, std::vector<double>(count)};
  for (int64_t i = 0; i < count; ++i) {
    // Row-major index into each operand, size-1 dims broadcast.
    int64_t rest = i, ci = 0, ai = 0, cstride = 1, astride = 1;
    for (size_t d = rank; d-- > 0;) {
      int64_t idx = rest % shape[d];
      rest /= shape[d];
      ci += (cs[d] == 1 ? 0 : idx) * cstride;
      ai += (as[d] == 1 ? 0 : idx) * astride;
      cstride *= cs[d];
      astride *= as[d];
    }
    out.values[i] = cond.values[ci] != 0 ? add.values[ai] : fill;
  }
  return out;
}

/// True when some row (the last dim) of the where condition `c` fills
/// every key: all true with the fill on true, all false otherwise.
static bool anyRowAllFilled(const ConstTensor &c, bool fillOnTrue) {
  int64_t s = c.shape.empty() ? 1 : c.shape.back();
  for (size_t row = 0; row * s < c.values.size(); ++row) {
    bool all = true;
    for (int64_t i = 0; i < s && all; ++i)
      all = (c.values[row * s + i] != 0) == fillOnTrue;
    if (all)
      return true;
  }
  return false;
}

// softmax(s_q q @ s_k k^T * s + mask) @ v = attention(q, k, v)
struct RaiseAttention : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getTransposeLhs() || op.getTransposeRhs())
      return rewriter.notifyMatchFailure(op, "p @ v with transposes");
    // 1. Probabilities, through an optional where(isnan(p), 0, p).
    Value p = op.getLhs();
    if (!p.hasOneUse())
      return rewriter.notifyMatchFailure(op, "probabilities have other uses");
    if (auto guard = p.getDefiningOp<WhereOp>()) {
      auto isnan = guard.getCondition().getDefiningOp<IsNanOp>();
      if (!isnan || isnan.getInput() != guard.getOnFalse() ||
          !isScalarConstant(guard.getOnTrue(), 0.0) ||
          guard.getOnFalse().getType() != p.getType() ||
          !guard.getCondition().hasOneUse() ||
          !onlyUsedBy(guard.getOnFalse(), {isnan, guard}))
        return rewriter.notifyMatchFailure(op, "where is not a NaN guard");
      p = guard.getOnFalse();
    } else if (!p.hasOneUse()) {
      return rewriter.notifyMatchFailure(op, "softmax has other uses");
    }
    auto softmax = p.getDefiningOp<SoftmaxOp>();
    if (!softmax)
      return rewriter.notifyMatchFailure(op, "lhs is not a softmax");
    if (shapeOf(p).size() != 4 || (softmax.getAxis() != -1 &&
                                   softmax.getAxis() != 3))
      return rewriter.notifyMatchFailure(op, "softmax is not over the keys");
    Value sc = softmax.getInput();
    if (!sc.hasOneUse())
      return rewriter.notifyMatchFailure(op, "scores have other uses");

    // 2. Scores and mask. CodeGen adds its mask before it scales:
    // softmax((q @ k^T + mask) / s). That scale is peeled first; the mask
    // must then be causal or none (an operand mask would need the scale).
    Value scores = sc, mask, masked = sc;
    double outerScale = 1.0;
    if (auto [inner, s] = peelScale(sc);
        inner != sc && inner.getDefiningOp<AddOp>() && inner.hasOneUse() &&
        s > 0) {
      masked = inner;
      outerScale = s;
    }
    // GPT-Neo masks twice, where(c, q @ k^T, fill) + m: the where and the
    // additive mask are one mask, where(c, m, fill), classified as a whole.
    WhereOp whereMask;
    if (auto add = masked.getDefiningOp<AddOp>()) {
      for (auto [s, m] : {std::pair(add.getLhs(), add.getRhs()),
                          std::pair(add.getRhs(), add.getLhs())}) {
        if (peelScale(s).first.getDefiningOp<MatmulOp>() &&
            s.getType() == sc.getType()) {
          scores = s;
          mask = m;
          break;
        }
        auto w = s.getDefiningOp<WhereOp>();
        auto fill = w ? getScalarConstant(w.getOnFalse()) : std::nullopt;
        if (w && s.hasOneUse() && fill && *fill <= kMaskedScore &&
            w.getOnTrue().getType() == sc.getType() &&
            peelScale(w.getOnTrue()).first.getDefiningOp<MatmulOp>() &&
            isa<FloatType>(elementTypeOf(m))) {
          scores = w.getOnTrue();
          mask = m;
          whereMask = w;
          break;
        }
      }
    } else if (auto where = sc.getDefiningOp<WhereOp>()) {
      auto fill = getScalarConstant(where.getOnFalse());
      if (fill && *fill <= kMaskedScore &&
          where.getOnTrue().getType() == sc.getType()) {
        scores = where.getOnTrue();
        mask = where.getCondition();
      }
    }
    // MPNet adds a relative-position bias, then the mask:
    // (q @ k^T * s + bias) + m. Terms other than the scores sum to one mask.
    SmallVector<Value> maskTerms;
    if (!mask && masked.getDefiningOp<AddOp>()) {
      SmallVector<Value> terms;
      addTerms(masked, terms);
      auto isScores = [&](Value t) {
        return t.getType() == sc.getType() &&
               peelScale(t).first.getDefiningOp<MatmulOp>();
      };
      auto it = llvm::find_if(terms, isScores);
      if (it != terms.end() && llvm::count_if(terms, isScores) == 1 &&
          llvm::all_of(terms, [](Value t) {
            return isa<FloatType>(elementTypeOf(t));
          })) {
        scores = *it;
        terms.erase(it);
        maskTerms = terms;
        mask = maskTerms.front();
      }
    }
    if (masked != sc && !mask)
      return rewriter.notifyMatchFailure(op, "scaled sum is not scores + mask");
    if (scores != sc && !scores.hasOneUse())
      return rewriter.notifyMatchFailure(op, "unmasked scores have other uses");

    // 3. Scales.
    auto [qk, scoreScale] = peelScale(scores);
    auto mm = qk.getDefiningOp<MatmulOp>();
    if (!mm || mm.getTransposeLhs())
      return rewriter.notifyMatchFailure(op, "scores are not q @ k^T");
    if (qk != scores && !qk.hasOneUse())
      return rewriter.notifyMatchFailure(op, "q @ k^T has other uses");
    auto [q, qScale] = peelScale(mm.getLhs());
    auto [kt, kScale] = peelScale(mm.getRhs());
    double scale = scoreScale * qScale * kScale * outerScale;
    if (!(scale > 0) || !std::isfinite(scale))
      return rewriter.notifyMatchFailure(op, "scale is not positive");

    // 4. k from k^T, and repeat_kv undone.
    if (shapeOf(q).size() != 4 || shapeOf(kt).size() != 4 ||
        shapeOf(op.getRhs()).size() != 4)
      return rewriter.notifyMatchFailure(op, "operands are not rank 4");
    Planned k = mm.getTransposeRhs() ? Planned::asIs(kt) : untranspose(kt);
    Planned v = Planned::asIs(op.getRhs());
    ArrayRef<int64_t> qs = shapeOf(q);
    // Multi-query attention (Falcon) leaves k and v with one head, which
    // the batched matmuls broadcast over the query heads: Hkv = 1.
    bool oneKvHead = k.shape[1] == 1 && v.shape[1] == 1;
    if (k.shape[0] != qs[0] || (k.shape[1] != qs[1] && !oneKvHead) ||
        k.shape[3] != qs[3] || v.shape[0] != qs[0] ||
        v.shape[1] != k.shape[1] || v.shape[2] != k.shape[2])
      return rewriter.notifyMatchFailure(op, "q, k, v shapes disagree");
    auto ku = unrepeat(k), vu = unrepeat(v);
    if (ku && vu && ku->shape[1] == vu->shape[1]) {
      k = *ku;
      v = *vu;
    }

    // 5. Mask.
    SmallVector<int64_t> scoreShape(shapeOf(sc));
    MaskKind maskKind = MaskKind::None;
    std::optional<double> whereFill;
    if (whereMask) {
      // The combined mask's shape is that of where(c, m, fill).
      auto joint =
          broadcastShapes(shapeOf(whereMask.getCondition()), shapeOf(mask));
      if (!joint || !isBroadcastableTo(*joint, scoreShape))
        return rewriter.notifyMatchFailure(op, "mask broadcasts the scores");
      whereFill = getScalarConstant(whereMask.getOnFalse());
      auto c = maskValues(whereMask.getCondition());
      auto m = c ? maskValues(mask) : std::nullopt;
      auto joined = m ? combineWhereMask(*c, *m, *whereFill) : std::nullopt;
      maskKind = joined ? classifyValues(*joined, false, scoreShape)
                        : MaskKind::Operand;
      if (maskKind == MaskKind::Operand && outerScale != 1.0)
        return rewriter.notifyMatchFailure(
            op, "a mask added before the scale is neither causal nor zero");
    } else if (maskTerms.size() > 1) {
      for (Value t : maskTerms)
        if (!isBroadcastableTo(shapeOf(t), scoreShape))
          return rewriter.notifyMatchFailure(op, "mask broadcasts the scores");
      if (outerScale != 1.0)
        return rewriter.notifyMatchFailure(
            op, "a mask added before the scale is neither causal nor zero");
      maskKind = MaskKind::Operand;
    } else if (mask) {
      if (!isBroadcastableTo(shapeOf(mask), scoreShape))
        return rewriter.notifyMatchFailure(op, "mask broadcasts the scores");
      maskKind = classifyMask(mask, scoreShape);
      if (maskKind == MaskKind::Operand && outerScale != 1.0)
        return rewriter.notifyMatchFailure(
            op, "a mask added before the scale is neither causal nor zero");
    }

    Location loc = op.getLoc();
    double defaultScale = 1.0 / std::sqrt(static_cast<double>(qs[3]));
    FloatAttr scaleAttr = nearlyEqual(scale, defaultScale)
                              ? FloatAttr()
                              : rewriter.getF64FloatAttr(scale);
    Value kValue = k.build(rewriter, loc), vValue = v.build(rewriter, loc);
    if (whereMask && maskKind == MaskKind::Operand)
      mask = rewriter.create<WhereOp>(loc, whereMask.getCondition(), mask,
                                      whereMask.getOnFalse());
    for (size_t i = 1; i < maskTerms.size(); ++i)
      mask = rewriter.create<AddOp>(loc, mask, maskTerms[i]);
    auto raised = rewriter.replaceOpWithNewOp<AttentionOp>(
        op, q, kValue, vValue, maskKind == MaskKind::Operand ? mask : Value(),
        maskKind == MaskKind::Causal ? rewriter.getUnitAttr() : UnitAttr(),
        scaleAttr, /*seq_major=*/UnitAttr(),
        /*qkv_heads=*/nullptr);
    // SDPA's decomposition (both exporters) multiplies q and k^T by
    // sqrt(scale) each; any other form is the model's own eager code, which
    // PyTorch runs as separate ops: under autocast it rounds the scores and
    // the probabilities to bf16, where the fused op does not (docs/verify.md).
    if (!(qScale != 1.0 && kScale != 1.0 && nearlyEqual(qScale, kScale)))
      raised->setAttr(kEagerAttentionAttr, rewriter.getUnitAttr());
    return success();
  }
};

/// `x` when it is reshape(x4 : [B, H, X, Y] -> [B·H, X, Y]) with B, H
/// given (0 for "any"); sets B and H from x4 when they are 0.
static Value unflattenHeads(Value x, int64_t &B, int64_t &H) {
  auto r = x.getDefiningOp<ReshapeOp>();
  if (!r)
    return {};
  ArrayRef<int64_t> in = shapeOf(r.getInput()), out = shapeOf(x);
  if (in.size() != 4 || out.size() != 3 || in[0] * in[1] != out[0] ||
      in[2] != out[1] || in[3] != out[2] || (B && in[0] != B) ||
      (H && in[1] != H))
    return {};
  B = in[0];
  H = in[1];
  return r.getInput();
}

// Bloom computes attention on heads flattened into the batch, with ALiBi
// (`baddbmm`) added on that side and the mask on the [B, H] side:
//   s = reshape(scale * q3 @ k3^T + alibi : [B·H, T, S] -> [B, H, T, S])
//   o = reshape(reshape(softmax(s + mask)) @ v3 -> [B, H, T, Dv])
// with q3, k3, v3 the [B, H, ., .] tensors flattened. It is attention of the
// [B, H] tensors with the float mask reshape(alibi) + mask:
//   o = attention(q, k, v, mask = reshape(alibi : -> [B, H, 1, S]) + mask)
// DeBERTa-v2 has the same shape with its relative-position terms as the
// bias ([B·H, T, S], computed from q3, k3 and the position embeddings, so
// the mask operand has a gradient), k3^T divided by its scale, and
// masked_fill instead of the added mask:
//   s = where(c, fill, reshape(q3 @ (k3^T / s) + rel))
//   o = attention(q, k, v, mask = where(c, -inf, reshape(rel)), scale 1/s)
//       + where(all_s c, mean_s(v), 0)
// (a row whose every key is filled is uniform in PyTorch), with the where
// left out when c is a constant that drops nothing.
struct RaiseFlatHeadsAttention : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto pv = op.getInput().getDefiningOp<MatmulOp>();
    if (!pv || pv.getTransposeLhs() || pv.getTransposeRhs() ||
        !pv.getResult().hasOneUse() || shapeOf(op.getResult()).size() != 4)
      return rewriter.notifyMatchFailure(op, "not reshape(p3 @ v3)");
    int64_t B = 0, H = 0;
    // 1. Probabilities: reshape(softmax over the keys) of one use.
    Value p4 = unflattenHeads(pv.getLhs(), B, H);
    auto softmax = p4 ? p4.getDefiningOp<SoftmaxOp>() : SoftmaxOp();
    if (!softmax || !pv.getLhs().hasOneUse() || !p4.hasOneUse() ||
        (softmax.getAxis() != -1 && softmax.getAxis() != 3))
      return rewriter.notifyMatchFailure(op, "lhs is not flattened softmax");
    Value v = unflattenHeads(pv.getRhs(), B, H);
    ArrayRef<int64_t> os = shapeOf(op.getResult());
    if (!v || os[0] != B || os[1] != H)
      return rewriter.notifyMatchFailure(op, "v or the result not [B, H]");
    // 2. Scores: reshape([B·H] scores) plus an optional [B, H]-side mask,
    // added (Bloom) or filled in (DeBERTa's masked_fill: where(c, fill, s)).
    Value sc = softmax.getInput(), flat = sc, mask, cond, fill;
    bool fillOnTrue = false;
    if (!sc.hasOneUse())
      return rewriter.notifyMatchFailure(op, "scores have other uses");
    auto isFlat = [&](Value s) {
      return s.getDefiningOp<ReshapeOp>() && s.getType() == sc.getType() &&
             s.hasOneUse();
    };
    if (auto add = sc.getDefiningOp<AddOp>()) {
      for (auto [s, m] : {std::pair(add.getLhs(), add.getRhs()),
                          std::pair(add.getRhs(), add.getLhs())})
        if (isFlat(s) && isa<FloatType>(elementTypeOf(m))) {
          flat = s;
          mask = m;
          break;
        }
    } else if (auto w = sc.getDefiningOp<WhereOp>()) {
      for (bool onTrue : {false, true}) {
        Value s = onTrue ? w.getOnFalse() : w.getOnTrue();
        Value f = onTrue ? w.getOnTrue() : w.getOnFalse();
        auto fv = getScalarConstant(f);
        if (isFlat(s) && fv && *fv <= kMaskedScore) {
          flat = s;
          cond = w.getCondition();
          fill = f;
          fillOnTrue = onTrue;
          break;
        }
      }
    }
    auto unflat = flat.getDefiningOp<ReshapeOp>();
    if (!unflat || !unflat.getInput().hasOneUse() ||
        shapeOf(unflat.getInput()).size() != 3 ||
        shapeOf(unflat.getInput())[0] != B * H)
      return rewriter.notifyMatchFailure(op, "scores are not unflattened");
    // 3. The [B·H] side: scale * q3 @ k3^T, plus an optional bias (ALiBi,
    // DeBERTa's relative-position terms), with scales on q3 or k3^T too.
    Value s3 = unflat.getInput(), bias;
    if (auto add = s3.getDefiningOp<AddOp>())
      for (auto [x, y] : {std::pair(add.getLhs(), add.getRhs()),
                          std::pair(add.getRhs(), add.getLhs())})
        if (peelScale(x).first.getDefiningOp<MatmulOp>() &&
            x.getType() == s3.getType() && x.hasOneUse() &&
            isa<FloatType>(elementTypeOf(y))) {
          s3 = x;
          bias = y;
          break;
        }
    auto [qk, scale] = peelScale(s3);
    auto mm = qk.getDefiningOp<MatmulOp>();
    if (!mm || mm.getTransposeLhs() || (qk != s3 && !qk.hasOneUse()))
      return rewriter.notifyMatchFailure(op, "scores are not s q3 @ k3^T");
    auto [q3, qScale] = peelScale(mm.getLhs());
    auto [kt3, kScale] = peelScale(mm.getRhs());
    scale *= qScale * kScale;
    if (!(scale > 0) || !std::isfinite(scale))
      return rewriter.notifyMatchFailure(op, "scale is not positive");
    Value q = unflattenHeads(q3, B, H), k;
    if (mm.getTransposeRhs())
      k = unflattenHeads(kt3, B, H);
    else if (auto t = kt3.getDefiningOp<TransposeOp>();
             t && t.getPermutation() == ArrayRef<int64_t>{0, 2, 1})
      k = unflattenHeads(t.getInput(), B, H);
    if (!q || !k || shapeOf(q)[3] != shapeOf(k)[3] ||
        shapeOf(k)[2] != shapeOf(v)[2] || os[2] != shapeOf(q)[2] ||
        os[3] != shapeOf(v)[3])
      return rewriter.notifyMatchFailure(op, "q or k not [B, H] tensors");
    // 4. The mask: reshape(bias) on the [B, H] side, plus the mask.
    SmallVector<int64_t> scoreShape(shapeOf(sc));
    SmallVector<int64_t> biasShape;
    if (bias) {
      ArrayRef<int64_t> bs = shapeOf(bias);
      if (bs.size() != 3 || bs[0] != B * H ||
          (bs[1] != 1 && bs[1] != scoreShape[2]) || bs[2] != scoreShape[3])
        return rewriter.notifyMatchFailure(op, "bias is not [B·H, 1|T, S]");
      biasShape = {B, H, bs[1], bs[2]};
    }
    if ((mask && !isBroadcastableTo(shapeOf(mask), scoreShape)) ||
        (cond && !isBroadcastableTo(shapeOf(cond), scoreShape)))
      return rewriter.notifyMatchFailure(op, "mask broadcasts the scores");
    MaskKind kind = MaskKind::None;
    if (mask && !bias) {
      kind = classifyMask(mask, scoreShape);
    } else if (bias && !cond) {
      kind = MaskKind::Operand;
    } else if (cond) {
      // A constant fill that drops nothing (no padding) or exactly the
      // future keys is no mask or `causal`; the bias stays an operand.
      auto c = maskValues(cond);
      if (c && fillOnTrue)
        for (double &x : c->values)
          x = x == 0;
      kind = c ? classifyValues(*c, true, scoreShape) : MaskKind::Operand;
    }

    Location loc = op.getLoc();
    Value operand;
    if (bias) {
      auto type = RankedTensorType::get(biasShape, elementTypeOf(bias));
      operand = rewriter.create<ReshapeOp>(loc, type, bias);
      if (mask)
        operand = rewriter.create<AddOp>(loc, operand, mask);
    } else if (kind == MaskKind::Operand) {
      operand = mask;
    }
    // The filled positions become -inf (no key), so that a row whose every
    // key is filled (DeBERTa's padded queries) gets output 0 and no
    // gradient from the op; PyTorch's softmax of that row of equal finite
    // fills is uniform, and its where passes no gradient to the scores:
    // the output there is mean(v), added below.
    Value rowsAllFilled;
    if (cond && kind == MaskKind::Operand) {
      auto fillType = cast<RankedTensorType>(fill.getType());
      auto splat = [&](double x) -> Value {
        auto type = RankedTensorType::get({}, fillType.getElementType());
        return rewriter.create<ConstantOp>(
            loc, DenseElementsAttr::get(type, rewriter.getFloatAttr(
                                                  type.getElementType(), x)));
      };
      Value kept = operand ? operand : splat(0.0);
      Value none = splat(-INFINITY);
      operand = fillOnTrue ? rewriter.create<WhereOp>(loc, cond, none, kept)
                           : rewriter.create<WhereOp>(loc, cond, kept, none);
      auto c = maskValues(cond);
      if (std::isfinite(*getScalarConstant(fill)) &&
          (!c || anyRowAllFilled(*c, fillOnTrue))) {
        // all_s(filled) = (sum_s cast(cond) == (fillOnTrue ? S_c : 0))
        auto condType = cast<RankedTensorType>(cond.getType());
        int64_t last = condType.getRank() - 1;
        Value count = rewriter.create<ReduceSumOp>(
            loc,
            rewriter.create<CastOp>(
                loc, condType.clone(fillType.getElementType()), cond),
            rewriter.getDenseI64ArrayAttr({last}), rewriter.getUnitAttr());
        rowsAllFilled = rewriter.create<CompareOp>(
            loc, ComparePredicate::eq, count,
            splat(fillOnTrue ? condType.getDimSize(last) : 0));
      }
    }
    double defaultScale = 1.0 / std::sqrt(static_cast<double>(shapeOf(q)[3]));
    FloatAttr scaleAttr = nearlyEqual(scale, defaultScale)
                              ? FloatAttr()
                              : rewriter.getF64FloatAttr(scale);
    auto raised = rewriter.create<AttentionOp>(
        loc, q, k, v, operand,
        kind == MaskKind::Causal ? rewriter.getUnitAttr() : UnitAttr(),
        scaleAttr, /*seq_major=*/UnitAttr(), /*qkv_heads=*/nullptr);
    // One scale on the scores: eager code (baddbmm), not SDPA's form.
    raised->setAttr(kEagerAttentionAttr, rewriter.getUnitAttr());
    Value result = raised;
    if (rowsAllFilled) {
      Value meanV = rewriter.create<ReduceMeanOp>(
          loc, v, rewriter.getDenseI64ArrayAttr({2}), rewriter.getUnitAttr());
      auto zeroType = RankedTensorType::get({}, elementTypeOf(v));
      Value zero = rewriter.create<ConstantOp>(
          loc, cast<DenseElementsAttr>(rewriter.getZeroAttr(zeroType)));
      result = rewriter.create<AddOp>(
          loc, result,
          rewriter.create<WhereOp>(loc, rowsAllFilled, meanV, zero));
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct RaiseAttentionPass : mlir::llmc::impl::RaiseAttentionPassBase<RaiseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateRaiseAttentionPatterns(patterns);
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  getArgument())))
      signalPassFailure();
  }
};

} // namespace

void mlir::llmc::populateRaiseAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseAttention, RaiseFlatHeadsAttention>(patterns.getContext());
}
