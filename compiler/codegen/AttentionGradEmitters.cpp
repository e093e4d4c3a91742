//===- AttentionGradEmitters.cpp - attention_grad (FlashAttention-2 bwd) --===//
//
// attention_grad(q, k, v, out, lse, dout) -> (dq, dk, dv) without the
// [T, S] probabilities in memory: they are rebuilt tile by tile as
// P = exp(scale * q.k + mask - lse) from the forward's log-sum-exp. Three
// kernels, none with atomics, so results are bitwise reproducible:
//
//   <name>_dot  Dr = rowsum(dout * out), one warp per query row, into the
//               f32 scratch `rowdot` [B, Hq, T].
//   <name>_kv   a block owns (b, kv head, a tile of kBc keys) and keeps
//               their dK, dV in registers. It walks every query head of
//               its GQA group and every query tile that can see its keys
//               (causal: from the first row that sees the tile's first
//               key) and accumulates
//                 S = q k^T, dP = dout v^T      (step A, kBr x kBc)
//                 P = exp(scale S + mask - lse), dS = P (dP - Dr)
//                 dV += P^T dout, dK += dS^T q  (step B)
//               so dk, dv sum over the group without any atomics.
//   <name>_q    a block owns (b, query head, a tile of kBr queries) and
//               keeps their dQ in registers; it walks the key tiles the
//               rows can see, recomputes step A and adds dS k.
//
// Tiles live in dynamic shared memory with rows padded by one float, and
// 256 threads work as 16 x 16 on register tiles of kBr/16 x kBc/16
// (step A) and keys or rows x features/16 (step B). Rows that see no key
// (lse = -inf) get P = 0 and no gradient, as the reference gives.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/AttentionCudnn.h"
#include "compiler/codegen/AttentionMma.h"
#include "compiler/codegen/Emitters.h"

#include "dialects/llmc/LlmcOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

constexpr unsigned kThreads = 256;
constexpr int64_t kKeyTile = 64;
constexpr unsigned kSharedLimit = 227 * 1024;

/// Kernel constants shared by the three kernels.
void attentionConstants(KernelSource &src, const AttentionParts &a,
                        const Shape &q, const Shape &k, int64_t Dv,
                        int64_t rowTile, double scale) {
  attentionShapeConstants(src, q, k, Dv);
  attentionStrideConstants(src, a);
  src.constant("kBr", rowTile, "query rows per tile");
  src.constant("kBc", kKeyTile, "keys per tile");
  src.constant("kRowsPT", rowTile / 16, "tile rows per thread (16 x 16)");
  src.constant("kKeysPT", kKeyTile / 16, "tile keys per thread");
  src.constant("kDPT", (q[3] + 15) / 16, "q/k features per thread");
  src.constant("kDvPT", (Dv + 15) / 16, "v features per thread");
  src.floatConstant("kScale", scale, "applied to q.k");
  src.staticAssert("kHq % kHkv == 0", "GQA groups are whole");
  src.staticAssert("kBr % 16 == 0 && kBc % 16 == 0",
                   "16 x 16 threads tile the scores");
}

