//===- AttentionCudnn.cpp - attention ops as cuDNN steps ------------------===//
#include "compiler/codegen/AttentionCudnn.h"

namespace llmc::codegen {

namespace {

bool isHalfType(mlir::Type t) { return t.isBF16() || t.isF16(); }

/// Element strides of batch, head, row and head dim of a [B, H, T, D]
/// view (`seqMajor`: stored [B, T, H, D]) whose token rows hold `heads`
/// heads (the packed count for a head window of a packed qkv).
std::array<int64_t, 4> viewStrides(int64_t heads, int64_t rows, int64_t dim,
                                   bool seqMajor) {
  return {heads * rows * dim, seqMajor ? dim : rows * dim,
          seqMajor ? heads * dim : dim, 1};
}

} // namespace

std::array<int64_t, 4> cudnnViewStrides(const AttentionParts &a, unsigned i) {
  Shape shape = i == 3 ? a.qShape() : a.operandShape(i);
  int64_t heads = i == 3 ? shape[1] : a.rowHeads(i);
  return viewStrides(heads, shape[2], shape[3], a.seqMajor);
}

std::string cudnnAttentionRefusal(const AttentionParts &a) {
  mlir::Type t = elementTypeOf(a.query);
  if (!isHalfType(t) || elementTypeOf(a.key) != t ||
      elementTypeOf(a.value) != t)
    return "q, k and v are not all bf16 or all f16";
  if (a.mask)
    return "a mask operand (cuDNN's graphs here take causal only)";
  Shape q = a.qShape(), k = a.kShape(), v = a.vShape();
  if (q[3] != v[3])
    return "the value head dim differs from the query's";
  if (q[3] % 8 != 0 || q[3] > 128)
    return "head dim " + std::to_string(q[3]) +
           " (cuDNN: a multiple of 8, at most 128)";
  if (q[1] % k[1] != 0)
    return "query heads not a multiple of the key/value heads";
  if (a.causal && q[2] != k[2])
    return "causal with different query and key lengths";
  return "";
}

bool lowerAttentionToCudnn(const AttentionParts &a, bool backward,
                           const EmitContext &ctx, OpLowering &out) {
  mlir::Operation *op = a.op;
  // `auto` marks the ops it measured faster on cuDNN (AttentionBackend.h).
  bool wanted =
      ctx.options.cudnnAttention || op->hasAttr("llmc.cudnn_attention");
  if (!wanted || !cudnnAttentionRefusal(a).empty())
    return false;
  if (!backward && !elementTypeOf(op->getResult(1)).isF32())
    return false;
  if (backward && !elementTypeOf(op->getOperand(4)).isF32())
    return false;
  Shape q = a.qShape(), k = a.kShape();
  AttentionStep s;
  s.backward = backward;
  s.dtype = elementTypeOf(a.query).isBF16() ? DType::BF16 : DType::F16;
  s.causal = a.causal;
  // The mark says how plannedPeak's lowering (default options) and the
  // compile's agree on the backward (AttentionBackend.h).
  auto mode = op->getAttrOfType<mlir::StringAttr>("llmc.cudnn_attention");
  s.deterministic = ctx.options.deterministicAttention &&
                    !(mode && mode.getValue() == "atomic");
  s.scale = a.scale;
  s.b = q[0], s.hq = q[1], s.hkv = k[1], s.sq = q[2], s.skv = k[2];
  s.d = q[3];
  s.q.strides = cudnnViewStrides(a, 0);
  s.k.strides = cudnnViewStrides(a, 1);
  s.v.strides = cudnnViewStrides(a, 2);
  s.o.strides = cudnnViewStrides(a, 3);
  s.stats.strides = {q[1] * q[2], q[2], 1, 1};
  out.attentionArgs = {a.qkvArg(0), a.qkvArg(1), a.qkvArg(2)};
  if (!backward) {
    out.attentionArgs.push_back(KernelArg::result(0));
    out.attentionArgs.push_back(KernelArg::result(1));
  } else {
    s.dO.strides = s.o.strides;
    s.dQ.strides = s.q.strides;
    s.dK.strides = s.k.strides;
    s.dV.strides = s.v.strides;
    out.attentionArgs.push_back(KernelArg::operand(3));
    out.attentionArgs.push_back(KernelArg::operand(4));
    out.attentionArgs.push_back(KernelArg::operand(5));
    out.attentionArgs.push_back(a.gradArg(0));
    out.attentionArgs.push_back(a.gradArg(1));
    out.attentionArgs.push_back(a.gradArg(2));
  }
  out.kind = OpLowering::Kind::Attention;
  out.attention = s;
  return true;
}

} // namespace llmc::codegen
