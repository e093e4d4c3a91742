//===- AttentionGradKernels.cpp - attention_lse, attention_grad -----------===//
//
// The training forms of attention, with the conventions of the forward
// kernel (AttentionKernels.cpp): masked scores are -inf, a query row that
// sees no key has output 0, and here lse = -inf and no gradient.
//
// attention_grad rebuilds P = exp(score - lse) from the lse operand, as the
// GPU kernel does, and takes D = rowsum(dO * O) from the output operand:
//   dV += P^T dO, dS = P * (dO V^T - D), dQ = scale dS K, dK += scale dS^T Q,
// with dK and dV accumulated over the query heads of a group (GQA).
//
//===----------------------------------------------------------------------===//
#include "compiler/eval/Kernels.h"

#include "dialects/llmc/LlmcOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc {

namespace {

/// The scaled, masked scores of one query row against every key.
class ScoreRows {
public:
  ScoreRows(const RefTensor &q, const RefTensor &k, const RefTensor *mask,
            bool causal, double scale)
      : q(q), k(k), mask(mask), causal(causal), scale(scale) {
    B = q.shape[0], Hq = q.shape[1], T = q.shape[2], D = q.shape[3];
    Hkv = k.shape[1], S = k.shape[2];
    if (mask)
      maskMap.emplace(mask->shape, std::vector<int64_t>{B, Hq, T, S});
  }

  /// Fills `scores` (size S) for query (b, h, t); returns false when every
  /// score is -inf.
  bool row(int64_t b, int64_t h, int64_t t, std::vector<double> &scores) {
    const double *qr = &q.floats[((b * Hq + h) * T + t) * D];
    const double *kb = &k.floats[(b * Hkv + kvHead(h)) * S * D];
    bool anyKept = false;
    for (int64_t s = 0; s < S; ++s) {
      double dot = 0;
      for (int64_t d = 0; d < D; ++d)
        dot += qr[d] * kb[s * D + d];
      double score = scale * dot;
      if (mask) {
        int64_t mi = (*maskMap)(((b * Hq + h) * T + t) * S + s);
        if (!mask->isFloat())
          score = mask->ints[mi] ? score : -INFINITY;
        else
          score += mask->floats[mi];
      }
      if (causal && s > t + S - T)
        score = -INFINITY;
      scores[s] = score;
      anyKept |= score != -INFINITY;
    }
    return anyKept;
  }

  int64_t kvHead(int64_t h) const { return h / (Hq / Hkv); }

