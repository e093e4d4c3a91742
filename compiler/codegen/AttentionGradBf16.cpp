//===- AttentionGradBf16.cpp - bf16/f16 tensor-core attention backward ---===//
//
// FlashAttention-2's backward for bf16 or f16 q, k, v, dout on mma.sync
// m16n8k16 (helpers in AttentionBf16.cpp, which also says how the two types
// share the text), split as the f32 kernels are so that nothing needs
// atomics:
//
//   <name>_kv  a block owns (b, kv head, 16 keys per warp), K and V staged
//              once; it walks the query tiles of 64 that see its keys, for
//              every head of its GQA group, double-buffered by cp.async:
//                S^T = K Q^T, dP^T = V dout^T
//                P^T = exp(scale S^T + mask - lse), dS^T = P^T (dP^T - Dr)
//                dV += P^T dout, dK += dS^T Q   (P^T, dS^T rounded to the
//                                                operand type)
//   <name>_q   a block owns (b, head, 16 queries per warp), Q and dout staged
//              once; it walks the key tiles of 64 they see:
//                S = Q K^T, dP = dout V^T, dS = P (dP - Dr), dQ += dS K
//
// P and dS enter their products rounded to the operand type, as in
// FlashAttention's and cuDNN's 16-bit backward; the accumulators are f32.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/AttentionMma.h"

#include "dialects/llmc/LlmcOps.h"

using namespace mlir;

