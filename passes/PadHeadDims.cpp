//===- PadHeadDims.cpp - Pad attention head dims to the bf16 kernels' -----===//
//
// The second half of llmc-pad-shapes (docs/padding.md, "Head dims"). llmc's
// bf16 tensor-core attention needs head dims that are multiples of 16 up to
// 128 (attentionBf16Eligible); GPT-2 and Llama shapes with head dim 40 fall
// to the f32 kernels, 5.2x slower per FLOP (docs/codegen.md). Padding 40 to
// 48 with zeros changes no score (q.k over zeros adds 0) and no output
// column that is kept (the padded v columns are zero, so are the result's),
// as long as the scale stays 1/sqrt(40): it is pinned in the op.
//
// The padding happens at the op, not at the projection weights: the heads
// reach attention through a split of the qkv projection and a reshape that
// splits H*D into heads, so padding the weight would put zero columns at
// every head's end of [C, 3*H*D]. The parameter layout that needs cannot be
// written as a real shape (runtime/Padding.h pads each dim at its end),
// which every checkpoint, the plan and the JIT API rely on. Padding at the
// op costs one copy of q, k, v and the result (and of their gradients),
// O(T D) against attention's O(T^2 D); the cost model counts it.
//
//===----------------------------------------------------------------------===//
#include "passes/PadShapes.h"

#include "dialects/llmc/LlmcOps.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <cstdio>