  int64_t B, Hq, T, D, Hkv, S;

private:
  const RefTensor &q, &k;
  const RefTensor *mask;
  bool causal;
  double scale;
  std::optional<BroadcastMap> maskMap;
};

LogicalResult attentionLseKernel(AttentionLseOp op, Operands in,
                                 std::vector<RefTensor> &out) {
  const RefTensor &v = *in[2];
  ScoreRows rows(*in[0], *in[1], op.getMask() ? in[3] : nullptr, op.getCausal(),
                 op.getScaleOrDefault());
  RefTensor r = makeResult(op.getResult()), lse = makeResult(op.getLse());
  int64_t Dv = v.shape[3], S = rows.S;
  std::vector<double> scores(S);
  for (int64_t b = 0; b < rows.B; ++b)
    for (int64_t h = 0; h < rows.Hq; ++h)
      for (int64_t t = 0; t < rows.T; ++t) {
        int64_t rowIndex = (b * rows.Hq + h) * rows.T + t;
        if (!rows.row(b, h, t, scores)) {
          lse.floats[rowIndex] = -INFINITY; // output row stays zero
          continue;
        }
        double max = -INFINITY, sum = 0;
        for (double s : scores)
          max = std::max(max, s);
        for (double &s : scores) {
          s = std::exp(s - max);
          sum += s;
        }
        const double *vb = &v.floats[(b * rows.Hkv + rows.kvHead(h)) * S * Dv];
        double *o = &r.floats[rowIndex * Dv];
        for (int64_t s = 0; s < S; ++s) {
          double p = roundProbability(scores[s], r.kind);
          for (int64_t d = 0; d < Dv; ++d)
            o[d] += p / sum * vb[s * Dv + d];
        }
        lse.floats[rowIndex] = max + std::log(sum);
      }
  roundInPlace(r);
  roundInPlace(lse);
  out.push_back(std::move(r));
  out.push_back(std::move(lse));
  return success();
}

LogicalResult attentionGradKernel(AttentionGradOp op, Operands in,
                                  std::vector<RefTensor> &out) {
  const RefTensor &q = *in[0], &k = *in[1], &v = *in[2], &o = *in[3],
                  &lse = *in[4], &dout = *in[5];
  double scale = op.getScaleOrDefault();
  ScoreRows rows(q, k, op.getMask() ? in[6] : nullptr, op.getCausal(), scale);
  // In the op's layout (seqMajorAware relabels them), from the operands:
  // with `qkv_heads` the op's one result is the three packed
  // (qkvPackedAware).
  ElementKind kind = kindOfValue(op->getResult(0));
  auto like = [&](const RefTensor &x) {
    auto shape = attentionLogicalShape(x.shape, op.getSeqMajor());
    return RefTensor(kind, std::vector<int64_t>(shape.begin(), shape.end()));
  };
  RefTensor dq = like(q), dk = like(k), dv = like(v);
  int64_t D = rows.D, Dv = v.shape[3], S = rows.S;
  std::vector<double> p(S), dp(S);
  for (int64_t b = 0; b < rows.B; ++b)
    for (int64_t h = 0; h < rows.Hq; ++h) {
      int64_t kvBase = (b * rows.Hkv + rows.kvHead(h)) * S;
      for (int64_t t = 0; t < rows.T; ++t) {
        int64_t rowIndex = (b * rows.Hq + h) * rows.T + t;
        if (!rows.row(b, h, t, p) || lse.floats[rowIndex] == -INFINITY)
          continue; // a row that sees no key has no gradient
        const double *dO = &dout.floats[rowIndex * Dv];
        const double *oRow = &o.floats[rowIndex * Dv];
        const double *qRow = &q.floats[rowIndex * D];
        double rowD = 0;
        for (int64_t d = 0; d < Dv; ++d)
          rowD += dO[d] * oRow[d];
        for (int64_t s = 0; s < S; ++s) {
          p[s] = std::exp(p[s] - lse.floats[rowIndex]);
          const double *vRow = &v.floats[(kvBase + s) * Dv];
          dp[s] = 0;
          for (int64_t d = 0; d < Dv; ++d) {
            dp[s] += dO[d] * vRow[d];
            dv.floats[(kvBase + s) * Dv + d] += p[s] * dO[d];
          }
        }
        for (int64_t s = 0; s < S; ++s) {
          double dS = p[s] * (dp[s] - rowD) * scale;
          const double *kRow = &k.floats[(kvBase + s) * D];
          for (int64_t d = 0; d < D; ++d) {
            dq.floats[rowIndex * D + d] += dS * kRow[d];
            dk.floats[(kvBase + s) * D + d] += dS * qRow[d];
          }
        }
      }
    }
  for (RefTensor *t : {&dq, &dk, &dv}) {
    roundInPlace(*t);
    out.push_back(std::move(*t));
  }
  return success();
}

/// `t` ([A, X, Y, D]) as [A, Y, X, D].
RefTensor swapMiddleAxes(const RefTensor &t) {
  int64_t A = t.shape[0], X = t.shape[1], Y = t.shape[2], D = t.shape[3];
  RefTensor r(t.kind, {A, Y, X, D});
  for (int64_t a = 0; a < A; ++a)
    for (int64_t x = 0; x < X; ++x)
      for (int64_t y = 0; y < Y; ++y)
        for (int64_t d = 0; d < D; ++d)
          r.copyElement(((a * Y + y) * X + x) * D + d, t,
                        ((a * X + x) * Y + y) * D + d);
  return r;
}

} // namespace