/// Step A over the tile pair (t0.., s0..) of head h: dS (and P when `withP`)
/// into shared memory. Expects qs, dos, lses, dds, ks, vs loaded and
/// `maskAt(t, s)` text for the mask (empty without one).
std::string stepA(bool causal, const std::string &maskCode, bool withP) {
  std::string visible = "t < kT && s < kS";
  if (causal)
    visible += " && s <= t + kS - kT";
  return R"(    {
      const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
      float sc[kRowsPT][kKeysPT], dp[kRowsPT][kKeysPT];
      #pragma unroll
      for (int i = 0; i < kRowsPT; ++i)
        #pragma unroll
        for (int j = 0; j < kKeysPT; ++j)
          sc[i][j] = dp[i][j] = 0.0f;
      for (int d = 0; d < kD; ++d) {
        float a[kRowsPT], bk[kKeysPT];
        #pragma unroll
        for (int i = 0; i < kRowsPT; ++i)
          a[i] = qs[(ty + 16 * i) * (kD + 1) + d];
        #pragma unroll
        for (int j = 0; j < kKeysPT; ++j)
          bk[j] = ks[(tx + 16 * j) * (kD + 1) + d];
        #pragma unroll
        for (int i = 0; i < kRowsPT; ++i)
          #pragma unroll
          for (int j = 0; j < kKeysPT; ++j)
            sc[i][j] += a[i] * bk[j];
      }
      for (int e = 0; e < kDv; ++e) {
        float a[kRowsPT], bv[kKeysPT];
        #pragma unroll
        for (int i = 0; i < kRowsPT; ++i)
          a[i] = dos[(ty + 16 * i) * (kDv + 1) + e];
        #pragma unroll
        for (int j = 0; j < kKeysPT; ++j)
          bv[j] = vs[(tx + 16 * j) * (kDv + 1) + e];
        #pragma unroll
        for (int i = 0; i < kRowsPT; ++i)
          #pragma unroll
          for (int j = 0; j < kKeysPT; ++j)
            dp[i][j] += a[i] * bv[j];
      }
      #pragma unroll
      for (int i = 0; i < kRowsPT; ++i) {
        const int r = ty + 16 * i;
        const index_t t = t0 + r;
        const float rowLse = lses[r], rowDot = dds[r];
        #pragma unroll
        for (int j = 0; j < kKeysPT; ++j) {
          const int c = tx + 16 * j;
          const index_t s = s0 + c;
          float p = 0.0f;
          if ()" +
         visible +
         R"( && rowLse != -INFINITY) {
            float score = sc[i][j] * kScale;
)" + maskCode +
         R"(            p = expf(score - rowLse);
          }
)" + (withP ? "          ps[r * (kBc + 1) + c] = p;\n" : "") +
         R"(          dss[r * (kBc + 1) + c] = p * (dp[i][j] - rowDot);
        }
      }
    }
)";
}

/// Loads the query-side tile of rows t0.. of head h: q, dout, lse, rowdot.
std::string loadRows(Type qt, Type gt) {
  return "    for (index_t e = threadIdx.x; e < kBr * kD; e += blockDim.x) {\n"
         "      const index_t r = e / kD, d = e % kD;\n"
         "      qs[r * (kD + 1) + d] = t0 + r < kT ? " +
         loadAs(qt, "q[b * kQsB + h * kQsH + (t0 + r) * kQsT + d]") +
         " : 0.0f;\n"
         "    }\n"
         "    for (index_t e = threadIdx.x; e < kBr * kDv; e += blockDim.x) {\n"
         "      const index_t r = e / kDv, d = e % kDv;\n"
         "      dos[r * (kDv + 1) + d] = t0 + r < kT ? " +
         loadAs(gt, "dout[b * kOsB + h * kOsH + (t0 + r) * kOsT + d]") +
         " : 0.0f;\n"
         "    }\n"
         "    for (index_t r = threadIdx.x; r < kBr; r += blockDim.x) {\n"
         "      lses[r] = t0 + r < kT ? lse[qRow0 + r] : -INFINITY;\n"
         "      dds[r] = t0 + r < kT ? rowdot[qRow0 + r] : 0.0f;\n"
         "    }\n";
}

/// Loads the key-side tile of keys s0.. of kv head kvh: k, v.
std::string loadKeys(Type kt, Type vt) {
  return "    for (index_t e = threadIdx.x; e < kBc * kD; e += blockDim.x) {\n"
         "      const index_t c = e / kD, d = e % kD;\n"
         "      ks[c * (kD + 1) + d] = s0 + c < kS ? " +
         loadAs(kt, "k[b * kKsB + kvh * kKsH + (s0 + c) * kKsT + d]") +
         " : 0.0f;\n"
         "    }\n"
         "    for (index_t e = threadIdx.x; e < kBc * kDv; e += blockDim.x) {\n"
         "      const index_t c = e / kDv, d = e % kDv;\n"
         "      vs[c * (kDv + 1) + d] = s0 + c < kS ? " +
         loadAs(vt, "v[b * kVsB + kvh * kVsH + (s0 + c) * kVsT + d]") +
         " : 0.0f;\n"
         "    }\n";
}

