//===- AttentionEmitters.cpp - attention (flash-style forward), rotary ----===//
//
// attention: softmax(scale * q k^T + mask) v per (batch, head), tiled so
// that the [T, S] scores never exist in memory (FlashAttention's forward):
//
//   grid (ceil(T / kWarps), Hq, B), one warp per query row, kWarps rows per
//   block. The block walks the keys in tiles of 32: K and V tiles go to
//   shared memory (read once for kWarps rows); lane j scores key j of the
//   tile; the warp keeps the online softmax state (running max m, running
//   sum l) and rescales its output accumulator (Dv/32 features per lane) by
//   exp(m_old - m_new) before adding p_j * v_j. With `causal`, tiles past
//   the block's last visible key are skipped.
//
// It also writes the log-sum-exp m + log(l) of every row ([B, Hq, T], f32)
// that the backward recomputes probabilities from. A row that sees no key
// gets output 0 and lse -inf (docs/reference-evaluator.md; autodiff's
// attention_lse). GQA: query head h reads kv head h / (Hq / Hkv).
//
// rotary: a vector of 16 bytes per thread (8 bf16, 4 f32) of [..., T, D];
// the first R features rotate with the pair partner (rotate-half: the
// vector R/2 away in the same row; interleaved: inside the vector), the
// rest copy. Shapes whose rows do not split into such vectors take one
// element per thread.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/AttentionCudnn.h"
#include "compiler/codegen/AttentionMma.h"
#include "compiler/codegen/Emitters.h"

#include "dialects/llmc/LlmcOps.h"

#include <algorithm>
#include <cstdlib>
#include <string>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

constexpr unsigned kWarpsPerBlock = 8;
constexpr unsigned kKeyTile = 32;

