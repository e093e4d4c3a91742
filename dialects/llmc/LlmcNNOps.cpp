//===- LlmcNNOps.cpp - Verifiers and inference of the composite ops -------===//
//
// matmul, normalization, softmax, attention, rotary and cross_entropy. Each
// check prints the shapes involved, since these are the errors a user sees
// when an imported graph does not mean what the raising passes assumed.
//
//===----------------------------------------------------------------------===//
#include "dialects/llmc/InferUtils.h"
#include "dialects/llmc/LlmcOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmc;


//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor a,
                                         SmallVectorImpl<Type> &out) {
  auto lhs = rankedOf(a.getLhs()), rhs = rankedOf(a.getRhs());
  if (lhs.getElementType() != rhs.getElementType())
    return inferError<MatmulOp>(loc, "operand element types differ: ",
                                lhs.getElementType(), " vs ",
                                rhs.getElementType());
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return inferError<MatmulOp>(loc, "operands need rank 2 or more, got ",
                                shapeToString(lhs.getShape()), " and ",
                                shapeToString(rhs.getShape()));
  int64_t lr = lhs.getRank(), rr = rhs.getRank();
  int64_t m = lhs.getDimSize(a.getTransposeLhs() ? lr - 1 : lr - 2);
  int64_t kl = lhs.getDimSize(a.getTransposeLhs() ? lr - 2 : lr - 1);
  int64_t kr = rhs.getDimSize(a.getTransposeRhs() ? rr - 1 : rr - 2);
  int64_t n = rhs.getDimSize(a.getTransposeRhs() ? rr - 2 : rr - 1);
  if (dimsConflict(kl, kr))
    return inferError<MatmulOp>(
        loc, "contraction dims differ: lhs ", shapeToString(lhs.getShape()),
        a.getTransposeLhs() ? " (transposed)" : "", " has K = ", kl,
        ", rhs ", shapeToString(rhs.getShape()),
        a.getTransposeRhs() ? " (transposed)" : "", " has K = ", kr);
  auto batch = broadcastShapes(lhs.getShape().drop_back(2),
                               rhs.getShape().drop_back(2));
  if (!batch)
    return inferError<MatmulOp>(loc, "batch dims ",
                                shapeToString(lhs.getShape().drop_back(2)),
                                " and ",
                                shapeToString(rhs.getShape().drop_back(2)),
                                " are not broadcast-compatible");
  SmallVector<int64_t> shape = std::move(*batch);
  shape.push_back(m);
  shape.push_back(n);
  out.push_back(lhs.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor a,
                                            SmallVectorImpl<Type> &out) {
  auto input = rankedOf(a.getInput());
  auto axis = normAxis<LayerNormOp>(loc, input, a.getAxis());
  if (failed(axis) ||
      failed(checkNormParam<LayerNormOp>(loc, input, *axis, a.getWeight(),
                                         "weight")) ||
      failed(checkNormParam<LayerNormOp>(loc, input, *axis, a.getBias(),
                                         "bias")))
    return failure();
  if (a.getEpsilon().convertToDouble() < 0)
    return inferError<LayerNormOp>(loc, "epsilon must not be negative");
  out.push_back(input);
  return success();
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor a,
                                          SmallVectorImpl<Type> &out) {
  auto input = rankedOf(a.getInput());
  auto axis = normAxis<RmsNormOp>(loc, input, a.getAxis());
  if (failed(axis) ||
      failed(checkNormParam<RmsNormOp>(loc, input, *axis, a.getWeight(),
                                       "weight")))
    return failure();
  if (a.getEpsilon().convertToDouble() < 0)
    return inferError<RmsNormOp>(loc, "epsilon must not be negative");
  out.push_back(input);
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax, LogSoftmax
//===----------------------------------------------------------------------===//

template <typename OpTy> static LogicalResult verifySoftmax(OpTy op) {
  int64_t rank = op.getInput().getType().getRank();
  if (rank == 0)
    return op.emitOpError("needs an operand of rank 1 or more");
  if (!normalizeAxis(op.getAxis(), rank))
    return op.emitOpError("axis ")
           << op.getAxis() << " is out of range for rank " << rank;
  return success();
}

LogicalResult DropoutMaskOp::verify() {
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0 && ratio < 1))
    return emitOpError("ratio ") << ratio << " is not in [0, 1)";
  if (getOffset() < 0 || getOffset() > int64_t(UINT32_MAX))
    return emitOpError("offset ") << getOffset() << " is not in [0, 2^32)";
  auto type = getResult().getType();
  // The element index is one 32-bit word of the Philox counter.
  if (!type.hasStaticShape() || type.getNumElements() > int64_t(UINT32_MAX))
    return emitOpError("needs a static shape of fewer than 2^32 elements");
  return success();
}