namespace llmc::codegen {

namespace {

// 4 warps per block on both kernels, streamed tiles of 32: measured on an
// H100 at GPT-2's [16, 12, 1024, 64] causal, _kv 0.474 ms + _q 0.266 ms
// against 0.577 + 0.411 with 8 warps and tiles of 64 (8 warps/32: 0.686 +
// 0.290; 4 warps/64: 0.496 + 0.341; 8 warps/128: 0.554 + 0.396).
constexpr unsigned kWarps = 4;
constexpr int64_t kStream = 32;

const char *const kKv = R"(extern "C" __global__ void __launch_bounds__(@THREADS@)
@NAME@(@PARAMS@) {
  extern __shared__ __align__(16) unsigned char smemRaw[];
  @ELT@ *Ks = reinterpret_cast<@ELT@ *>(smemRaw); // [kBc][kLdK] owned keys
  @ELT@ *Vs = Ks + kBc * kLdK;                     // [kBc][kLdV]
  // 2 stages of the streamed query tile: q, dout, lse (log2 units), rowdot.
  @ELT@ *Stream = Vs + kBc * kLdV;
  constexpr int kStage = kBr * kLdQ + kBr * kLdO + 4 * kBr; // in @PTX@s
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const index_t b = blockIdx.z, kvh = blockIdx.y;
  const index_t s0 = (index_t)blockIdx.x * kBc;
  stageAsync<kBc, kD>(Ks, kLdK, k + b * kKsB + kvh * kKsH + s0 * kKsT, kKsT,
                      kS - s0);
  stageAsync<kBc, kDv>(Vs, kLdV, v + b * kVsB + kvh * kVsH + s0 * kVsT, kVsT,
                       kS - s0);
@FIRST@  const index_t nTiles = (kT - tileStart + kBr - 1) / kBr;
  const index_t nIter = kGroup * nTiles;
  // Stages iteration `it` (head, query tile) into stage `st`.
  auto stage = [&](index_t it, int st) {
    const index_t h = kvh * kGroup + it / nTiles;
    const index_t t0 = tileStart + (it % nTiles) * kBr;
    const index_t qRow0 = (b * kHq + h) * kT + t0;
    @ELT@ *Qs = Stream + st * kStage, *Os = Qs + kBr * kLdQ;
    float *Ls = reinterpret_cast<float *>(Os + kBr * kLdO), *Rs = Ls + kBr;
    stageAsync<kBr, kD>(Qs, kLdQ, q + b * kQsB + h * kQsH + t0 * kQsT, kQsT,
                        kT - t0);
    stageAsync<kBr, kDv>(Os, kLdO, dout + b * kOsB + h * kOsH + t0 * kOsT,
                         kOsT, kT - t0);
    for (int r = threadIdx.x; r < kBr; r += kThreadsPerBlock) {
      Ls[r] = t0 + r < kT ? lse[qRow0 + r] * kLog2e : -INFINITY;
      Rs[r] = t0 + r < kT ? rowdot[qRow0 + r] : 0.0f;
    }
  };
  if (nIter > 0)
    stage(0, 0);
  cpAsyncCommit();
  float dkAcc[kD / 8][4] = {}, dvAcc[kDv / 8][4] = {};
  // This lane's keys: key0 and key0 + 8.
  const index_t warpKey0 = s0 + warp * 16, key0 = warpKey0 + g;
  for (index_t it = 0; it < nIter; ++it) {
    const int st = it & 1;
    if (it + 1 < nIter) {
      stage(it + 1, st ^ 1);
      cpAsyncCommit();
      cpAsyncWait<1>();
    } else {
      cpAsyncWait<0>();
    }
    __syncthreads();
    const index_t h = kvh * kGroup + it / nTiles;
    const index_t t0 = tileStart + (it % nTiles) * kBr;
    const @ELT@ *Qs = Stream + st * kStage, *Os = Qs + kBr * kLdQ;
    const float *Ls = reinterpret_cast<const float *>(Os + kBr * kLdO),
                *Rs = Ls + kBr;
    if (@SKIP@) {
      __syncthreads();
      continue;
    }
    float sT[kBr / 8][4] = {}, dpT[kBr / 8][4] = {};
    mmaXYt<kBr / 8, kD>(sT, Ks, kLdK, warp * 16, Qs, kLdQ);
    mmaXYt<kBr / 8, kDv>(dpT, Vs, kLdV, warp * 16, Os, kLdO);
    // Two loops, not a test per element (see the forward).
    if (@FULL@) {
#pragma unroll
      for (int j = 0; j < kBr / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int qi = j * 8 + 2 * t + (e % 2);
          const float p = exp2f(fmaf(sT[j][e], kScaleLog2, -Ls[qi]));
          sT[j][e] = p;
          dpT[j][e] = p * (dpT[j][e] - Rs[qi]);
        }
    } else {
#pragma unroll
      for (int j = 0; j < kBr / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int qi = j * 8 + 2 * t + (e % 2);
          const index_t s = key0 + (e / 2) * 8, tq = t0 + qi;
          float p = 0.0f;
          if (@VISIBLE@ && Ls[qi] != -INFINITY) {
            float x = sT[j][e] * kScale;
@MASK@            p = exp2f(fmaf(x, kLog2e, -Ls[qi]));
          }
          sT[j][e] = p;
          dpT[j][e] = p * (dpT[j][e] - Rs[qi]);
        }
    }
    mmaCZ<kDv / 8, kBr / 8>(dvAcc, sT, Os, kLdO);
    mmaCZ<kD / 8, kBr / 8>(dkAcc, dpT, Qs, kLdQ);
    __syncthreads(); // the stage is consumed before it is refilled
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const index_t s = key0 + 8 * r;
    if (s >= kS)
      continue;
    const index_t atK = b * kKsB + kvh * kKsH + s * kKsT;
    const index_t atV = b * kVsB + kvh * kVsH + s * kVsT;
#pragma unroll
    for (int j = 0; j < kD / 8; ++j) {
      dk[atK + j * 8 + 2 * t] = @DK0@;
      dk[atK + j * 8 + 2 * t + 1] = @DK1@;
    }
#pragma unroll
    for (int j = 0; j < kDv / 8; ++j) {
      dv[atV + j * 8 + 2 * t] = @DV0@;
      dv[atV + j * 8 + 2 * t + 1] = @DV1@;
    }
  }
}
)";

const char *const kQ = R"(extern "C" __global__ void __launch_bounds__(@THREADS@)
@NAME@(@PARAMS@) {
  extern __shared__ __align__(16) unsigned char smemRaw[];
  @ELT@ *Qs = reinterpret_cast<@ELT@ *>(smemRaw); // [kBr][kLdQ] owned rows
  @ELT@ *Os = Qs + kBr * kLdQ;                     // [kBr][kLdO] their dout
  @ELT@ *Stream = Os + kBr * kLdO; // 2 stages of [kBc][kLdK] K, [kBc][kLdV] V
  constexpr int kStage = kBc * kLdK + kBc * kLdV;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const index_t b = blockIdx.z, h = blockIdx.y, kvh = h / kGroup;
  // The longest rows (last, under causal) start first.
  const index_t t0 = (index_t)(gridDim.x - 1 - blockIdx.x) * kBr;
  const index_t qRow0 = (b * kHq + h) * kT + t0;
  const @ELT@ *kp = k + b * kKsB + kvh * kKsH, *vp = v + b * kVsB + kvh * kVsH;
  stageAsync<kBr, kD>(Qs, kLdQ, q + b * kQsB + h * kQsH + t0 * kQsT, kQsT,
                      kT - t0);
  stageAsync<kBr, kDv>(Os, kLdO, dout + b * kOsB + h * kOsH + t0 * kOsT, kOsT,
                       kT - t0);
@KVEND@  if (kvEnd > 0) {
    stageAsync<kBc, kD>(Stream, kLdK, kp, kKsT, kS);
    stageAsync<kBc, kDv>(Stream + kBc * kLdK, kLdV, vp, kVsT, kS);
  }
  cpAsyncCommit();
  // This lane's rows: row0 and row0 + 8 (lse in log2 units).
  const index_t warpRow0 = t0 + warp * 16, row0 = warpRow0 + g;
  float lr[2], rd[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const bool in = row0 + 8 * r < kT;
    lr[r] = in ? lse[qRow0 + warp * 16 + g + 8 * r] * kLog2e : -INFINITY;
    rd[r] = in ? rowdot[qRow0 + warp * 16 + g + 8 * r] : 0.0f;
  }
  float dqAcc[kD / 8][4] = {};
  int buf = 0;
  for (index_t s0 = 0; s0 < kvEnd; s0 += kBc, buf ^= 1) {
    if (s0 + kBc < kvEnd) {
      @ELT@ *next = Stream + (buf ^ 1) * kStage;
      stageAsync<kBc, kD>(next, kLdK, kp + (s0 + kBc) * kKsT, kKsT,
                          kS - s0 - kBc);
      stageAsync<kBc, kDv>(next + kBc * kLdK, kLdV, vp + (s0 + kBc) * kVsT,
                           kVsT, kS - s0 - kBc);
      cpAsyncCommit();
      cpAsyncWait<1>();
    } else {
      cpAsyncWait<0>();
    }
    __syncthreads();
    const @ELT@ *Ks = Stream + buf * kStage, *Vs = Ks + kBc * kLdK;
    if (@SKIP@) {
      __syncthreads();
      continue;
    }
    float sc[kBc / 8][4] = {}, dp[kBc / 8][4] = {};
    mmaXYt<kBc / 8, kD>(sc, Qs, kLdQ, warp * 16, Ks, kLdK);
    mmaXYt<kBc / 8, kDv>(dp, Os, kLdO, warp * 16, Vs, kLdV);
    if (@FULL@) {
#pragma unroll
      for (int j = 0; j < kBc / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = e / 2;
          const float p = exp2f(fmaf(sc[j][e], kScaleLog2, -lr[r]));
          sc[j][e] = p * (dp[j][e] - rd[r]);
        }
    } else {
#pragma unroll
      for (int j = 0; j < kBc / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = e / 2;
          const index_t tq = row0 + 8 * r;
          const index_t s = s0 + j * 8 + 2 * t + (e % 2);
          float p = 0.0f;
          if (@VISIBLE@ && lr[r] != -INFINITY) {
            float x = sc[j][e] * kScale;
@MASK@            p = exp2f(fmaf(x, kLog2e, -lr[r]));
          }
          sc[j][e] = p * (dp[j][e] - rd[r]);
        }
    }
    mmaCZ<kD / 8, kBc / 8>(dqAcc, sc, Ks, kLdK);
    __syncthreads(); // the buffer is consumed before it is refilled
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (row0 + 8 * r >= kT)
      continue;
    const index_t at =
        b * kQsB + h * kQsH + (t0 + warp * 16 + g + 8 * r) * kQsT;
#pragma unroll
    for (int j = 0; j < kD / 8; ++j) {
      dq[at + j * 8 + 2 * t] = @DQ0@;
      dq[at + j * 8 + 2 * t + 1] = @DQ1@;
    }
  }
}
)";