Kernel seqMajorAware(Kernel kernel, std::vector<unsigned> layoutOperands) {
  return [kernel, layoutOperands](Operation *op, Operands in,
                                  std::vector<RefTensor> &out) {
    if (!op->hasAttr("seq_major"))
      return kernel(op, in, out);
    std::vector<RefTensor> dense;
    dense.reserve(layoutOperands.size());
    std::vector<const RefTensor *> operands(in.begin(), in.end());
    for (unsigned i : layoutOperands) {
      dense.push_back(swapMiddleAxes(*in[i]));
      operands[i] = &dense.back();
    }
    size_t first = out.size();
    if (failed(kernel(op, operands, out)))
      return failure();
    // The kernel filled each result in [B, H, T, D] order into a buffer of
    // the op's [B, T, H, D] shape.
    for (size_t i = first; i < out.size(); ++i) {
      if (out[i].rank() != 4)
        continue;
      auto logical = attentionLogicalShape(out[i].shape, true);
      out[i].shape.assign(logical.begin(), logical.end());
      out[i] = swapMiddleAxes(out[i]);
    }
    return success();
  };
}

namespace {

/// Heads [h0, h0 + n) of `t` ([B, T, H, D]).
RefTensor headWindow(const RefTensor &t, int64_t h0, int64_t n) {
  int64_t BT = t.shape[0] * t.shape[1], H = t.shape[2], D = t.shape[3];
  RefTensor r(t.kind, {t.shape[0], t.shape[1], n, D});
  for (int64_t i = 0; i < BT; ++i)
    for (int64_t h = 0; h < n; ++h)
      for (int64_t d = 0; d < D; ++d)
        r.copyElement((i * n + h) * D + d, t, (i * H + h0 + h) * D + d);
  return r;
}

} // namespace

Kernel qkvPackedAware(Kernel kernel) {
  return [kernel](Operation *op, Operands in, std::vector<RefTensor> &out) {
    if (!op->hasAttr("qkv_heads"))
      return kernel(op, in, out);
    std::vector<RefTensor> windows;
    windows.reserve(3);
    std::vector<const RefTensor *> operands(in.begin(), in.end());
    for (unsigned i = 0; i < 3; ++i) {
      windows.push_back(headWindow(*in[i], attentionHeadOffset(op, i),
                                   attentionOperandShape(op, i)[1]));
      operands[i] = &windows.back();
    }
    size_t first = out.size();
    if (failed(kernel(op, operands, out)))
      return failure();
    if (!isa<AttentionGradOp>(op))
      return success();
    // dq, dk, dv side by side per token, as the concat they replace.
    RefTensor packed = makeResult(op->getResult(0));
    int64_t BT = packed.shape[0] * packed.shape[1], H = packed.shape[2],
            D = packed.shape[3];
    for (unsigned i = 0; i < 3; ++i) {
      const RefTensor &g = out[first + i];
      int64_t n = g.shape[2], h0 = attentionHeadOffset(op, i);
      for (int64_t t = 0; t < BT; ++t)
        for (int64_t h = 0; h < n; ++h)
          for (int64_t d = 0; d < D; ++d)
            packed.copyElement((t * H + h0 + h) * D + d, g, (t * n + h) * D + d);
    }
    out.resize(first);
    out.push_back(std::move(packed));
    return success();
  };
}

void registerAttentionGradKernels(KernelTable &table) {
  addKernel<AttentionLseOp>(table, attentionLseKernel);
  table[AttentionLseOp::getOperationName()] = qkvPackedAware(
      seqMajorAware(table[AttentionLseOp::getOperationName()], {0, 1, 2}));
  addKernel<AttentionGradOp>(table, attentionGradKernel);
  table[AttentionGradOp::getOperationName()] = qkvPackedAware(seqMajorAware(
      table[AttentionGradOp::getOperationName()], {0, 1, 2, 3, 5}));
}

} // namespace llmc