LogicalResult SoftmaxOp::verify() { return verifySoftmax(*this); }
LogicalResult LogSoftmaxOp::verify() { return verifySoftmax(*this); }

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

/// Checks attention's operands (shared by attention, attention_lse and
/// attention_grad, whose messages name their own op) and returns the output
/// shape [B, Hq, T, Dv].
FailureOr<SmallVector<int64_t>>
mlir::llmc::inferAttentionShape(std::optional<Location> loc, StringRef opName,
                                Value query, Value key, Value value, Value mask,
                                std::optional<APFloat> scale,
                                bool seqMajor, ArrayRef<int64_t> qkvHeads) {
  auto fail = [&](auto &&...args) -> FailureOr<SmallVector<int64_t>> {
    (void)inferErrorNamed(loc, opName, std::forward<decltype(args)>(args)...);
    return failure();
  };
  auto q = rankedOf(query), k = rankedOf(key), v = rankedOf(value);
  for (auto [name, t] : {std::pair<StringRef, RankedTensorType>{"query", q},
                         {"key", k},
                         {"value", v}}) {
    if (t.getRank() != 4)
      return fail(name, " must be [batch, heads, seq, head_dim], got ",
                  shapeToString(t.getShape()));
    if (t.getElementType() != q.getElementType())
      return fail(name, " has element type ", t.getElementType(),
                  " but query has ", q.getElementType());
  }
  // Checked as [B, H, T, D] whatever the layout, so messages read the same.
  SmallVector<int64_t> qs = attentionLogicalShape(q.getShape(), seqMajor),
                       ks = attentionLogicalShape(k.getShape(), seqMajor),
                       vs = attentionLogicalShape(v.getShape(), seqMajor);
  if (!qkvHeads.empty()) {
    if (!seqMajor)
      return fail("qkv_heads needs seq_major ([batch, seq, heads, head_dim] "
                  "operands)");
    if (qkvHeads.size() != 2 || qkvHeads[0] <= 0 || qkvHeads[1] <= 0)
      return fail("qkv_heads must be [query heads, key/value heads], both "
                  "positive");
    int64_t packed = qkvHeads[0] + 2 * qkvHeads[1];
    for (auto [name, s] : {std::pair<StringRef, SmallVector<int64_t> &>{
                               "query", qs},
                           {"key", ks},
                           {"value", vs}})
      if (dimsConflict(s[1], packed))
        return fail(name, " has ", s[1], " heads but qkv_heads [",
                    qkvHeads[0], ", ", qkvHeads[1], "] packs ", packed);
    qs[1] = qkvHeads[0];
    ks[1] = vs[1] = qkvHeads[1];
  }
  if (dimsConflict(qs[0], ks[0]) || dimsConflict(ks[0], vs[0]))
    return fail("batch sizes differ: query ", shapeToString(qs), ", key ",
                shapeToString(ks), ", value ", shapeToString(vs));
  if (dimsConflict(qs[3], ks[3]))
    return fail("query head_dim ", qs[3], " differs from key head_dim ", ks[3]);
  if (dimsConflict(ks[1], vs[1]) || dimsConflict(ks[2], vs[2]))
    return fail("key ", shapeToString(ks), " and value ", shapeToString(vs),
                " differ in heads or seq");
  if (!ShapedType::isDynamic(qs[1]) && !ShapedType::isDynamic(ks[1]) &&
      (ks[1] == 0 || qs[1] % ks[1] != 0))
    return fail("query heads (", qs[1],
                ") must be a multiple of key/value heads (", ks[1],
                ") for grouped-query attention");
  if (scale && !(scale->convertToDouble() > 0))
    return fail("scale must be positive");
  if (mask) {
    auto m = rankedOf(mask);
    if (!m.getElementType().isInteger(1) &&
        m.getElementType() != q.getElementType())
      return fail("mask must be i1 or ", q.getElementType(), ", got ",
                  m.getElementType());
    SmallVector<int64_t> scores = {qs[0], qs[1], qs[2], ks[2]};
    if (!isBroadcastableTo(m.getShape(), scores))
      return fail("mask ", shapeToString(m.getShape()),
                  " does not broadcast to the scores [batch, heads, T, S] = ",
                  shapeToString(scores));
  }
  return attentionLogicalShape({qs[0], qs[1], qs[2], vs[3]}, seqMajor);
}