/// Emits the attention forward. `lseIsResult`: the log-sum-exp is result #1
/// (autodiff's attention_lse) rather than a scratch buffer.
LogicalResult emitAttentionKernel(Operation *op, const EmitContext &ctx,
                                  OpLowering &out, const AttentionParts &a) {
  Shape q = a.qShape(), k = a.kShape(), v = a.vShape();
  int64_t B = q[0], Hq = q[1], T = q[2], D = q[3];
  int64_t S = k[2], Dv = v[3];
  Type qt = elementTypeOf(a.query), kt = elementTypeOf(a.key),
       vt = elementTypeOf(a.value), rt = elementTypeOf(a.result);
  if (attention16BitEligible(qt, kt, vt, D, Dv))
    return emitAttentionForwardMma16(op, ctx, out, a);
  if (attentionMmaEligible(D, Dv))
    return emitAttentionForwardMma(op, ctx, out, a);
  if (B > 65535 || Hq > 65535)
    return op->emitError("codegen: attention with batch ")
           << B << " and " << Hq
           << " heads exceeds the grid (at most 65535 each)";

  KernelSource src(op, ctx.name);
  src.scheme("flash-style forward: one warp per query row, " +
             std::to_string(kWarpsPerBlock) +
             " rows per block, keys in "
             "tiles of " +
             std::to_string(kKeyTile) +
             " through shared memory, online softmax; never materializes "
             "[T, S]");
  src.scheme("writes the row log-sum-exp (f32 [B, Hq, T]) for the backward");
  attentionShapeConstants(src, q, k, Dv);
  attentionStrideConstants(src, a);
  src.constant("kWarps", kWarpsPerBlock, "query rows per block");
  src.constant("kTile", kKeyTile, "keys per tile, one per lane");
  src.constant("kDvPerLane", (Dv + 31) / 32, "output features per lane");
  src.floatConstant("kScale", a.scale, "applied to q.k");
  src.staticAssert("kHq % kHkv == 0", "GQA groups are whole");
  src.staticAssert("kTile == 32", "one key per lane");
  src.helper(R"(__device__ __forceinline__ float warpSum(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warpMax(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
})");

  std::string params =
      inParam(qt, "q") + ", " + inParam(kt, "k") + ", " + inParam(vt, "v");
  std::vector<KernelArg> args = {a.qkvArg(0), a.qkvArg(1), a.qkvArg(2)};
  std::string maskCode;
  if (a.mask) {
    Type mt = elementTypeOf(a.mask);
    maskConstants(src, a.mask, {B, Hq, T, S});
    params += ", " + inParam(mt, "mask");
    args.push_back(KernelArg::operand(3));
    std::string at = "mask[b * kMaskB + h * kMaskH + t * kMaskT + s * kMaskS]";
    maskCode = mt.isSignlessInteger(1)
                   ? "        if (" + at +
                         " == 0)\n"
                         "          score = -INFINITY;\n"
                   : "        score += " + loadAs(mt, at) + ";\n";
  }
  params += ", " + outParam(rt, "out") + ", float *__restrict__ lse";
  args.push_back(KernelArg::result(0));
  args.push_back(a.lse ? KernelArg::result(1) : KernelArg::scratch(0));
  if (!a.lse)
    out.scratch.push_back({"lse", DType::F32, {B, Hq, T}});

  std::string causalEnd =
      a.causal ? "  // Causal: key s is visible to row t when s <= t + S - T.\n"
                 "  const index_t lastRow = min(t0 + kWarps, kT) - 1;\n"
                 "  const index_t kvEnd = max((index_t)0, min(kS, lastRow + "
                 "kS - kT + 1));\n"
               : "  const index_t kvEnd = kS;\n";
  std::string visible = a.causal ? "s < kS && s <= t + kS - kT" : "s < kS";
  src.kernel(
      "extern \"C\" __global__ void __launch_bounds__(kWarps * 32)\n" +
      ctx.name + "(" + params + ") {\n" +
      "  extern __shared__ float smem[];\n"
      "  float *qs = smem;                       // [kWarps][kD]\n"
      "  float *ks = qs + kWarps * kD;           // [kTile][kD + 1], padded\n"
      "  float *vs = ks + kTile * (kD + 1);      // [kTile][kDv]\n"
      "  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;\n"
      "  const index_t b = blockIdx.z, h = blockIdx.y;\n"
      "  const index_t t0 = (index_t)blockIdx.x * kWarps, t = t0 + warp;\n"
      "  const index_t kvh = h / kGroup;\n"
      "  const " +
      storageType(kt) +
      " *kp = k + b * kKsB + kvh * kKsH;\n"
      "  const " +
      storageType(vt) +
      " *vp = v + b * kVsB + kvh * kVsH;\n"
      "  if (t < kT)\n"
      "    for (index_t d = lane; d < kD; d += 32)\n"
      "      qs[warp * kD + d] = " +
      loadAs(qt, "q[b * kQsB + h * kQsH + t * kQsT + d]") + ";\n" +
      causalEnd +
      "  float m = -INFINITY, l = 0.0f, acc[kDvPerLane];\n"
      "  for (int u = 0; u < kDvPerLane; ++u)\n"
      "    acc[u] = 0.0f;\n"
      "  for (index_t s0 = 0; s0 < kvEnd; s0 += kTile) {\n"
      "    __syncthreads(); // the previous tile is consumed\n"
      "    for (index_t e = threadIdx.x; e < kTile * kD; e += kWarps * 32) {\n"
      "      const index_t j = e / kD, d = e % kD;\n"
      "      ks[j * (kD + 1) + d] = s0 + j < kS ? " +
      loadAs(kt, "kp[(s0 + j) * kKsT + d]") +
      " : 0.0f;\n"
      "    }\n"
      "    for (index_t e = threadIdx.x; e < kTile * kDv; e += kWarps * 32) {\n"
      "      const index_t j = e / kDv;\n"
      "      vs[e] = s0 + j < kS ? " +
      loadAs(vt, "vp[(s0 + j) * kVsT + e % kDv]") +
      " : 0.0f;\n"
      "    }\n"
      "    __syncthreads();\n"
      "    if (t >= kT)\n"
      "      continue;\n"
      "    const index_t s = s0 + lane;\n"
      "    float score = -INFINITY;\n"
      "    if (" +
      visible +
      ") {\n"
      "      float dot = 0.0f;\n"
      "      for (index_t d = 0; d < kD; ++d)\n"
      "        dot += qs[warp * kD + d] * ks[lane * (kD + 1) + d];\n"
      "      score = dot * kScale;\n" +
      (maskCode.empty() ? "" : "      {\n" + maskCode + "      }\n") +
      "    }\n"
      "    const float mNew = fmaxf(m, warpMax(score));\n"
      "    if (mNew == -INFINITY)\n"
      "      continue; // nothing visible yet\n"
      "    const float p = expf(score - mNew);\n"
      "    const float alpha = expf(m - mNew);\n"
      "    l = l * alpha + warpSum(p);\n"
      "    for (int u = 0; u < kDvPerLane; ++u)\n"
      "      acc[u] *= alpha;\n"
      "    for (int j = 0; j < kTile; ++j) {\n"
      "      const float pj = " +
      (rt.isBF16() || rt.isF16()
           ? loadAs(rt, storeAs(rt, "__shfl_sync(0xffffffffu, p, j)"))
           : std::string("__shfl_sync(0xffffffffu, p, j)")) +
      ";  // bf16: P rounded as flash kernels do (docs/precision.md)\n"
      "      for (int u = 0; u < kDvPerLane; ++u) {\n"
      "        const index_t e = lane + 32 * u;\n"
      "        if (e < kDv)\n"
      "          acc[u] += pj * vs[j * kDv + e];\n"
      "      }\n"
      "    }\n"
      "    m = mNew;\n"
      "  }\n"
      "  if (t >= kT)\n"
      "    return;\n"
      "  // A row that saw no key: output 0 and lse -inf.\n"
      "  const float inv = l > 0.0f ? 1.0f / l : 0.0f;\n"
      "  const index_t row = (b * kHq + h) * kT + t;\n"
      "  for (int u = 0; u < kDvPerLane; ++u) {\n"
      "    const index_t e = lane + 32 * u;\n"
      "    if (e < kDv)\n"
      "      out[b * kOsB + h * kOsH + t * kOsT + e] = " +
      storeAs(rt, "acc[u] * inv") +
      ";\n"
      "  }\n"
      "  if (lane == 0)\n"
      "    lse[row] = l > 0.0f ? m + logf(l) : -INFINITY;\n"
      "}\n");

  EmittedKernel kern;
  kern.name = ctx.name;
  kern.source = src.str();
  kern.grid = {static_cast<unsigned>((T + kWarpsPerBlock - 1) / kWarpsPerBlock),
               static_cast<unsigned>(Hq), static_cast<unsigned>(B)};
  kern.block = {kWarpsPerBlock * 32, 1, 1};
  kern.sharedBytes = static_cast<unsigned>(
      4 * (kWarpsPerBlock * D + kKeyTile * (D + 1) + kKeyTile * Dv));
  kern.args = std::move(args);
  if (kern.sharedBytes > 227 * 1024)
    return op->emitError("codegen: attention head dims ")
           << D << "/" << Dv << " need " << kern.sharedBytes
           << " bytes of shared memory; at most 232448 are available";
  out.kind = OpLowering::Kind::Kernels;
  out.kernels.push_back(std::move(kern));
  return success();
}

