//===- AttentionGradMma.cpp - Tensor-core (3xTF32) attention backward -----===//
//
// FlashAttention-2's backward on m16n8k8 TF32 tiles (3xTF32, see
// AttentionMma.h), the same split as the CUDA-core kernels so that nothing
// needs atomics:
//
//   <name>_kv  a block owns (b, kv head, 64 keys), a warp 16 of them, dK and
//              dV in registers. For every query head of the GQA group and
//              every query tile of 64 that sees its keys (q, dout, lse and
//              rowdot staged in shared memory):
//                S^T = K Q^T, dP^T = V dout^T           (C fragments)
//                P^T = exp(scale S^T + mask - lse), dS^T = P^T (dP^T - Dr)
//                dV += P^T dout, dK += dS^T Q           (A from C by shuffles)
//   <name>_q   a block owns (b, head, 64 queries), a warp 16 of them, dQ in
//              registers; it walks the key tiles they see:
//                S = Q K^T, dP = dout V^T, dS = P (dP - Dr), dQ += dS K
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/AttentionMma.h"

#include "dialects/llmc/LlmcOps.h"

using namespace mlir;

namespace llmc::codegen {

namespace {

// A block owns 16 rows per warp of one side and streams tiles of 64 of the
// other through shared memory: 8 warps (each streamed tile serves 128 owned
// rows) where the shared memory fits, 4 for head dims above 64.
constexpr unsigned kMaxWarps = 8;
constexpr int64_t kStream = 64;
constexpr unsigned kSharedLimit = 227 * 1024;

void gradConstants(KernelSource &src, const AttentionParts &a, int64_t rowTile,
                   int64_t keyTile, unsigned warps) {
  Shape q = a.qShape(), k = a.kShape();
  tileConstants(src, a, rowTile, keyTile, warps, 4, /*grad=*/true);
  src.floatConstant("kScale", a.scale, "applied to q.k");
  src.staticAssert("kHq % kHkv == 0", "GQA groups are whole");
  src.staticAssert("kD % 8 == 0 && kDv % 8 == 0", "whole m16n8k8 tiles");
  if (a.mask)
    maskConstants(src, a.mask, {q[0], q[1], q[2], k[2]});
  src.helper(kMmaTf32Helpers);
}

/// Stages rows t0.. of head h: q, dout (and lse, rowdot when `stats`).
/// `stats`: the tile is streamed (<name>_kv): lse and rowdot too, and q and
/// dout feed B operands, so they are staged split into {hi, lo}.
std::string loadQueryTile(Type qt, Type gt, int64_t rows, int64_t D,
                          int64_t Dv, bool stats) {
  auto stage = stats ? stageSplit : stageTile;
  std::string code =
      stage(qt, "Qs", "kLdQ", "q + b * kQsB + h * kQsH + t0 * kQsT", "kQsT",
            rows, D, "kT - t0", "    ") +
      stage(gt, "Os", "kLdO", "dout + b * kOsB + h * kOsH + t0 * kOsT",
            "kOsT", rows, Dv, "kT - t0", "    ");
  if (stats)
    code += "    for (index_t r = threadIdx.x; r < kBr; r += blockDim.x) {\n"
            "      Ls[r] = t0 + r < kT ? lse[qRow0 + r] : -INFINITY;\n"
            "      Rs[r] = t0 + r < kT ? rowdot[qRow0 + r] : 0.0f;\n"
            "    }\n";
  return code;
}

/// Stages keys s0.. of kv head kvh: k, v.
/// `split`: the tile is streamed (<name>_q) and feeds B operands.
std::string loadKeyTile(Type kt, Type vt, int64_t rows, int64_t D, int64_t Dv,
                        bool split) {
  auto stage = split ? stageSplit : stageTile;
  return stage(kt, "Ks", "kLdK", "k + b * kKsB + kvh * kKsH + s0 * kKsT",
               "kKsT", rows, D, "kS - s0", "    ") +
         stage(vt, "Vs", "kLdV", "v + b * kVsB + kvh * kVsH + s0 * kVsT",
               "kVsT", rows, Dv, "kS - s0", "    ");
}

std::string visibleExpr(bool causal) {
  return causal ? "tq < kT && s < kS && s <= tq + kS - kT" : "tq < kT && s < kS";
}

/// `float name[tiles][4] = {};`: an accumulator of C fragments.
std::string zeroTile(const std::string &name, const std::string &tiles) {
  return "  float " + name + "[" + tiles + "][4] = {};\n";
}

} // namespace

LogicalResult appendAttentionGradMma(Operation *op, const EmitContext &ctx,
                                     OpLowering &out, const AttentionParts &a,
                                     const std::string &common,
                                     const std::vector<KernelArg> &commonArgs) {
  Shape q = a.qShape(), k = a.kShape(), v = a.vShape();
  int64_t B = q[0], Hq = q[1], T = q[2], D = q[3];
  int64_t Hkv = k[1], S = k[2], Dv = v[3];
  Type qt = elementTypeOf(a.query), kt = elementTypeOf(a.key),
       vt = elementTypeOf(a.value), gt = elementTypeOf(op->getOperand(5));
  std::string mask =
      a.mask ? maskStatements(elementTypeOf(a.mask), "tq", "s", "x",
                              "          ")
             : "";
  // Owned rows plus one streamed tile of the other side (and its lse and
  // rowdot for <name>_kv).
  auto sharedBytes = [&](int64_t owned, int64_t stream) {
    return static_cast<unsigned>(4 * owned * (D + Dv + 8) +
                                 8 * stream * (D + Dv + 8) + 4 * 2 * stream);
  };
  const unsigned kKvWarps =
      sharedBytes(16 * kMaxWarps, kStream) <= kSharedLimit ? kMaxWarps : 4;
  const unsigned kQWarps = kKvWarps;
  const int64_t kvOwned = 16 * kKvWarps, qOwned = 16 * kQWarps;

  // <name>_kv: dK, dV of 64 keys.
  std::string kvName = ctx.name + "_kv";
  KernelSource kv(op, kvName);
  kv.scheme("attention_grad, kernel 2/3, tensor cores (3xTF32): a block owns "
            "(b, kv head, " + std::to_string(kvOwned) + " keys), a warp 16; it walks the query tiles of "
            "every head of its group: dV += P^T dout, dK += scale dS^T q in "
            "registers (no atomics)");
  gradConstants(kv, a, kStream, kvOwned, kKvWarps);
  std::string firstTile =
      a.causal ? "  // Causal: row t sees key s0 from t = s0 - (kS - kT) on.\n"
                 "  const index_t tFirst = max((index_t)0, s0 - (kS - kT));\n"
                 "  const index_t tileStart = tFirst / kBr * kBr;\n"
               : "  const index_t tileStart = 0;\n";
  kv.kernel(
      "extern \"C\" __global__ void __launch_bounds__(" +
      std::to_string(kKvWarps * 32) + ")\n" + kvName + "(" + common + ", " +
      outParam(kt, "dk") + ", " + outParam(vt, "dv") +
      ") {\n"
      "  extern __shared__ float smem[];\n"
      "  float *Ks = smem;               // [kBc][kLdK] the block's keys\n"
      "  float *Vs = Ks + kBc * kLdK;    // [kBc][kLdV]\n"
      "  // The streamed query tile, split into {hi, lo} TF32 pairs.\n"
      "  uint2 *Qs = reinterpret_cast<uint2 *>(Vs + kBc * kLdV); // [kBr][kLdQ]\n"
      "  uint2 *Os = Qs + kBr * kLdQ;    // [kBr][kLdO] its dout\n"
      "  float *Ls = reinterpret_cast<float *>(Os + kBr * kLdO); // [kBr] lse\n"
      "  float *Rs = Ls + kBr;           // [kBr] its rowdot\n"
      "  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;\n"
      "  const int g = lane / 4, t = lane % 4;\n"
      "  const index_t b = blockIdx.z, kvh = blockIdx.y;\n"
      "  const index_t s0 = (index_t)blockIdx.x * kBc;\n" +
      loadKeyTile(kt, vt, kvOwned, D, Dv, false) + zeroTile("dkAcc", "kD / 8") +
      zeroTile("dvAcc", "kDv / 8") + firstTile +
      "  // This lane's keys: key0 and key0 + 8.\n"
      "  const index_t key0 = s0 + warp * 16 + g;\n"
      "  for (index_t h = kvh * kGroup; h < (kvh + 1) * kGroup; ++h)\n"
      "  for (index_t t0 = tileStart; t0 < kT; t0 += kBr) {\n"
      "    const index_t qRow0 = (b * kHq + h) * kT + t0;\n"
      "    __syncthreads(); // the previous tile is consumed\n" +
      loadQueryTile(qt, gt, kStream, D, Dv, true) +
      "    __syncthreads();\n"
      "    float st[kBr / 8][4] = {}, dpt[kBr / 8][4] = {};\n"
      "    mmaTile<kBr / 8, kD, true>(st, Ks + warp * 16 * kLdK, kLdK, Qs, "
      "kLdQ);\n"
      "    mmaTile<kBr / 8, kDv, true>(dpt, Vs + warp * 16 * kLdV, kLdV, Os, "
      "kLdO);\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < kBr / 8; ++j)\n"
      "#pragma unroll\n"
      "      for (int e = 0; e < 4; ++e) {\n"
      "        const index_t s = key0 + (e / 2) * 8;\n"
      "        const int qi = j * 8 + 2 * t + (e % 2);\n"
      "        const index_t tq = t0 + qi;\n"
      "        float p = 0.0f;\n"
      "        if (" +
      visibleExpr(a.causal) +
      " && Ls[qi] != -INFINITY) {\n"
      "          float x = st[j][e] * kScale;\n" +
      mask +
      "          p = expf(x - Ls[qi]);\n"
      "        }\n"
      "        st[j][e] = p;\n"
      "        dpt[j][e] = p * (dpt[j][e] - Rs[qi]);\n"
      "      }\n"
      "    // Each tile's products start from zero and join the totals with\n"
      "    // an f32 add: the tensor core's accumulation is not round-to-\n"
      "    // nearest, and over 1024 queries its error reached 1e-5.\n"
      "    {\n"
      "      float tile[kDv / 8][4] = {};\n"
      "      mmaRegA<kDv / 8, kBr / 8, false>(tile, st, Os, kLdO);\n"
      "#pragma unroll\n"
      "      for (int j = 0; j < kDv / 8; ++j)\n"
      "#pragma unroll\n"
      "        for (int e = 0; e < 4; ++e)\n"
      "          dvAcc[j][e] += tile[j][e];\n"
      "    }\n"
      "    {\n"
      "      float tile[kD / 8][4] = {};\n"
      "      mmaRegA<kD / 8, kBr / 8, false>(tile, dpt, Qs, kLdQ);\n"
      "#pragma unroll\n"
      "      for (int j = 0; j < kD / 8; ++j)\n"
      "#pragma unroll\n"
      "        for (int e = 0; e < 4; ++e)\n"
      "          dkAcc[j][e] += tile[j][e];\n"
      "    }\n"
      "  }\n"
      "#pragma unroll\n"
      "  for (int r = 0; r < 2; ++r) {\n"
      "    const index_t s = key0 + 8 * r;\n"
      "    if (s >= kS)\n"
      "      continue;\n"
      "    const index_t atK = b * kKsB + kvh * kKsH + s * kKsT;\n"
      "    const index_t atV = b * kVsB + kvh * kVsH + s * kVsT;\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < kD / 8; ++j) {\n"
      "      dk[atK + j * 8 + 2 * t] = " +
      storeAs(kt, "dkAcc[j][2 * r] * kScale") +
      ";\n"
      "      dk[atK + j * 8 + 2 * t + 1] = " +
      storeAs(kt, "dkAcc[j][2 * r + 1] * kScale") +
      ";\n"
      "    }\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < kDv / 8; ++j) {\n"
      "      dv[atV + j * 8 + 2 * t] = " +
      storeAs(vt, "dvAcc[j][2 * r]") +
      ";\n"
      "      dv[atV + j * 8 + 2 * t + 1] = " +
      storeAs(vt, "dvAcc[j][2 * r + 1]") +
      ";\n"
      "    }\n"
      "  }\n"
      "}\n");
  std::vector<KernelArg> kvArgs = commonArgs;
  kvArgs.push_back(a.gradArg(1));
  kvArgs.push_back(a.gradArg(2));
  out.kernels.push_back(attentionLaunch(
      kv,
      {static_cast<unsigned>((S + kvOwned - 1) / kvOwned),
       static_cast<unsigned>(Hkv), static_cast<unsigned>(B)},
      kKvWarps, sharedBytes(kvOwned, kStream), std::move(kvArgs)));

  // <name>_q: dQ of 64 queries.
  std::string qName = ctx.name + "_q";
  KernelSource qk(op, qName);
  qk.scheme("attention_grad, kernel 3/3, tensor cores (3xTF32): a block owns "
            "(b, head, " + std::to_string(qOwned) + " queries), a warp 16, and walks the key tiles they "
            "see: dQ += scale dS k in registers; the longest (last, under "
            "causal) tiles start first");
  gradConstants(qk, a, qOwned, kStream, kQWarps);
  std::string kvEnd =
      a.causal ? "  // Causal: key s is visible to row t when s <= t + S - T.\n"
                 "  const index_t lastRow = min(t0 + kBr, kT) - 1;\n"
                 "  const index_t kvEnd = max((index_t)0, min(kS, lastRow + kS "
                 "- kT + 1));\n"
               : "  const index_t kvEnd = kS;\n";
  qk.kernel(
      "extern \"C\" __global__ void __launch_bounds__(" +
      std::to_string(kQWarps * 32) + ")\n" + qName + "(" + common + ", " +
      outParam(qt, "dq") +
      ") {\n"
      "  extern __shared__ float smem[];\n"
      "  float *Qs = smem;               // [kBr][kLdQ] the block's queries\n"
      "  float *Os = Qs + kBr * kLdQ;    // [kBr][kLdO] their dout\n"
      "  // The streamed key tile, split into {hi, lo} TF32 pairs.\n"
      "  uint2 *Ks = reinterpret_cast<uint2 *>(Os + kBr * kLdO); // [kBc][kLdK]\n"
      "  uint2 *Vs = Ks + kBc * kLdK;    // [kBc][kLdV]\n"
      "  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;\n"
      "  const int g = lane / 4, t = lane % 4;\n"
      "  const index_t b = blockIdx.z, h = blockIdx.y, kvh = h / kGroup;\n"
      "  const index_t t0 = (index_t)(gridDim.x - 1 - blockIdx.x) * kBr;\n"
      "  const index_t qRow0 = (b * kHq + h) * kT + t0;\n" +
      loadQueryTile(qt, gt, qOwned, D, Dv, false) +
      "  // This lane's rows: row0 and row0 + 8.\n"
      "  const index_t row0 = t0 + warp * 16 + g;\n"
      "  float lr[2], rd[2];\n"
      "#pragma unroll\n"
      "  for (int r = 0; r < 2; ++r) {\n"
      "    const bool in = row0 + 8 * r < kT;\n"
      "    lr[r] = in ? lse[qRow0 + warp * 16 + g + 8 * r] : -INFINITY;\n"
      "    rd[r] = in ? rowdot[qRow0 + warp * 16 + g + 8 * r] : 0.0f;\n"
      "  }\n" +
      kvEnd + zeroTile("dqAcc", "kD / 8") +
      "  for (index_t s0 = 0; s0 < kvEnd; s0 += kBc) {\n"
      "    __syncthreads(); // the previous tile is consumed\n" +
      loadKeyTile(kt, vt, kStream, D, Dv, true) +
      "    __syncthreads();\n"
      "    float sc[kBc / 8][4] = {}, dp[kBc / 8][4] = {};\n"
      "    mmaTile<kBc / 8, kD, true>(sc, Qs + warp * 16 * kLdQ, kLdQ, Ks, "
      "kLdK);\n"
      "    mmaTile<kBc / 8, kDv, true>(dp, Os + warp * 16 * kLdO, kLdO, Vs, "
      "kLdV);\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < kBc / 8; ++j)\n"
      "#pragma unroll\n"
      "      for (int e = 0; e < 4; ++e) {\n"
      "        const int r = e / 2;\n"
      "        const index_t tq = row0 + 8 * r;\n"
      "        const index_t s = s0 + j * 8 + 2 * t + (e % 2);\n"
      "        float p = 0.0f;\n"
      "        if (" +
      visibleExpr(a.causal) +
      " && lr[r] != -INFINITY) {\n"
      "          float x = sc[j][e] * kScale;\n" +
      mask +
      "          p = expf(x - lr[r]);\n"
      "        }\n"
      "        sc[j][e] = p * (dp[j][e] - rd[r]);\n"
      "      }\n"
      "    mmaRegA<kD / 8, kBc / 8, false>(dqAcc, sc, Ks, kLdK);\n"
      "  }\n"
      "#pragma unroll\n"
      "  for (int r = 0; r < 2; ++r) {\n"
      "    if (row0 + 8 * r >= kT)\n"
      "      continue;\n"
      "    const index_t at = b * kQsB + h * kQsH + (row0 + 8 * r) * kQsT;\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < kD / 8; ++j) {\n"
      "      dq[at + j * 8 + 2 * t] = " +
      storeAs(qt, "dqAcc[j][2 * r] * kScale") +
      ";\n"
      "      dq[at + j * 8 + 2 * t + 1] = " +
      storeAs(qt, "dqAcc[j][2 * r + 1] * kScale") +
      ";\n"
      "    }\n"
      "  }\n"
      "}\n");
  std::vector<KernelArg> qArgs = commonArgs;
  qArgs.push_back(a.gradArg(0));
  out.kernels.push_back(attentionLaunch(
      qk,
      {static_cast<unsigned>((T + qOwned - 1) / qOwned),
       static_cast<unsigned>(Hq), static_cast<unsigned>(B)},
      kQWarps, sharedBytes(qOwned, kStream), std::move(qArgs)));
  return success();
}

} // namespace llmc::codegen
