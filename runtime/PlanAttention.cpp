//===- PlanAttention.cpp - Attention steps: checks and cuDNN's view -------===//
#include "runtime/PlanAttention.h"

namespace llmc {

CudnnAttentionDesc attentionDesc(const AttentionStep &s) {
  CudnnAttentionDesc d;
  d.backward = s.backward;
  d.bf16 = s.dtype == DType::BF16;
  d.causal = s.causal;
  d.deterministic = s.deterministic;
  d.scale = s.scale;
  d.b = s.b, d.hq = s.hq, d.hkv = s.hkv, d.sq = s.sq, d.skv = s.skv, d.d = s.d;
  d.q = s.q.strides, d.k = s.k.strides, d.v = s.v.strides, d.o = s.o.strides;
  d.dO = s.dO.strides, d.dQ = s.dQ.strides, d.dK = s.dK.strides;
  d.dV = s.dV.strides;
  return d;
}

std::vector<std::pair<const char *, const AttentionView *>>
attentionViews(const AttentionStep &s) {
  std::vector<std::pair<const char *, const AttentionView *>> v = {
      {"q", &s.q}, {"k", &s.k}, {"v", &s.v}, {"o", &s.o}, {"stats", &s.stats}};
  if (s.backward)
    v.insert(v.end(),
             {{"dO", &s.dO}, {"dQ", &s.dQ}, {"dK", &s.dK}, {"dV", &s.dV}});
  return v;
}

namespace {

/// The last element the view reaches, plus one, in elements; false on
/// overflow or a negative stride.
bool extentOf(const std::array<int64_t, 4> &dims,
              const std::array<int64_t, 4> &strides, uint64_t &out) {
  uint64_t last = 0;
  for (int i = 0; i < 4; ++i) {
    if (strides[i] < 0 || dims[i] <= 0)
      return false;
    uint64_t term = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(dims[i] - 1),
                               static_cast<uint64_t>(strides[i]), &term) ||
        __builtin_add_overflow(last, term, &last))
      return false;
  }
  out = last + 1;
  return true;
}

} // namespace

Status checkAttentionStep(const Plan &plan, const AttentionStep &s) {
  if (s.dtype != DType::BF16 && s.dtype != DType::F16)
    return Status::error(std::string("cudnn attention needs bf16 or f16, not ") +
                         dtypeName(s.dtype));
  if (s.b <= 0 || s.hq <= 0 || s.hkv <= 0 || s.sq <= 0 || s.skv <= 0 ||
      s.d <= 0)
    return Status::error("cudnn attention sizes must be positive");
  // The stats are always dense [b, hq, sq].
  if (s.stats.strides != std::array<int64_t, 4>{s.hq * s.sq, s.sq, 1, 1})
    return Status::error("cudnn attention stats must be a dense [b, hq, sq] "
                         "f32 tensor (strides [hq*sq, sq, 1, 1])");
  for (auto [role, view] : attentionViews(s)) {
    std::string what = std::string("view '") + role + "'";
    const BufferInfo *buffer = plan.findBuffer(view->buffer);
    if (!buffer)
      return Status::error(what + " names unknown buffer '" + view->buffer +
                           "'");
    bool isStats = std::string(role) == "stats";
    DType want = isStats ? DType::F32 : s.dtype;
    if (buffer->dtype != want)
      return Status::error(what + " buffer '" + view->buffer + "' is " +
                           dtypeName(buffer->dtype) + ", the step expects " +
                           dtypeName(want));
    bool kv = std::string(role) == "k" || std::string(role) == "v" ||
              std::string(role) == "dK" || std::string(role) == "dV";
    std::array<int64_t, 4> dims = {s.b, kv ? s.hkv : s.hq, kv ? s.skv : s.sq,
                                   isStats ? 1 : s.d};
    uint64_t elements = 0, bytes = 0;
    if (!extentOf(dims, view->strides, elements) ||
        __builtin_mul_overflow(elements, dtypeSize(want), &bytes) ||
        __builtin_add_overflow(bytes, view->offset, &bytes) ||
        bytes > buffer->bytes)
      return Status::error(what + " reaches past the end of buffer '" +
                           view->buffer + "' (" +
                           std::to_string(buffer->bytes) + " bytes)");
    if (view->offset % 16 != 0)
      return Status::error(what + " starts " + std::to_string(view->offset) +
                           " bytes into its buffer; cuDNN needs 16-byte "
                           "alignment");
  }
  return checkSupported(attentionDesc(s));
}

} // namespace llmc