SmallVector<int64_t> mlir::llmc::attentionLogicalShape(ArrayRef<int64_t> shape,
                                                       bool seqMajor) {
  SmallVector<int64_t> out(shape);
  if (seqMajor && out.size() == 4)
    std::swap(out[1], out[2]);
  return out;
}

ArrayRef<int64_t>
mlir::llmc::qkvHeadsOrEmpty(std::optional<ArrayRef<int64_t>> heads) {
  return heads ? *heads : ArrayRef<int64_t>();
}

static ArrayRef<int64_t> qkvHeadsOf(Operation *op) {
  if (auto heads = op->getAttrOfType<DenseI64ArrayAttr>("qkv_heads"))
    return heads.asArrayRef();
  return {};
}

SmallVector<int64_t> mlir::llmc::attentionOperandShape(Operation *op,
                                                       unsigned index) {
  SmallVector<int64_t> shape = attentionLogicalShape(
      rankedOf(op->getOperand(index)).getShape(), op->hasAttr("seq_major"));
  ArrayRef<int64_t> heads = qkvHeadsOf(op);
  if (heads.size() == 2)
    shape[1] = index == 0 ? heads[0] : heads[1];
  return shape;
}

int64_t mlir::llmc::attentionHeadOffset(Operation *op, unsigned index) {
  ArrayRef<int64_t> heads = qkvHeadsOf(op);
  if (heads.size() != 2 || index == 0)
    return 0;
  return index == 1 ? heads[0] : heads[0] + heads[1];
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
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
  return success();
}

double AttentionOp::getScaleOrDefault() {
  if (auto s = getScale())
    return s->convertToDouble();
  int64_t d = getQuery().getType().getDimSize(3);
  return 1.0 / std::sqrt(static_cast<double>(d));
}

//===----------------------------------------------------------------------===//
// RotaryOp
//===----------------------------------------------------------------------===//

LogicalResult RotaryOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc, Adaptor a,
                                         SmallVectorImpl<Type> &out) {
  auto x = rankedOf(a.getInput()), c = rankedOf(a.getCos()),
       s = rankedOf(a.getSin());
  if (x.getRank() < 2)
    return inferError<RotaryOp>(loc, "input must be [..., seq, dim], got ",
                                shapeToString(x.getShape()));
  if (c != s)
    return inferError<RotaryOp>(loc, "cos ", c, " and sin ", s,
                                " must have the same type");
  if (c.getElementType() != x.getElementType())
    return inferError<RotaryOp>(loc, "tables have element type ",
                                c.getElementType(), " but the input has ",
                                x.getElementType());
  if (c.getRank() < 2 || c.getRank() > x.getRank())
    return inferError<RotaryOp>(loc, "tables must be [..., seq, rotary_dim] "
                                     "with rank 2 to ",
                                x.getRank(), ", got ",
                                shapeToString(c.getShape()));
  int64_t r = c.getShape().back(), d = x.getShape().back();
  if (ShapedType::isDynamic(r) || r % 2 != 0)
    return inferError<RotaryOp>(loc, "rotary_dim (last dim of the tables) "
                                     "must be static and even, got ",
                                shapeToString(c.getShape()));
  if (!ShapedType::isDynamic(d) && r > d)
    return inferError<RotaryOp>(loc, "rotary_dim ", r,
                                " exceeds the input's last dim ", d);
  SmallVector<int64_t> target(x.getShape());
  target.back() = r;
  if (!isBroadcastableTo(c.getShape(), target))
    return inferError<RotaryOp>(loc, "tables ", shapeToString(c.getShape()),
                                " do not broadcast to the input's ",
                                shapeToString(target));
  out.push_back(x);
  return success();
}

//===----------------------------------------------------------------------===//
// CrossEntropyOp
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor a,
                                               SmallVectorImpl<Type> &out) {
  auto loss = crossEntropyLossType<CrossEntropyOp>(
      loc, rankedOf(a.getLogits()), rankedOf(a.getTargets()),
      a.getReduction() == LossReduction::none);
  if (failed(loss))
    return failure();
  out.push_back(*loss);
  return success();
}

int64_t CrossEntropyOp::getClassCount() {
  if (std::optional<int64_t> c = getClasses())
    return *c;
  return getLogits().getType().getShape().back();
}

LogicalResult CrossEntropyOp::verify() { return verifyClasses(*this); }
