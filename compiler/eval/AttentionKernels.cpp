//===- AttentionKernels.cpp - attention, rotary, cross_entropy ------------===//
//
// attention: softmax(scale * q k^T + mask) v per batch and query head, in
// double. Masked scores are -inf (causal: key s > t + S - T; i1 mask: false).
// A query row whose scores are all -inf gives a zero output row, as
// PyTorch's scaled_dot_product_attention does since 2.5 (_safe_softmax); this
// is also what an exporter's `where(isnan(softmax), 0, softmax)` guard
// computes, which the attention raising pattern absorbs.
//
// rotary: y = x * cos + rotate(x) * sin on the first R features (R = the
// tables' last dim); rotate pairs feature i with i +- R/2 ("rotate half") or,
// with `interleaved`, 2j with 2j+1 (GPT-J). Tables hold one angle per
// feature, so the interleaved form expects each angle twice in a row.
//
// `llmc.eager_rounding` (set only by `llmc verify`, on attention raised from
// eager code, docs/verify.md) evaluates a bf16/f16 attention as PyTorch's
// eager ops do under autocast: the scores rounded as a matmul result, the
// softmax in f32 and its normalized probabilities rounded for `P V`.
//
// cross_entropy: logsumexp(logits) - logits[target] per position; ignored
// positions give 0 and are not counted; `mean` over zero counted positions
// is NaN (0/0), as in torch.
//
//===----------------------------------------------------------------------===//
#include "compiler/eval/Kernels.h"

#include "dialects/llmc/LlmcOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc {

namespace {

LogicalResult attentionKernel(AttentionOp op, Operands in,
                              std::vector<RefTensor> &out) {
  const RefTensor &q = *in[0], &k = *in[1], &v = *in[2];
  const RefTensor *mask = op.getMask() ? in[3] : nullptr;
  RefTensor r = makeResult(op.getResult());
  int64_t B = q.shape[0], Hq = q.shape[1], T = q.shape[2], D = q.shape[3];
  int64_t Hkv = k.shape[1], S = k.shape[2], Dv = v.shape[3];
  int64_t group = Hq / Hkv;
  double scale = op.getScaleOrDefault();
  std::optional<BroadcastMap> maskMap;
  if (mask)
    maskMap.emplace(mask->shape, std::vector<int64_t>{B, Hq, T, S});
  std::vector<double> scores(S);
  bool eager = op->hasAttr("llmc.eager_rounding") &&
               (r.kind == ElementKind::BF16 || r.kind == ElementKind::F16);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      int64_t kvh = h / group;
      const double *kb = &k.floats[(b * Hkv + kvh) * S * D];
      const double *vb = &v.floats[(b * Hkv + kvh) * S * Dv];
      for (int64_t t = 0; t < T; ++t) {
        const double *qr = &q.floats[((b * Hq + h) * T + t) * D];
        bool anyKept = false;
        double max = -INFINITY;
        for (int64_t s = 0; s < S; ++s) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += qr[d] * kb[s * D + d];
          double score = eager ? roundToKind(scale * dot, r.kind) : scale * dot;
          if (mask) {
            int64_t mi = (*maskMap)(((b * Hq + h) * T + t) * S + s);
            if (!mask->isFloat())
              score = mask->ints[mi] ? score : -INFINITY;
            else
              score += mask->floats[mi];
          }
          if (op.getCausal() && s > t + S - T)
            score = -INFINITY;
          scores[s] = score;
          anyKept |= score != -INFINITY;
          max = std::max(max, score);
        }
        double *o = &r.floats[((b * Hq + h) * T + t) * Dv];
        if (!anyKept)
          continue; // fully masked row: zeros (result starts zero-filled)
        double sum = 0;
        for (int64_t s = 0; s < S; ++s) {
          scores[s] = std::exp(scores[s] - max);
          sum += scores[s];
        }
        for (int64_t s = 0; s < S; ++s) {
          if (eager) {
            double p = roundToKind(scores[s] / sum, r.kind);
            for (int64_t d = 0; d < Dv; ++d)
              o[d] += p * vb[s * Dv + d];
            continue;
          }
          double p = roundProbability(scores[s], r.kind);
          for (int64_t d = 0; d < Dv; ++d)
            o[d] += p / sum * vb[s * Dv + d];
        }
      }
    }
  roundInPlace(r);
  out.push_back(std::move(r));
  return success();
}