std::string visibleExpr(bool causal) {
  return causal ? "tq < kT && s < kS && s <= tq + kS - kT" : "tq < kT && s < kS";
}

void gradConstants(KernelSource &src, const AttentionParts &a, int64_t rowTile,
                   int64_t keyTile, unsigned warps) {
  Shape q = a.qShape(), k = a.kShape();
  Type et = elementTypeOf(a.query);
  src.use(et);
  tileConstants(src, a, rowTile, keyTile, warps, 8, /*grad=*/true);
  if (a.mask)
    maskConstants(src, a.mask, {q[0], q[1], q[2], k[2]});
  mma16AttentionConstants(src, a.scale, et);
}

} // namespace

LogicalResult appendAttentionGradMma16(Operation *op, const EmitContext &ctx,
                                       OpLowering &out, const AttentionParts &a,
                                       const std::string &common,
                                       const std::vector<KernelArg> &commonArgs) {
  Shape q = a.qShape(), k = a.kShape(), v = a.vShape();
  int64_t B = q[0], Hq = q[1], T = q[2], D = q[3];
  int64_t Hkv = k[1], S = k[2], Dv = v[3];
  Type qt = elementTypeOf(a.query), kt = elementTypeOf(a.key),
       vt = elementTypeOf(a.value);
  const std::string ptx = mma16PtxType(qt);
  std::string mask =
      a.mask ? maskStatements(elementTypeOf(a.mask), "tq", "s", "x",
                              "            ")
             : "";
  // Owned rows (both operands) plus two stages of the streamed side.
  auto kvShared = [&](int64_t owned) {
    return static_cast<unsigned>(2 * owned * (D + Dv + 16) +
                                 2 * (2 * kStream * (D + Dv + 16) +
                                      8 * kStream));
  };
  auto qShared = [&](int64_t owned) {
    return static_cast<unsigned>(2 * owned * (D + Dv + 16) +
                                 2 * 2 * kStream * (D + Dv + 16));
  };
  // At most 2 * 64 * 272 + 2 * (2 * 32 * 272 + 256) = 70 KiB (head dims 128).
  const unsigned kvWarps = kWarps, qWarps = kWarps;
  const int64_t kvOwned = 16 * kvWarps, qOwned = 16 * qWarps;
  std::string noMask = a.mask ? "false" : "true";

  // <name>_kv
  std::string kvName = ctx.name + "_kv";
  KernelSource kv(op, kvName);
  kv.scheme("attention_grad, kernel 2/3, tensor cores (" + ptx +
            " mma.sync m16n8k16): a block owns (b, kv head, " +
            std::to_string(kvOwned) +
            " keys), a warp 16; it walks the query tiles of every head of "
            "its group (double-buffered by cp.async): dV += P^T dout, dK += "
            "scale dS^T q in registers (no atomics)");
  gradConstants(kv, a, kStream, kvOwned, kvWarps);
  std::string first =
      a.causal ? "  // Causal: row t sees key s0 from t = s0 - (kS - kT) on.\n"
                 "  const index_t tFirst = max((index_t)0, s0 - (kS - kT));\n"
                 "  const index_t tileStart = tFirst / kBr * kBr;\n"
               : "  const index_t tileStart = 0;\n";
  std::string kvFull = noMask + " && t0 + kBr <= kT && warpKey0 + 16 <= kS";
  if (a.causal)
    kvFull += " && warpKey0 + 15 <= t0 + kS - kT";
  std::string kvSkip = a.causal
                           ? "warpKey0 >= kS || warpKey0 > t0 + kBr - 1 + kS - kT"
                           : "warpKey0 >= kS";
  std::vector<std::pair<std::string, std::string>> kvHoles = mma16Holes(qt);
  kvHoles.insert(
      kvHoles.end(),
      {{"THREADS", std::to_string(kvWarps * 32)},
            {"NAME", kvName},
            {"PARAMS", common + ", " + outParam(kt, "dk") + ", " +
                           outParam(vt, "dv")},
            {"FIRST", first},
            {"SKIP", kvSkip},
            {"FULL", kvFull},
            {"VISIBLE", visibleExpr(a.causal)},
            {"MASK", mask},
            {"DK0", storeAs(kt, "dkAcc[j][2 * r] * kScale")},
            {"DK1", storeAs(kt, "dkAcc[j][2 * r + 1] * kScale")},
            {"DV0", storeAs(vt, "dvAcc[j][2 * r]")},
            {"DV1", storeAs(vt, "dvAcc[j][2 * r + 1]")}});
  kv.kernel(substitute(kKv, kvHoles));
  std::vector<KernelArg> kvArgs = commonArgs;
  kvArgs.push_back(a.gradArg(1));
  kvArgs.push_back(a.gradArg(2));
  out.kernels.push_back(attentionLaunch(
      kv,
      {static_cast<unsigned>((S + kvOwned - 1) / kvOwned),
       static_cast<unsigned>(Hkv), static_cast<unsigned>(B)},
      kvWarps, kvShared(kvOwned), std::move(kvArgs)));

  // <name>_q
  std::string qName = ctx.name + "_q";
  KernelSource qk(op, qName);
  qk.scheme("attention_grad, kernel 3/3, tensor cores (" + ptx +
            " mma.sync m16n8k16): a block owns (b, head, " +
            std::to_string(qOwned) +
            " queries), a warp 16, and walks the key tiles they see "
            "(double-buffered by cp.async): dQ += scale dS k in registers; "
            "the longest (last, under causal) tiles start first");
  gradConstants(qk, a, qOwned, kStream, qWarps);
  std::string kvEnd =
      a.causal ? "  // Causal: key s is visible to row t when s <= t + S - T.\n"
                 "  const index_t lastRow = min(t0 + kBr, kT) - 1;\n"
                 "  const index_t kvEnd = max((index_t)0, min(kS, lastRow + kS "
                 "- kT + 1));\n"
               : "  const index_t kvEnd = kS;\n";
  std::string qFull = noMask + " && warpRow0 + 16 <= kT && s0 + kBc <= kS";
  if (a.causal)
    qFull += " && s0 + kBc - 1 <= warpRow0 + kS - kT";
  std::string qSkip = a.causal ? "warpRow0 >= kT || s0 > warpRow0 + 15 + kS - kT"
                               : "warpRow0 >= kT";
  std::vector<std::pair<std::string, std::string>> qHoles = mma16Holes(qt);
  qHoles.insert(
      qHoles.end(),
      {{"THREADS", std::to_string(qWarps * 32)},
           {"NAME", qName},
           {"PARAMS", common + ", " + outParam(qt, "dq")},
           {"KVEND", kvEnd},
           {"SKIP", qSkip},
           {"FULL", qFull},
           {"VISIBLE", visibleExpr(a.causal)},
           {"MASK", mask},
           {"DQ0", storeAs(qt, "dqAcc[j][2 * r] * kScale")},
           {"DQ1", storeAs(qt, "dqAcc[j][2 * r + 1] * kScale")}});
  qk.kernel(substitute(kQ, qHoles));
  std::vector<KernelArg> qArgs = commonArgs;
  qArgs.push_back(a.gradArg(0));
  out.kernels.push_back(attentionLaunch(
      qk,
      {static_cast<unsigned>((T + qOwned - 1) / qOwned),
       static_cast<unsigned>(Hq), static_cast<unsigned>(B)},
      qWarps, qShared(qOwned), std::move(qArgs)));
  return success();
}

} // namespace llmc::codegen