const char *kSharedLayout =
    R"(  extern __shared__ float smem[];
  float *qs = smem;                        // [kBr][kD + 1]
  float *dos = qs + kBr * (kD + 1);        // [kBr][kDv + 1]
  float *ks = dos + kBr * (kDv + 1);       // [kBc][kD + 1]
  float *vs = ks + kBc * (kD + 1);         // [kBc][kDv + 1]
  float *dss = vs + kBc * (kDv + 1);       // [kBr][kBc + 1]
  float *ps = dss + kBr * (kBc + 1);       // [kBr][kBc + 1] (dK/dV only)
  float *lses = ps + kBr * (kBc + 1);      // [kBr]
  float *dds = lses + kBr;                 // [kBr]
)";

LogicalResult emitAttentionGrad(AttentionGradOp op, const EmitContext &ctx,
                                OpLowering &out) {
  AttentionParts parts{op.getQuery(), op.getKey(), op.getValue(),
                       op.getMask(),  Value(),     Value(),
                       op.getCausal(), op.getScaleOrDefault(),
                       op.getSeqMajor(), op};
  if (lowerAttentionToCudnn(parts, /*backward=*/true, ctx, out))
    return success();
  Shape q = parts.qShape(), k = parts.kShape(),
        v = parts.vShape();
  int64_t B = q[0], Hq = q[1], T = q[2], D = q[3];
  int64_t Hkv = k[1], S = k[2], Dv = v[3];
  if (B > 65535 || Hq > 65535)
    return op.emitError("codegen: attention_grad with batch ")
           << B << " and " << Hq
           << " heads exceeds the grid (at most 65535 each)";
  // lse is f32 here: Codegen.cpp rejects f64 (reference-only) tensors.
  Type qt = elementTypeOf(op.getQuery()), kt = elementTypeOf(op.getKey()),
       vt = elementTypeOf(op.getValue()), ot = elementTypeOf(op.getOutput()),
       lt = elementTypeOf(op.getLse()), gt = elementTypeOf(op.getGrad());
  int64_t rowTile = std::max(D, Dv) <= 64 ? 64 : 32;
  int64_t sharedFloats = rowTile * (D + 1) + rowTile * (Dv + 1) +
                         kKeyTile * (D + 1) + kKeyTile * (Dv + 1) +
                         2 * rowTile * (kKeyTile + 1) + 2 * rowTile;
  unsigned shared = static_cast<unsigned>(4 * sharedFloats);
  if (shared > kSharedLimit)
    return op.emitError("codegen: attention_grad head dims ")
           << D << "/" << Dv << " need " << shared
           << " bytes of shared memory; at most " << kSharedLimit
           << " are available";
  double scale = op.getScaleOrDefault();
  bool causal = op.getCausal();
  out.kind = OpLowering::Kind::Kernels;
  out.scratch.push_back({"rowdot", DType::F32, {B, Hq, T}});

  // Mask: strides in [B, Hq, T, S] and the code that applies it.
  std::string maskParam, maskCode;
  std::vector<KernelArg> maskArg;
  if (Value mask = op.getMask()) {
    Type mt = elementTypeOf(mask);
    maskParam = ", " + inParam(mt, "mask");
    maskArg.push_back(KernelArg::operand(6));
    std::string at = "mask[b * kMaskB + h * kMaskH + t * kMaskT + s * kMaskS]";
    maskCode = mt.isSignlessInteger(1)
                   ? "            if (" + at +
                         " == 0)\n"
                         "              score = -INFINITY;\n"
                   : "            score += " + loadAs(mt, at) + ";\n";
  }

  // Kernel 1: Dr = rowsum(dout * out).
  std::string dotName = ctx.name + "_dot";
  KernelSource dot(op, dotName);
  dot.scheme("attention_grad, kernel 1/3: Dr = rowsum(dout * out), one warp "
             "per query row, into the f32 scratch `rowdot`");
  dot.constant("kRows", B * Hq * T, "query rows");
  dot.constant("kDv", Dv, "v head dim");
  // Row (b, h, t) of the [B, Hq, T] rowdot; out/dout may be [B, T, Hq, Dv].
  std::string rowAt = "row * kDv";
  if (parts.seqMajor) {
    dot.constant("kHq", Hq, "query heads");
    dot.constant("kT", T, "query positions");
    rowAt = "((row / (kHq * kT) * kT + row % kT) * kHq + row / kT % kHq) * kDv";
  }
  dot.kernel(
      "extern \"C\" __global__ void __launch_bounds__(256)\n" + dotName + "(" +
      inParam(ot, "out") + ", " + inParam(gt, "dout") +
      ", float *__restrict__ rowdot) {\n"
      "  const index_t row = (index_t)blockIdx.x * 8 + threadIdx.x / 32;\n"
      "  const int lane = threadIdx.x % 32;\n"
      "  if (row >= kRows)\n"
      "    return;\n"
      "  float acc = 0.0f;\n"
      "  const index_t at = " + rowAt + ";\n"
      "  for (index_t e = lane; e < kDv; e += 32)\n"
      "    acc += " +
      loadAs(gt, "dout[at + e]") + " * " + loadAs(ot, "out[at + e]") +
      ";\n"
      "  for (int o = 16; o > 0; o >>= 1)\n"
      "    acc += __shfl_xor_sync(0xffffffffu, acc, o);\n"
      "  if (lane == 0)\n"
      "    rowdot[row] = acc;\n"
      "}\n");
  EmittedKernel k1;
  k1.name = dotName;
  k1.source = dot.str();
  k1.grid = {static_cast<unsigned>((B * Hq * T + 7) / 8), 1, 1};
  k1.block = {256, 1, 1};
  k1.args = {KernelArg::operand(3), KernelArg::operand(5),
             KernelArg::scratch(0)};
  out.kernels.push_back(std::move(k1));

  std::string common = inParam(qt, "q") + ", " + inParam(kt, "k") + ", " +
                       inParam(vt, "v") + ", " + inParam(lt, "lse") + ", " +
                       inParam(gt, "dout") +
                       ", const float *__restrict__ rowdot" + maskParam;
  std::vector<KernelArg> commonArgs = {
      parts.qkvArg(0), parts.qkvArg(1), parts.qkvArg(2),
      KernelArg::operand(4), KernelArg::operand(5), KernelArg::scratch(0)};
  commonArgs.insert(commonArgs.end(), maskArg.begin(), maskArg.end());
  if (attention16BitEligible(qt, kt, vt, D, Dv) && gt == qt)
    return appendAttentionGradMma16(op, ctx, out, parts, common, commonArgs);
  if (attentionMmaEligible(D, Dv))
    return appendAttentionGradMma(op, ctx, out, parts, common, commonArgs);

  // Kernel 2: dK, dV per key tile.
  std::string kvName = ctx.name + "_kv";
  KernelSource kv(op, kvName);
  kv.scheme("attention_grad, kernel 2/3: a block owns (b, kv head, " +
            std::to_string(kKeyTile) +
            " keys) and walks the query tiles of every head of its group: "
            "dV += P^T dout, dK += scale dS^T q in registers (no atomics)");
  attentionConstants(kv, parts, q, k, Dv, rowTile, scale);
  if (op.getMask())
    maskConstants(kv, op.getMask(), {B, Hq, T, S});
  std::string firstTile =
      causal ? "  // Causal: row t sees key s0 from t = s0 - (kS - kT) on.\n"
               "  const index_t tFirst = max((index_t)0, s0 - (kS - kT));\n"
               "  const index_t tileStart = tFirst / kBr * kBr;\n"
             : "  const index_t tileStart = 0;\n";
  kv.kernel("extern \"C\" __global__ void __launch_bounds__(256)\n" + kvName +
            "(" + common + ", " + outParam(kt, "dk") + ", " +
            outParam(vt, "dv") + ") {\n" + kSharedLayout +
            "  const index_t b = blockIdx.z, kvh = blockIdx.y;\n"
            "  const index_t s0 = (index_t)blockIdx.x * kBc;\n" +
            loadKeys(kt, vt) +
            "  const int ky = threadIdx.x / 16, fx = threadIdx.x % 16;\n"
            "  float dkAcc[kKeysPT][kDPT], dvAcc[kKeysPT][kDvPT];\n"
            "  #pragma unroll\n"
            "  for (int i = 0; i < kKeysPT; ++i) {\n"
            "    #pragma unroll\n"
            "    for (int j = 0; j < kDPT; ++j)\n"
            "      dkAcc[i][j] = 0.0f;\n"
            "    #pragma unroll\n"
            "    for (int j = 0; j < kDvPT; ++j)\n"
            "      dvAcc[i][j] = 0.0f;\n"
            "  }\n" +
            firstTile +
            "  for (index_t h = kvh * kGroup; h < (kvh + 1) * kGroup; ++h) {\n"
            "  // One head of the group at a time, each query tile in turn.\n"
            "  for (index_t t0 = tileStart; t0 < kT; t0 += kBr) {\n"
            "    const index_t qRow0 = (b * kHq + h) * kT + t0;\n"
            "    __syncthreads(); // the previous tile is consumed\n" +
            loadRows(qt, gt) + "    __syncthreads();\n" +
            stepA(causal, maskCode, /*withP=*/true) +
            "    __syncthreads();\n"
            "    for (int r = 0; r < kBr; ++r) {\n"
            "      float p[kKeysPT], ds[kKeysPT];\n"
            "      #pragma unroll\n"
            "      for (int i = 0; i < kKeysPT; ++i) {\n"
            "        p[i] = ps[r * (kBc + 1) + ky + 16 * i];\n"
            "        ds[i] = dss[r * (kBc + 1) + ky + 16 * i];\n"
            "      }\n"
            "      #pragma unroll\n"
            "      for (int j = 0; j < kDvPT; ++j) {\n"
            "        const int e = fx + 16 * j;\n"
            "        const float g = e < kDv ? dos[r * (kDv + 1) + e] : 0.0f;\n"
            "        #pragma unroll\n"
            "        for (int i = 0; i < kKeysPT; ++i)\n"
            "          dvAcc[i][j] += p[i] * g;\n"
            "      }\n"
            "      #pragma unroll\n"
            "      for (int j = 0; j < kDPT; ++j) {\n"
            "        const int d = fx + 16 * j;\n"
            "        const float x = d < kD ? qs[r * (kD + 1) + d] : 0.0f;\n"
            "        #pragma unroll\n"
            "        for (int i = 0; i < kKeysPT; ++i)\n"
            "          dkAcc[i][j] += ds[i] * x;\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "  }\n"
            "  #pragma unroll\n"
            "  for (int i = 0; i < kKeysPT; ++i) {\n"
            "    const index_t s = s0 + ky + 16 * i;\n"
            "    if (s >= kS)\n"
            "      continue;\n"
            "    #pragma unroll\n"
            "    for (int j = 0; j < kDPT; ++j) {\n"
            "      const int d = fx + 16 * j;\n"
            "      if (d < kD)\n"
            "        dk[b * kKsB + kvh * kKsH + s * kKsT + d] = " +
            storeAs(kt, "dkAcc[i][j] * kScale") +
            ";\n"
            "    }\n"
            "    #pragma unroll\n"
            "    for (int j = 0; j < kDvPT; ++j) {\n"
            "      const int e = fx + 16 * j;\n"
            "      if (e < kDv)\n"
            "        dv[b * kVsB + kvh * kVsH + s * kVsT + e] = " +
            storeAs(vt, "dvAcc[i][j]") +
            ";\n"
            "    }\n"
            "  }\n"
            "}\n");
  EmittedKernel k2;
  k2.name = kvName;
  k2.source = kv.str();
  k2.grid = {static_cast<unsigned>((S + kKeyTile - 1) / kKeyTile),
             static_cast<unsigned>(Hkv), static_cast<unsigned>(B)};
  k2.block = {kThreads, 1, 1};
  k2.sharedBytes = shared;
  k2.args = commonArgs;
  k2.args.push_back(parts.gradArg(1));
  k2.args.push_back(parts.gradArg(2));
  out.kernels.push_back(std::move(k2));

  // Kernel 3: dQ per query tile.
  std::string qName = ctx.name + "_q";
  KernelSource qk(op, qName);
  qk.scheme("attention_grad, kernel 3/3: a block owns (b, head, " +
            std::to_string(rowTile) +
            " queries) and walks the key tiles they see: dQ += scale dS k in "
            "registers; the longest (last, under causal) tiles start first");
  attentionConstants(qk, parts, q, k, Dv, rowTile, scale);
  if (op.getMask())
    maskConstants(qk, op.getMask(), {B, Hq, T, S});
  std::string kvEnd =
      causal ? "  // Causal: key s is visible to row t when s <= t + S - T.\n"
               "  const index_t lastRow = min(t0 + kBr, kT) - 1;\n"
               "  const index_t kvEnd = max((index_t)0, min(kS, lastRow + kS "
               "- kT + 1));\n"
             : "  const index_t kvEnd = kS;\n";
  qk.kernel(
      "extern \"C\" __global__ void __launch_bounds__(256)\n" + qName + "(" +
      common + ", " + outParam(qt, "dq") + ") {\n" + kSharedLayout +
      "  const index_t b = blockIdx.z, h = blockIdx.y, kvh = h / kGroup;\n"
      "  const index_t t0 = (index_t)(gridDim.x - 1 - blockIdx.x) * kBr;\n"
      "  const index_t qRow0 = (b * kHq + h) * kT + t0;\n" +
      loadRows(qt, gt) + kvEnd +
      "  const int ry = threadIdx.x / 16, fx = threadIdx.x % 16;\n"
      "  float dqAcc[kRowsPT][kDPT];\n"
      "  #pragma unroll\n"
      "  for (int i = 0; i < kRowsPT; ++i)\n"
      "    #pragma unroll\n"
      "    for (int j = 0; j < kDPT; ++j)\n"
      "      dqAcc[i][j] = 0.0f;\n"
      "  for (index_t s0 = 0; s0 < kvEnd; s0 += kBc) {\n"
      "    __syncthreads(); // the previous tile is consumed\n" +
      loadKeys(kt, vt) + "    __syncthreads();\n" +
      stepA(causal, maskCode, /*withP=*/false) +
      "    __syncthreads();\n"
      "    for (int c = 0; c < kBc; ++c) {\n"
      "      float ds[kRowsPT];\n"
      "      #pragma unroll\n"
      "      for (int i = 0; i < kRowsPT; ++i)\n"
      "        ds[i] = dss[(ry + 16 * i) * (kBc + 1) + c];\n"
      "      #pragma unroll\n"
      "      for (int j = 0; j < kDPT; ++j) {\n"
      "        const int d = fx + 16 * j;\n"
      "        const float x = d < kD ? ks[c * (kD + 1) + d] : 0.0f;\n"
      "        #pragma unroll\n"
      "        for (int i = 0; i < kRowsPT; ++i)\n"
      "          dqAcc[i][j] += ds[i] * x;\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "  #pragma unroll\n"
      "  for (int i = 0; i < kRowsPT; ++i) {\n"
      "    const index_t t = t0 + ry + 16 * i;\n"
      "    if (t >= kT)\n"
      "      continue;\n"
      "    #pragma unroll\n"
      "    for (int j = 0; j < kDPT; ++j) {\n"
      "      const int d = fx + 16 * j;\n"
      "      if (d < kD)\n"
      "        dq[b * kQsB + h * kQsH + (t0 + ry + 16 * i) * kQsT + d] = " +
      storeAs(qt, "dqAcc[i][j] * kScale") +
      ";\n"
      "    }\n"
      "  }\n"
      "}\n");
  EmittedKernel k3;
  k3.name = qName;
  k3.source = qk.str();
  k3.grid = {static_cast<unsigned>((T + rowTile - 1) / rowTile),
             static_cast<unsigned>(Hq), static_cast<unsigned>(B)};
  k3.block = {kThreads, 1, 1};
  k3.sharedBytes = shared;
  k3.args = commonArgs;
  k3.args.push_back(parts.gradArg(0));
  out.kernels.push_back(std::move(k3));
  return success();
}

} // namespace

void registerAttentionGradEmitters(EmitterTable &t) {
  addEmitter<AttentionGradOp>(t, emitAttentionGrad);
}

} // namespace llmc::codegen