namespace mlir::llmc {

namespace {

constexpr int64_t kBf16Multiple = 16, kBf16Max = 128;

bool bf16Kernel(int64_t d, int64_t dv) {
  return d % kBf16Multiple == 0 && dv % kBf16Multiple == 0 && d <= kBf16Max &&
         dv <= kBf16Max;
}

int64_t roundUp(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

int64_t lastDim(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return t.getDimSize(t.getRank() - 1);
}

int64_t elements(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}

std::string micros(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f us", seconds * 1e6);
  return buf;
}

/// Forward and backward FLOPs of one attention at head dims (d, dv): q k^T
/// and p v forward, 2.5x that backward (docs/codegen.md's count), half
/// under a causal mask.
double attentionFlops(AttentionOp op, int64_t d, int64_t dv) {
  auto q = cast<RankedTensorType>(op.getQuery().getType());
  auto k = cast<RankedTensorType>(op.getKey().getType());
  bool seqMajor = static_cast<bool>(op.getSeqMajor());
  int64_t b = q.getDimSize(0), h = q.getDimSize(seqMajor ? 2 : 1),
          t = q.getDimSize(seqMajor ? 1 : 2), s = k.getDimSize(seqMajor ? 1 : 2);
  double forward = 2.0 * b * h * t * s * (d + dv) * (op.getCausal() ? 0.5 : 1);
  return 3.5 * forward;
}

/// Attention ops with the same head dims, decided together.
struct HeadGroup {
  int64_t d = 0, dv = 0;
  SmallVector<AttentionOp> ops;
};

struct HeadDecision {
  int64_t d = 0, dv = 0; // the padded sizes (the real ones: unchanged)
  std::string why;
};

class HeadCostModel {
public:
  HeadCostModel(const ArchCosts &arch, bool bf16, bool always,
                const ForcedDims &forced)
      : arch_(arch), bf16_(bf16), always_(always), forced_(forced) {}

  HeadDecision decide(const HeadGroup &g) const {
    HeadDecision h{g.d, g.dv, ""};
    auto fd = forced_.find(g.d), fdv = forced_.find(g.dv);
    if (fd != forced_.end() || fdv != forced_.end()) {
      h.d = fd != forced_.end() ? fd->second : g.d;
      h.dv = fdv != forced_.end() ? fdv->second : g.dv;
      h.why = "padded on request (dims=" +
              std::to_string(fd != forced_.end() ? g.d : g.dv) + ":" +
              std::to_string(fd != forced_.end() ? h.d : h.dv) + "); " +
              timing(g, h.d, h.dv);
      return h;
    }
    // f32 attention has no head dim to align to that padding could reach
    // (its tensor-core kernels take multiples of 8, as the models have):
    // padding only adds FLOPs. Not listed, as aligned parameter dims.
    if (!bf16_)
      return h;
    if (bf16Kernel(g.d, g.dv))
      return h; // aligned already: the bf16 kernels take it
    int64_t d = roundUp(g.d, kBf16Multiple), dv = roundUp(g.dv, kBf16Multiple);
    if (!bf16Kernel(d, dv)) {
      h.why = "not worth it: no bf16 tensor-core attention above head dim " +
              std::to_string(kBf16Max);
      return h;
    }
    if (seconds(g, d, dv, !always_) >= seconds(g, g.d, g.dv, !always_)) {
      h.why = "not worth it: " + timing(g, d, dv) +
              ", launch-bound or cheaper than the padding's copies";
      return h;
    }
    h.d = d;
    h.dv = dv;
    h.why = std::string(always_ ? "padded on request (always); " : "") +
            timing(g, d, dv);
    return h;
  }

  double extraFlops(const HeadGroup &g, const HeadDecision &h) const {
    double extra = 0;
    for (AttentionOp op : g.ops)
      extra += attentionFlops(op, h.d, h.dv) - attentionFlops(op, g.d, g.dv);
    return extra;
  }

private:
  /// The group's attention time at head dims (d, dv) on the kernel they
  /// select, at least a launch for each of its 4 kernels (forward and the
  /// backward's three) when `floor`, plus the padding copies' traffic.
  double kernelSeconds(const HeadGroup &g, int64_t d, int64_t dv,
                       bool floor) const {
    double rate = bf16_ && bf16Kernel(d, dv) ? arch_.attentionBf16Rate
                                             : arch_.attentionF32Rate;
    double total = 0;
    for (AttentionOp op : g.ops) {
      double t = attentionFlops(op, d, dv) / rate;
      total += floor ? std::max(t, 4 * arch_.launchSeconds) : t;
    }
    return total;
  }

  /// q, k, v and the result padded by a copy, and their gradients sliced
  /// back: each written and read, forward and backward.
  double copySeconds(const HeadGroup &g, int64_t d, int64_t dv) const {
    if (d == g.d && dv == g.dv)
      return 0;
    double bytes = 0;
    for (AttentionOp op : g.ops)
      bytes += double(elements(op.getQuery()) + elements(op.getKey())) * d /
                   g.d +
               double(elements(op.getValue()) + elements(op.getResult())) *
                   dv / g.dv;
    return 2 * 2 * bytes * (bf16_ ? 2 : 4) / arch_.bandwidth;
  }

  double seconds(const HeadGroup &g, int64_t d, int64_t dv,
                 bool withMemory) const {
    return kernelSeconds(g, d, dv, withMemory) +
           (withMemory ? copySeconds(g, d, dv) : 0);
  }

  std::string timing(const HeadGroup &g, int64_t d, int64_t dv) const {
    return "attention " + micros(kernelSeconds(g, g.d, g.dv, true)) + " -> " +
           micros(kernelSeconds(g, d, dv, true)) + " per step on " +
           arch_.arch + (bf16_ ? " (bf16 tensor cores need head dims % 16)"
                               : " (f32)") +
           ", the padding copies " + micros(copySeconds(g, d, dv));
  }

  const ArchCosts &arch_;
  bool bf16_, always_;
  const ForcedDims &forced_;
};

void padOp(AttentionOp op, int64_t d, int64_t dv) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  // The scale of the real head dim, before q's type changes.
  op.setScaleAttr(b.getF64FloatAttr(op.getScaleOrDefault()));
  op.getQueryMutable().assign(padLastDim(b, loc, op.getQuery(), d));
  op.getKeyMutable().assign(padLastDim(b, loc, op.getKey(), d));
  op.getValueMutable().assign(padLastDim(b, loc, op.getValue(), dv));
  Value result = op.getResult();
  auto real = cast<RankedTensorType>(result.getType());
  if (real.getDimSize(real.getRank() - 1) == dv)
    return;
  SmallVector<int64_t> shape(real.getShape());
  shape.back() = dv;
  result.setType(real.clone(shape));
  b.setInsertionPointAfter(op);
  Value slice = sliceLastDim(b, loc, result, real.getShape().back());
  result.replaceAllUsesExcept(slice, slice.getDefiningOp());
}

} // namespace

bool parseForcedDims(llvm::StringRef spec, ForcedDims &dims,
                     std::string &error) {
  SmallVector<llvm::StringRef> entries;
  spec.split(entries, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef e : entries) {
    auto [from, to] = e.trim().split(':');
    int64_t f = 0, t = 0;
    if (from.getAsInteger(10, f) || to.getAsInteger(10, t) || f < 1 ||
        t <= f) {
      error = "'" + e.str() +
              "' is not FROM:TO with 1 <= FROM < TO (e.g. dims=40:48,200:256)";
      return false;
    }
    dims[f] = t;
  }
  return true;
}

DictionaryAttr paddingEntry(Builder &b, ArrayRef<std::string> params,
                            int64_t from, int64_t to, double extraFlops,
                            const std::string &why) {
  SmallVector<Attribute> names;
  for (const std::string &p : params)
    names.push_back(b.getStringAttr(p));
  return b.getDictionaryAttr({
      b.getNamedAttr("params", b.getArrayAttr(names)),
      b.getNamedAttr("from", b.getI64IntegerAttr(from)),
      b.getNamedAttr("to", b.getI64IntegerAttr(to)),
      b.getNamedAttr("extra_flops", b.getI64IntegerAttr(std::llround(extraFlops))),
      b.getNamedAttr("why", b.getStringAttr(why)),
  });
}

void padAttentionHeadDims(func::FuncOp forward, const ArchCosts &arch,
                          bool bf16, bool always, const ForcedDims &forced,
                          SmallVectorImpl<Attribute> &decisions) {
  llvm::MapVector<std::pair<int64_t, int64_t>, HeadGroup> groups;
  forward.walk([&](AttentionOp op) {
    // Packed qkv (qkv_heads) is formed after autodiff; never seen here.
    if (op.getQkvHeads())
      return;
    int64_t d = lastDim(op.getQuery()), dv = lastDim(op.getValue());
    HeadGroup &g = groups[{d, dv}];
    g.d = d;
    g.dv = dv;
    g.ops.push_back(op);
  });
  HeadCostModel model(arch, bf16, always, forced);
  Builder b(forward.getContext());
  for (auto &[dims, g] : groups) {
    HeadDecision h = model.decide(g);
    bool padded = h.d != g.d || h.dv != g.dv;
    if (!padded && h.why.empty())
      continue; // aligned: the common case, not listed
    std::string count = std::to_string(g.ops.size()) + " op" +
                        (g.ops.size() == 1 ? "" : "s");
    double extra = model.extraFlops(g, h);
    // One entry when q, k and v share the head dim; else one for each.
    if (g.d == g.dv) {
      decisions.push_back(paddingEntry(
          b, {"llmc.attention head dim (" + count + ": q, k, v, result)"},
          g.d, h.d, extra, h.why));
    } else {
      decisions.push_back(paddingEntry(
          b, {"llmc.attention head dim (" + count + ": q, k)"}, g.d, h.d,
          extra, h.why));
      decisions.push_back(paddingEntry(
          b, {"llmc.attention value head dim (" + count + ": v, result)"},
          g.dv, h.dv, 0, h.why));
    }
    if (padded)
      for (AttentionOp op : g.ops)
        padOp(op, h.d, h.dv);
  }
}

} // namespace mlir::llmc