LogicalResult rotaryKernel(RotaryOp op, Operands in,
                           std::vector<RefTensor> &out) {
  const RefTensor &x = *in[0], &cos = *in[1], &sin = *in[2];
  RefTensor r = makeResult(op.getResult());
  int64_t D = x.shape.back(), R = cos.shape.back(), half = R / 2;
  std::vector<int64_t> tableTarget = x.shape;
  tableTarget.back() = R;
  BroadcastMap table(cos.shape, tableTarget);
  bool interleaved = op.getInterleaved();
  for (int64_t row = 0, rows = D ? x.numElements() / D : 0; row < rows; ++row) {
    const double *xr = &x.floats[row * D];
    double *yr = &r.floats[row * D];
    for (int64_t i = 0; i < R; ++i) {
      // rotate(x)[i]: the partner feature, negated for the first of a pair.
      double rotated;
      if (interleaved)
        rotated = i % 2 == 0 ? -xr[i + 1] : xr[i - 1];
      else
        rotated = i < half ? -xr[i + half] : xr[i - half];
      int64_t ti = table(row * R + i);
      yr[i] = xr[i] * cos.floats[ti] + rotated * sin.floats[ti];
    }
    for (int64_t i = R; i < D; ++i)
      yr[i] = xr[i];
  }
  roundInPlace(r);
  out.push_back(std::move(r));
  return success();
}

LogicalResult crossEntropyKernel(CrossEntropyOp op, Operands in,
                                 std::vector<RefTensor> &out) {
  const RefTensor &logits = *in[0], &targets = *in[1];
  RefTensor r = makeResult(op.getResult());
  // Row stride W; the classes are the first C columns (the rest padding).
  int64_t W = logits.shape.back(), C = op.getClassCount(),
          positions = targets.numElements();
  int64_t ignore = op.getIgnoreIndex();
  double total = 0;
  int64_t counted = 0;
  for (int64_t p = 0; p < positions; ++p) {
    int64_t target = targets.ints[p];
    double loss = 0;
    if (target != ignore) {
      if (target < 0 || target >= C)
        return op.emitError("reference evaluator: target ")
               << target << " at position " << p << " is out of range for " << C
               << " classes (ignore_index is " << ignore << ")";
      const double *row = &logits.floats[p * W];
      double max = -INFINITY;
      for (int64_t c = 0; c < C; ++c)
        max = std::max(max, row[c]);
      double sum = 0;
      for (int64_t c = 0; c < C; ++c)
        sum += std::exp(row[c] - max);
      loss = max + std::log(sum) - row[target];
      total += loss;
      ++counted;
    }
    if (op.getReduction() == LossReduction::none)
      r.floats[p] = loss;
  }
  if (op.getReduction() == LossReduction::sum)
    r.floats[0] = total;
  else if (op.getReduction() == LossReduction::mean)
    r.floats[0] = total / static_cast<double>(counted);
  roundInPlace(r);
  out.push_back(std::move(r));
  return success();
}

} // namespace

void registerAttentionKernels(KernelTable &table) {
  addKernel<AttentionOp>(table, attentionKernel);
  table[AttentionOp::getOperationName()] = qkvPackedAware(
      seqMajorAware(table[AttentionOp::getOperationName()], {0, 1, 2}));
  addKernel<RotaryOp>(table, rotaryKernel);
  addKernel<CrossEntropyOp>(table, crossEntropyKernel);
}

} // namespace llmc
