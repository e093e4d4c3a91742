//===- LlmcNNVjps.cpp - Gradient rules of matmul and the composites -------===//
//
// DifferentiableOpInterface for matmul and the transformer composites. The
// composites map to their fused backward ops (LlmcGradOps.td), so each
// becomes one backward kernel. Two rules do more than that:
// - attention: the backward needs the softmax log-sum-exp of the forward
//   pass, so the rule replaces the forward `attention` by `attention_lse`
//   (same result, plus lse) and feeds lse to `attention_grad`. A float
//   mask with a gradient (a learned relative-position bias) gets dS, built
//   from primitive ops next to the fused backward.
// - rotary: the adjoint of a rotation is the rotation by the negated angle,
//   so dx is itself a `rotary` (see RotaryOp::buildVjp for the exact tables).
//
//===----------------------------------------------------------------------===//
#include "dialects/llmc/LlmcOps.h"
#include "dialects/llmc/VjpUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::vjp;

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

static Value matmul(OpBuilder &b, Location loc, Value x, Value y, bool tx,
                    bool ty) {
  return b.create<MatmulOp>(loc, x, y, tx ? b.getUnitAttr() : UnitAttr(),
                            ty ? b.getUnitAttr() : UnitAttr());
}

/// Flattens the batch dims of a [..., R, C] tensor into its rows: [N*R, C].
static Value flattenRows(GradBuilder &b, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rows = 1;
  for (int64_t d : type.getShape().drop_back())
    rows *= d;
  return b.reshape(x, {rows, type.getShape().back()});
}

LogicalResult MatmulOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                 ArrayRef<bool> wanted,
                                 SmallVectorImpl<Value> &out) {
  // With op(A) = A or A^T as stored, C = op(A) op(B):
  //   tA tB | dA              | dB
  //   -  -  | g B^T           | A^T g
  //   -  T  | g B             | g^T A
  //   T  -  | B g^T           | A g
  //   T  T  | B^T g^T         | g^T A^T
  // Batch dims broadcast in the forward pass, so each result is summed
  // back to its operand's shape.
  GradBuilder b(builder, getLoc());
  Location loc = getLoc();
  Value g = resultGrads[0], lhs = getLhs(), rhs = getRhs();
  bool tA = getTransposeLhs(), tB = getTransposeRhs();
  if (wanted[0]) {
    Value d = !tA ? (tB ? matmul(builder, loc, g, rhs, false, false)
                        : matmul(builder, loc, g, rhs, false, true))
                  : (tB ? matmul(builder, loc, rhs, g, true, true)
                        : matmul(builder, loc, rhs, g, false, true));
    out[0] = b.sumToShape(d, lhs.getType());
  }
  if (wanted[1]) {
    auto lhsType = cast<RankedTensorType>(lhs.getType());
    auto rhsType = cast<RankedTensorType>(rhs.getType());
    Value d;
    if (!tA && rhsType.getRank() == 2 && lhsType.getRank() > 2) {
      // A shared weight times batched activations (every linear layer):
      // fold the batch into the rows so dB is one GEMM instead of a
      // batched GEMM and a reduction.
      Value a2 = flattenRows(b, lhs), g2 = flattenRows(b, g);
      d = tB ? matmul(builder, loc, g2, a2, true, false)
             : matmul(builder, loc, a2, g2, true, false);
    } else {
      d = !tA ? (tB ? matmul(builder, loc, g, lhs, true, false)
                    : matmul(builder, loc, lhs, g, true, false))
              : (tB ? matmul(builder, loc, g, lhs, true, true)
                    : matmul(builder, loc, lhs, g, false, false));
    }
    out[1] = b.sumToShape(d, rhsType);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Activations, normalization, softmax
//===----------------------------------------------------------------------===//

LogicalResult GeluOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                               ArrayRef<bool>, SmallVectorImpl<Value> &out) {
  out[0] = builder.create<GeluGradOp>(getLoc(), getApproximationAttr(),
                                      getInput(), resultGrads[0]);
  return success();
}

LogicalResult SiluOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                               ArrayRef<bool>, SmallVectorImpl<Value> &out) {
  out[0] = builder.create<SiluGradOp>(getLoc(), getInput(), resultGrads[0]);
  return success();
}

LogicalResult LayerNormOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &out) {
  // Operands are input, weight?, bias? (in that order when present).
  unsigned weightIdx = 1, biasIdx = getWeight() ? 2 : 1;
  bool biasGrad = getBias() && wanted[biasIdx];
  auto op = builder.create<LayerNormGradOp>(
      getLoc(), getInput(), resultGrads[0], getWeight(), getAxisAttr(),
      getEpsilonAttr(), biasGrad ? builder.getUnitAttr() : UnitAttr());
  out[0] = op.getDx();
  if (getWeight() && wanted[weightIdx])
    out[weightIdx] = op.getDweight();
  if (biasGrad)
    out[biasIdx] = op.getDbias();
  return success();
}