/// Elements per thread of the rotary kernel: 16 bytes of the wider of the
/// input and result types (8 bf16, 4 f32), or the largest power of two
/// under it, when every vector lies in one region of a row (copied, or
/// rotated with its partner a whole vector of the same row: rotate-half's
/// d +- R/2, or inside it: interleaved pairs); else 1. LLMC_ROTARY_SCALAR=1 forces 1, for the GPU test that compares
/// the two bitwise.
int64_t rotaryVector(int64_t D, int64_t R, bool interleaved, Type t,
                     Type rt) {
  if (const char *v = std::getenv("LLMC_ROTARY_SCALAR");
      v && std::string(v) == "1")
    return 1;
  auto bytes = [](Type x) {
    return std::max<int64_t>(1, x.getIntOrFloatBitWidth() / 8);
  };
  int64_t unit = interleaved ? R : R / 2;
  for (int64_t vec = 16 / std::max(bytes(t), bytes(rt)); vec >= 2; vec /= 2)
    if (D % vec == 0 && unit % vec == 0)
      return vec;
  return 1;
}

LogicalResult emitRotary(RotaryOp op, const EmitContext &ctx, OpLowering &out) {
  Shape shape = shapeOf(op.getInput());
  Shape table = shape;
  int64_t D = shape.back(), R = shapeOf(op.getCos()).back();
  table.back() = R;
  IndexSpace flat =
      collapseDims({table,
                    {broadcastStrides(shapeOf(op.getCos()), table),
                     broadcastStrides(shapeOf(op.getSin()), table)}});
  Type t = elementTypeOf(op.getInput()), ct = elementTypeOf(op.getCos()),
       st = elementTypeOf(op.getSin()), rt = elementTypeOf(op.getResult());
  bool interleaved = op.getInterleaved();
  int64_t vec = rotaryVector(D, R, interleaved, t, rt);

  KernelSource src(op, ctx.name);
  src.scheme(std::string("rotary (") +
             (interleaved ? "interleaved pairs 2j, 2j+1" : "rotate-half") +
             "): " +
             (vec == 1 ? std::string("one thread per element")
                       : "a vector of " + std::to_string(vec) +
                             " elements per thread (the partner half another "
                             "vector of the row)") +
             "; y = x * cos + rotate(x) * sin on the first R features, "
             "copy after");
  int64_t n = numElements(shape);
  src.constant("kN", n, "elements " + dimsString(shape));
  src.constant("kD", D, "features");
  src.constant("kR", R, "rotated features");
  src.constant("kVec", vec, "elements per thread");
  src.staticAssert("kR % 2 == 0 && kR <= kD", "pairs within the features");
  src.staticAssert(
      std::string("kVec == 1 || (kD % kVec == 0 && ") +
          (interleaved ? "kR" : "(kR / 2)") + " % kVec == 0)",
      "a vector lies in one region of a row");
  // The same arithmetic per element whatever the vector: one explicit FMA
  // (x * c rounded once with the partner's product), so that neither NVVM
  // nor ptxas contracts the scalar and vector kernels differently.
  std::string y = "__fmaf_rn(x, c, __fmul_rn(p, s))";
  std::string tableOffsets =
      emitCoordinates("tl", "tl", flat.shape,
                      neededCoordinates(flat.shape, flat.strides), "    ") +
      "    const index_t co = " +
      offsetExpression("tl", "tl", flat.shape, flat.strides[0]) +
      ";\n"
      "    const index_t so = " +
      offsetExpression("tl", "tl", flat.shape, flat.strides[1]) + ";\n";
  std::string body;
  if (vec == 1) {
    std::string partner =
        interleaved ? "(d % 2 == 0 ? -" + loadAs(t, "in[i + 1]") + " : " +
                          loadAs(t, "in[i - 1]") + ")"
                    : "(d < kR / 2 ? -" + loadAs(t, "in[i + kR / 2]") +
                          " : " + loadAs(t, "in[i - kR / 2]") + ")";
    body = "    const index_t d = i % kD;\n"
           "    const float x = " +
           loadAs(t, "in[i]") +
           ";\n"
           "    if (d >= kR) {\n"
           "      out[i] = " +
           storeAs(rt, "x") +
           ";\n"
           "      continue;\n"
           "    }\n"
           "    const index_t tl = (i / kD) * kR + d; // index in [..., T, R]\n" +
           tableOffsets + "    const float c = " + loadAs(ct, "cos_table[co]") +
           ";\n"
           "    const float s = " +
           loadAs(st, "sin_table[so]") +
           ";\n"
           "    const float p = " +
           partner +
           ";\n"
           "    out[i] = " +
           storeAs(rt, y) + ";\n";
  } else {
    std::string inVec = "Vec<" + storageType(t) + ", kVec>",
                outVec = "Vec<" + storageType(rt) + ", kVec>";
    std::string partner =
        interleaved ? "(e % 2 == 0 ? -" + loadAs(t, "xv.v[e ^ 1]") + " : " +
                          loadAs(t, "xv.v[e ^ 1]") + ")"
                    : "(first ? -" + loadAs(t, "pv.v[e]") + " : " +
                          loadAs(t, "pv.v[e]") + ")";
    src.helper("template <typename T, int N> struct alignas(sizeof(T) * N) "
               "Vec { T v[N]; };\n");
    // The tables' last axis (R) is contiguous and a vector never crosses
    // it: element e of the vector is entry co + e, so + e, and co, so are
    // multiples of kVec (every other stride is a multiple of R, or 0), so
    // the tables load as aligned vectors too.
    std::string cosVec = "Vec<" + storageType(ct) + ", kVec>",
                sinVec = "Vec<" + storageType(st) + ", kVec>";
    body = "    const index_t i = v * kVec, d = i % kD;\n"
           "    const " +
           inVec + " xv = reinterpret_cast<const " + inVec +
           " *>(in)[v];\n"
           "    " +
           outVec +
           " o;\n"
           "    if (d >= kR) {\n"
           "#pragma unroll\n"
           "      for (int e = 0; e < kVec; ++e)\n"
           "        o.v[e] = " +
           storeAs(rt, loadAs(t, "xv.v[e]")) +
           ";\n"
           "      reinterpret_cast<" +
           outVec +
           " *>(out)[v] = o;\n"
           "      continue;\n"
           "    }\n" +
           (interleaved
                ? std::string()
                : "    const bool first = d < kR / 2;\n"
                  "    const " +
                      inVec + " pv = reinterpret_cast<const " + inVec +
                      " *>(in)[(first ? i + kR / 2 : i - kR / 2) / kVec];\n") +
           "    const index_t tl = (i / kD) * kR + d; // index in [..., T, R]\n" +
           tableOffsets + "    const " + cosVec +
           " cv = *reinterpret_cast<const " + cosVec +
           " *>(cos_table + co);\n"
           "    const " +
           sinVec + " sv = *reinterpret_cast<const " + sinVec +
           " *>(sin_table + so);\n"
           "#pragma unroll\n"
           "    for (int e = 0; e < kVec; ++e) {\n"
           "      const float x = " +
           loadAs(t, "xv.v[e]") +
           ";\n"
           "      const float c = " +
           loadAs(ct, "cv.v[e]") +
           ";\n"
           "      const float s = " +
           loadAs(st, "sv.v[e]") +
           ";\n"
           "      const float p = " +
           partner +
           ";\n"
           "      o.v[e] = " +
           storeAs(rt, y) +
           ";\n"
           "    }\n"
           "    reinterpret_cast<" +
           outVec + " *>(out)[v] = o;\n";
  }
  std::string loopVar = vec == 1 ? "i" : "v";
  src.kernel("extern \"C\" __global__ void __launch_bounds__(" +
             std::to_string(ctx.options.blockSize) + ")\n" + ctx.name + "(" +
             inParam(t, "in") + ", " + inParam(ct, "cos_table") + ", " +
             inParam(st, "sin_table") + ", " + outParam(rt, "out") + ") {\n" +
             "  for (index_t " + loopVar +
             " = (index_t)blockIdx.x * blockDim.x + threadIdx.x; " + loopVar +
             " < kN / kVec;\n"
             "       " +
             loopVar + " += (index_t)gridDim.x * blockDim.x) {\n" + body +
             "  }\n}\n");
  return singleKernel(
      out, elementwiseLaunch(src, ctx, n / vec,
                             {KernelArg::operand(0), KernelArg::operand(1),
                              KernelArg::operand(2), KernelArg::result(0)}));
}

} // namespace

void registerAttentionEmitters(EmitterTable &t) {
  addEmitter<AttentionOp>(
      t, [](AttentionOp op, const EmitContext &ctx, OpLowering &out) {
        AttentionParts a{op.getQuery(),  op.getKey(),           op.getValue(),
                         op.getMask(),   op.getResult(),        Value(),
                         op.getCausal(), op.getScaleOrDefault(),
                         op.getSeqMajor(), op};
        return emitAttentionKernel(op, ctx, out, a);
      });
  // The training forward: the same kernel, lse as result #1.
  addEmitter<AttentionLseOp>(
      t, [](AttentionLseOp op, const EmitContext &ctx, OpLowering &out) {
        AttentionParts a{op.getQuery(),  op.getKey(),           op.getValue(),
                         op.getMask(),   op.getResult(),        op.getLse(),
                         op.getCausal(), op.getScaleOrDefault(),
                         op.getSeqMajor(), op};
        if (lowerAttentionToCudnn(a, /*backward=*/false, ctx, out))
          return success();
        return emitAttentionKernel(op, ctx, out, a);
      });
  addEmitter<RotaryOp>(t, emitRotary);
}

} // namespace llmc::codegen