LogicalResult RmsNormOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                  ArrayRef<bool> wanted,
                                  SmallVectorImpl<Value> &out) {
  auto op = builder.create<RmsNormGradOp>(getLoc(), getInput(), resultGrads[0],
                                          getWeight(), getAxisAttr(),
                                          getEpsilonAttr());
  out[0] = op.getDx();
  if (getWeight() && wanted[1])
    out[1] = op.getDweight();
  return success();
}

LogicalResult SoftmaxOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                  ArrayRef<bool>, SmallVectorImpl<Value> &out) {
  out[0] = builder.create<SoftmaxGradOp>(getLoc(), getResult(), resultGrads[0],
                                         getAxisAttr());
  return success();
}

LogicalResult LogSoftmaxOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                     ArrayRef<bool>,
                                     SmallVectorImpl<Value> &out) {
  out[0] = builder.create<LogSoftmaxGradOp>(getLoc(), getResult(),
                                            resultGrads[0], getAxisAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

/// The scores' gradient dS = P * (dP - rowsum(dO * O)) of attention, with
/// P = exp(scale * q k^T + mask - lse) rebuilt from the forward's lse and
/// dP = dO v^T, in lse's type (f32, or f64 in reference runs) whatever the
/// operands were lowered to, as the fused backward computes it. The mask
/// is added after the scale, so dS is also d(mask) before its broadcast
/// sum. Materializes [B, Hq, T, S]: the price of a mask with a gradient
/// (relative-position biases), which the fused kernels do not produce.
static Value attentionScoresGrad(GradBuilder &b, AttentionOp op, Value out,
                                 Value lse, Value dout) {
  OpBuilder &builder = b.builder();
  Location loc = b.location();
  Type work = getElementTypeOrSelf(lse.getType());
  auto widen = [&](Value x) -> Value {
    auto type = cast<RankedTensorType>(x.getType());
    if (type.getElementType() == work)
      return x;
    return builder.create<CastOp>(loc, type.clone(work), x);
  };
  ArrayRef<int64_t> qs = cast<RankedTensorType>(op.getQuery().getType())
                             .getShape();
  ArrayRef<int64_t> ks = cast<RankedTensorType>(op.getKey().getType())
                             .getShape();
  int64_t B = qs[0], Hq = qs[1], T = qs[2], Hkv = ks[1], S = ks[2];
  // x [B, Hq, T, X] times y^T for y [B, Hkv, S, X]: grouped-query heads
  // split as [B, Hkv, G, T, X] so the key/value head broadcasts over G.
  auto timesT = [&](Value x, Value y) -> Value {
    x = widen(x);
    y = widen(y);
    if (Hq == Hkv)
      return matmul(builder, loc, x, y, false, true);
    int64_t X = cast<RankedTensorType>(x.getType()).getShape().back();
    Value p = matmul(builder, loc, b.reshape(x, {B, Hkv, Hq / Hkv, T, X}),
                     b.reshape(y, {B, Hkv, 1, S, X}), false, true);
    return b.reshape(p, {B, Hq, T, S});
  };
  Value z = b.scale(timesT(op.getQuery(), op.getKey()),
                    op.getScaleOrDefault());
  z = b.add(z, widen(op.getMask()));
  if (op.getCausal()) {
    SmallVector<bool> keep(T * S);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t s = 0; s < S; ++s)
        keep[t * S + s] = s <= t + S - T;
    auto type = RankedTensorType::get({T, S}, builder.getI1Type());
    Value c = builder.create<ConstantOp>(
        loc, DenseElementsAttr::get(type, ArrayRef<bool>(keep)));
    z = b.where(c, z, b.scalar(work, -INFINITY));
  }
  // A row that sees no key has lse = -inf and no gradient (exp(-inf + inf)
  // would be NaN).
  Value rowLse = b.reshape(lse, {B, Hq, T, 1});
  Value p = b.where(b.compare(ComparePredicate::eq, rowLse,
                              b.scalar(work, -INFINITY)),
                    b.scalar(work, 0.0), b.unary<ExpOp>(b.sub(z, rowLse)));
  Value dp = timesT(dout, op.getValue());
  Value rowDot = b.reduceSum(b.mul(widen(dout), widen(out)), {3},
                             /*keepdims=*/true);
  return b.mul(p, b.sub(dp, rowDot));
}

LogicalResult AttentionOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &out) {
  bool maskGrad = getMask() && wanted[3];
  if (maskGrad && getSeqMajor())
    return emitOpError("gradient with respect to the attention mask is not "
                       "supported with seq_major; the mask must not depend "
                       "on a trainable parameter (mark it llmc.frozen)");
  if (getQkvHeads())
    return emitOpError("cannot differentiate attention with qkv_heads: "
                       "llmc-fold-qkv-slices runs after autodiff");
  // Recompute nothing: the forward pass itself switches to attention_lse,
  // which yields the same result and the row log-sum-exp.
  AttentionLseOp forward;
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(*this);
    forward = builder.create<AttentionLseOp>(getLoc(), getQuery(), getKey(),
                                             getValue(), getMask(),
                                             getCausalAttr(), getScaleAttr(),
                                             getSeqMajorAttr(),
                                             /*qkv_heads=*/nullptr);
  }
  getResult().replaceAllUsesWith(forward.getResult());
  auto grad = builder.create<AttentionGradOp>(
      getLoc(), getQuery(), getKey(), getValue(), forward.getResult(),
      forward.getLse(), resultGrads[0], getMask(), getCausalAttr(),
      getScaleAttr(), getSeqMajorAttr(), /*qkv_heads=*/nullptr);
  out[0] = grad.getDquery();
  out[1] = grad.getDkey();
  out[2] = grad.getDvalue();
  if (maskGrad) {
    GradBuilder b(builder, getLoc());
    Value ds = attentionScoresGrad(b, *this, forward.getResult(),
                                   forward.getLse(), resultGrads[0]);
    auto maskType = cast<RankedTensorType>(getMask().getType());
    Value dmask = b.sumToShape(ds, maskType.clone(getElementTypeOrSelf(ds)));
    if (dmask.getType() != maskType)
      dmask = builder.create<CastOp>(getLoc(), maskType, dmask);
    out[3] = dmask;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// RotaryOp
//===----------------------------------------------------------------------===//

/// rotate(u): the partner feature of each pair, negated for the first of the
/// pair: concat(-u[R/2:], u[:R/2]), or [-u1, u0, -u3, u2, ...] interleaved.
static Value rotate(GradBuilder &b, Value u, bool interleaved, bool negate) {
  auto type = cast<RankedTensorType>(u.getType());
  int64_t r = type.getShape().back();
  auto firstNeg = [&](Value v) { return negate ? b.neg(v) : v; };
  if (!interleaved)
    return b.concatLast(
        {firstNeg(b.sliceLast(u, r / 2, r)), b.sliceLast(u, 0, r / 2)});
  SmallVector<int64_t> pairs(type.getShape().drop_back());
  pairs.append({r / 2, 2});
  Value p = b.reshape(u, pairs);
  Value swapped =
      b.concatLast({firstNeg(b.sliceLast(p, 1, 2)), b.sliceLast(p, 0, 1)});
  return b.reshape(swapped, type.getShape());
}

LogicalResult RotaryOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                 ArrayRef<bool> wanted,
                                 SmallVectorImpl<Value> &out) {
  // Forward, on the first R features: y = x * cos + rotate(x) * sin. Its
  // adjoint is dx = g * cos - rotate(g * sin), which is again a rotary:
  // rotary(g, cos, -swap(sin)), where swap exchanges the two table entries
  // of each pair (rotate without the sign). With the usual tables (each
  // angle stored for both features of a pair) swap(sin) = sin and this is
  // the rotation by -theta.
  GradBuilder b(builder, getLoc());
  Value g = resultGrads[0], x = getInput();
  bool inter = getInterleaved();
  if (wanted[0]) {
    Value sinT = b.neg(rotate(b, getSin(), inter, /*negate=*/false));
    out[0] = builder.create<RotaryOp>(getLoc(), g, getCos(), sinT,
                                      getInterleavedAttr());
  }
  if (wanted[1] || wanted[2]) {
    // Tables that depend on parameters (a learned inv_freq): dcos = g * x,
    // dsin = g * rotate(x) on the rotated features, summed to the tables.
    int64_t r = cast<RankedTensorType>(getCos().getType()).getShape().back();
    Value gr = b.sliceLast(g, 0, r), xr = b.sliceLast(x, 0, r);
    if (wanted[1])
      out[1] = b.sumToShape(b.mul(gr, xr), getCos().getType());
    if (wanted[2])
      out[2] = b.sumToShape(b.mul(gr, rotate(b, xr, inter, /*negate=*/true)),
                            getSin().getType());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// CrossEntropyOp
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::buildVjp(OpBuilder &builder,
                                       ValueRange resultGrads, ArrayRef<bool>,
                                       SmallVectorImpl<Value> &out) {
  out[0] = builder.create<CrossEntropyGradOp>(
      getLoc(), getReductionAttr(), getLogits(), getTargets(), resultGrads[0],
      getIgnoreIndexAttr(), getClassesAttr());
  return success();
}
