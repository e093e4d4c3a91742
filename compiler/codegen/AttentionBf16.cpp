//===- AttentionBf16.cpp - bf16/f16 tensor-core attention forward ---------===//
//
// The forward for bf16 or f16 q, k, v, FlashAttention-2's loop on mma.sync
// m16n8k16 tiles of that type with f32 accumulation (one product per tile,
// where the f32 kernels of AttentionMma.cpp need three TF32 ones):
//
//   grid (ceil(T / kBr), Hq, B), 4 or 8 warps, a warp owns 16 query rows.
//   Q, K and V tiles live in shared memory as 16-bit values (rows padded by
//   8 elements: ldmatrix's eight 16-byte rows then hit all 32 banks once);
//   K/V tiles are double-buffered with cp.async, so the next tile's loads
//   run under this tile's math. Operands reach registers by ldmatrix (K as
//   it lies for S = Q K^T; V transposed on the fly for O += P V). S's
//   accumulator fragments become P's A fragments by packing pairs to the
//   operand type: the m16n8k16 C layout of two adjacent n-tiles is the A
//   layout of one k-step, no shuffles.
//
// bf16 and f16 share every line but the element type, the pair packing
// and the mma's type string (Mma16Type below); the kernel texts name the
// element type `@ELT@`, so the bf16 source is what it was before f16 used
// it, byte for byte.
//
// Softmax runs in the log2 domain (exp2f of a pre-scaled score, one FFMA);
// lse is written in natural log for the backward. As the f32 kernel and the
// reference evaluator do, P is rounded to the operand type for P V but the
// row sum adds the unrounded P (docs/precision.md). Tiles entirely visible
// to a warp (below the causal diagonal, inside S, no mask) skip the
// per-element tests.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/AttentionMma.h"

#include "dialects/llmc/LlmcOps.h"

using namespace mlir;

namespace llmc::codegen {

bool attention16BitEligible(Type qt, Type kt, Type vt, int64_t d, int64_t dv) {
  bool sameType = qt == kt && qt == vt && (qt.isBF16() || qt.isF16());
  return sameType && d % 16 == 0 && dv % 16 == 0 && d <= 128 && dv <= 128;
}

namespace {

/// The spellings that differ between the bf16 and the f16 kernels.
struct Mma16Type {
  const char *elt;     // the kernels' typedef
  const char *storage; // its CUDA type
  const char *pair;    // two of them in 32 bits
  const char *pack;    // two floats to a pair, round to nearest even
  const char *ptx;     // the mma's operand type
  const char *suffix;  // of the helpers' names
};

Mma16Type mma16Type(Type t) {
  if (t.isF16())
    return {"f16_t", "__half", "__half2", "__floats2half2_rn", "f16", "F16"};
  return {"bf16_t", "__nv_bfloat16", "__nv_bfloat162",
          "__floats2bfloat162_rn", "bf16", "Bf16"};
}

} // namespace

const char *mma16PtxType(Type t) { return mma16Type(t).ptx; }

std::vector<std::pair<std::string, std::string>> mma16Holes(Type t) {
  Mma16Type m = mma16Type(t);
  return {{"ELT", m.elt},     {"STORAGE", m.storage}, {"PAIR", m.pair},
          {"PACK", m.pack},   {"PTX", m.ptx},         {"SFX", m.suffix}};
}

namespace {

const char *const kMma16Helpers = R"(#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
typedef @STORAGE@ @ELT@;
// D += A B on one m16n8k16 tile. Fragments (PTX ISA, .@PTX@): lane 4g + t
// holds A (g, 2t..2t+1), (g + 8, 2t..), (g, 2t + 8..), (g + 8, 2t + 8..);
// B (k 2t..2t+1, n g), (k 2t + 8.., n g); C (g, 2t..2t+1), (g + 8, 2t..).
__device__ __forceinline__ void mma@SFX@(float (&d)[4], const unsigned (&a)[4],
                                        unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.@PTX@.@PTX@.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ unsigned smemAddr(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// Four 8 x 8 b16 matrices; lane l gives the address of row l % 8 of
// matrix l / 8 and receives (row l / 4, columns 2 (l % 4)..+1) of each
// (.trans: of each matrix's transpose).
__device__ __forceinline__ void ldsm4(unsigned (&r)[4], const @ELT@ *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smemAddr(p)));
}
__device__ __forceinline__ void ldsm4t(unsigned (&r)[4], const @ELT@ *p) {
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(smemAddr(p)));
}
// The A fragment of rows r0..r0+15, columns k0..k0+15 of row-major X.
__device__ __forceinline__ void loadA(unsigned (&a)[4], const @ELT@ *X,
                                     int ld, int r0, int k0) {
  const int l = threadIdx.x % 32, m = l / 8;
  ldsm4(a, X + (r0 + (m & 1) * 8 + l % 8) * ld + k0 + (m >> 1) * 8);
}
// B fragments of n-tiles n0 and n0 + 8 at k-step k0, {b0, b1, b0', b1'}:
// loadBn when B(k, n) = Y[n][k] (K for Q K^T), loadBk when B(k, n) = Z[k][n]
// (V for P V), transposed by ldmatrix.
__device__ __forceinline__ void loadBn(unsigned (&b)[4], const @ELT@ *Y,
                                      int ld, int n0, int k0) {
  const int l = threadIdx.x % 32, m = l / 8;
  ldsm4(b, Y + (n0 + (m >> 1) * 8 + l % 8) * ld + k0 + (m & 1) * 8);
}
__device__ __forceinline__ void loadBk(unsigned (&b)[4], const @ELT@ *Z,
                                      int ld, int k0, int n0) {
  const int l = threadIdx.x % 32, m = l / 8;
  ldsm4t(b, Z + (k0 + (m & 1) * 8 + l % 8) * ld + n0 + (m >> 1) * 8);
}
// acc (16 x 8NT) += A (16 x K, rows r0.. of X) B (B(k, n) = Y[n][k]).
template <int NT, int K>
__device__ __forceinline__ void mmaXYt(float (&acc)[NT][4], const @ELT@ *X,
                                       int ldx, int r0, const @ELT@ *Y,
                                       int ldy) {
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 16) {
    unsigned a[4];
    loadA(a, X, ldx, r0, k0);
#pragma unroll
    for (int j = 0; j < NT; j += 2) {
      unsigned b[4];
      loadBn(b, Y, ldy, j * 8, k0);
      mma@SFX@(acc[j], a, b[0], b[1]);
      mma@SFX@(acc[j + 1], a, b[2], b[3]);
    }
  }
}
__device__ __forceinline__ unsigned pack@SFX@(float lo, float hi) {
  const @PAIR@ v = @PACK@(lo, hi);
  return *reinterpret_cast<const unsigned *>(&v);
}
// acc (16 x 8NT) += C Z, C a 16 x 8KT f32 tile in C fragments (rounded to
// @PTX@ here), B(k, n) = Z[k][n].
template <int NT, int KT>
__device__ __forceinline__ void mmaCZ(float (&acc)[NT][4],
                                      const float (&c)[KT][4], const @ELT@ *Z,
                                      int ldz) {
#pragma unroll
  for (int kk = 0; kk < KT / 2; ++kk) {
    const unsigned a[4] = {pack@SFX@(c[2 * kk][0], c[2 * kk][1]),
                           pack@SFX@(c[2 * kk][2], c[2 * kk][3]),
                           pack@SFX@(c[2 * kk + 1][0], c[2 * kk + 1][1]),
                           pack@SFX@(c[2 * kk + 1][2], c[2 * kk + 1][3])};
#pragma unroll
    for (int j = 0; j < NT; j += 2) {
      unsigned b[4];
      loadBk(b, Z, ldz, kk * 16, j * 8);
      mma@SFX@(acc[j], a, b[0], b[1]);
      mma@SFX@(acc[j + 1], a, b[2], b[3]);
    }
  }
}
// 16 bytes global -> shared without a register round trip; `valid` false
// zero-fills (src-size 0 reads nothing).
__device__ __forceinline__ void cpAsync16(void *dst, const void *src,
                                          bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(
                   smemAddr(dst)),
               "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cpAsyncCommit() {
  asm volatile("cp.async.commit_group;");
}
template <int N> __device__ __forceinline__ void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}
// Rows 0..ROWS-1 of a row-major [*, COLS] @PTX@ tensor at src into shared
// dst (row stride ld); rows at or past `valid` are zero.
template <int ROWS, int COLS>
__device__ __forceinline__ void stageAsync(@ELT@ *dst, int ld,
                                           const @ELT@ *src, index_t srcLd,
                                           index_t valid) {
  constexpr int kChunks = ROWS * COLS / 8, kPerRow = COLS / 8;
  // A trip count known at compile time: the loop unrolls without the
  // remainder branches a thread-strided loop compiles to.
  constexpr int kIters = (kChunks + kThreadsPerBlock - 1) / kThreadsPerBlock;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int i = threadIdx.x + it * kThreadsPerBlock;
    if (kChunks % kThreadsPerBlock != 0 && i >= kChunks)
      break;
    const int r = i / kPerRow, c = (i % kPerRow) * 8;
    const bool in = r < valid;
    cpAsync16(dst + r * ld + c, src + (in ? (index_t)r * srcLd + c : 0), in);
  }
}
#else
#error "the @PTX@ attention kernels need sm_80 or newer"
#endif)";

// 4 warps (64 query rows) and key tiles of 64: measured on an H100 at
// GPT-2's [16, 12, 1024, 64] causal, 0.245 ms against 0.264 (8 warps),
// 0.253 (8 warps, tiles of 32), 0.336-0.359 (tiles of 128).
constexpr unsigned kWarps = 4;
constexpr int64_t kKeyTile = 64;

const char *const kForward = R"(extern "C" __global__ void __launch_bounds__(@THREADS@)
@NAME@(@PARAMS@) {
  extern __shared__ __align__(16) unsigned char smemRaw[];
  @ELT@ *Qs = reinterpret_cast<@ELT@ *>(smemRaw); // [kBr][kLdQ]
  @ELT@ *KVs = Qs + kBr * kLdQ; // 2 x ([kBc][kLdK] K, [kBc][kLdV] V)
  constexpr int kStage = kBc * kLdK + kBc * kLdV;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const index_t b = blockIdx.z, h = blockIdx.y;
  // The longest rows (last, under causal) start first.
  const index_t q0 = (index_t)(gridDim.x - 1 - blockIdx.x) * kBr;
  const index_t kvh = h / kGroup;
  const @ELT@ *qp = reinterpret_cast<const @ELT@ *>(q) + b * kQsB + h * kQsH;
  const @ELT@ *kp = reinterpret_cast<const @ELT@ *>(k) + b * kKsB + kvh * kKsH;
  const @ELT@ *vp = reinterpret_cast<const @ELT@ *>(v) + b * kVsB + kvh * kVsH;
@KVEND@  stageAsync<kBr, kD>(Qs, kLdQ, qp + q0 * kQsT, kQsT, kT - q0);
  if (kvEnd > 0) {
    stageAsync<kBc, kD>(KVs, kLdK, kp, kKsT, kS);
    stageAsync<kBc, kDv>(KVs + kBc * kLdK, kLdV, vp, kVsT, kS);
  }
  cpAsyncCommit();
  float o[kDv / 8][4] = {};
  // Rows g and g + 8 of the warp's 16, log2 domain: running max, per-lane sum.
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  const index_t warpRow0 = q0 + warp * 16, rowBase = warpRow0 + g;
  int buf = 0;
  for (index_t s0 = 0; s0 < kvEnd; s0 += kBc, buf ^= 1) {
    if (s0 + kBc < kvEnd) {
      @ELT@ *next = KVs + (buf ^ 1) * kStage;
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
    const @ELT@ *Ks = KVs + buf * kStage, *Vs = Ks + kBc * kLdK;
    // A warp whose rows see none of this tile skips it.
    if (@SKIP@) {
      __syncthreads();
      continue;
    }
    float s[kBc / 8][4] = {};
    mmaXYt<kBc / 8, kD>(s, Qs, kLdQ, warp * 16, Ks, kLdK);
    float mx[2] = {-INFINITY, -INFINITY};
    // Two loops, not a test per element: a per-element `full ? :` was
    // if-converted into per-element predicates and branches.
    if (@FULL@) {
#pragma unroll
      for (int j = 0; j < kBc / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[j][e] *= kScaleLog2;
          mx[e / 2] = fmaxf(mx[e / 2], s[j][e]);
        }
    } else {
#pragma unroll
      for (int j = 0; j < kBc / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const index_t row = rowBase + (e / 2) * 8;
          const index_t col = s0 + j * 8 + 2 * t + (e % 2);
          float x = -INFINITY;
          if (@VISIBLE@) {
            x = s[j][e] * kScale;
@MASK@            x *= kLog2e;
          }
          s[j][e] = x;
          mx[e / 2] = fmaxf(mx[e / 2], x);
        }
    }
    float alpha[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      const float mNew = fmaxf(m[r], mx[r]);
      // Nothing visible yet: keep the (zero) state as it is.
      alpha[r] = mNew == -INFINITY ? 1.0f : exp2f(m[r] - mNew);
      m[r] = mNew;
      l[r] *= alpha[r];
    }
#pragma unroll
    for (int j = 0; j < kBc / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e / 2;
        const float p = m[r] == -INFINITY ? 0.0f : exp2f(s[j][e] - m[r]);
        l[r] += p;
        s[j][e] = p;
      }
#pragma unroll
    for (int j = 0; j < kDv / 8; ++j) {
      o[j][0] *= alpha[0];
      o[j][1] *= alpha[0];
      o[j][2] *= alpha[1];
      o[j][3] *= alpha[1];
    }
    mmaCZ<kDv / 8, kBc / 8>(o, s, Vs, kLdV);
    __syncthreads(); // the buffer is consumed before it is refilled
  }
  // A row that saw no key: output 0 and lse -inf.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    const index_t row = rowBase + 8 * r;
    if (row >= kT)
      continue;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    const index_t at = (b * kHq + h) * kT + row;
    const index_t o0 = b * kOsB + h * kOsH + row * kOsT;
#pragma unroll
    for (int j = 0; j < kDv / 8; ++j) {
      out[o0 + j * 8 + 2 * t] = @STORE0@;
      out[o0 + j * 8 + 2 * t + 1] = @STORE1@;
    }
    if (t == 0)
      lse[at] = l[r] > 0.0f ? (m[r] + log2f(l[r])) * kLn2 : -INFINITY;
  }
}
)";

} // namespace

void mma16AttentionConstants(KernelSource &src, double scale, Type t) {
  src.floatConstant("kScale", scale, "applied to q.k");
  src.floatConstant("kLog2e", 1.4426950408889634, "log2(e)");
  src.floatConstant("kLn2", 0.6931471805599453, "ln(2)");
  src.floatConstant("kScaleLog2", scale * 1.4426950408889634,
                    "kScale * log2(e): scores in the log2 domain");
  src.staticAssert("kHq % kHkv == 0", "GQA groups are whole");
  src.staticAssert("kD % 16 == 0 && kDv % 16 == 0", "whole m16n8k16 tiles");
  src.helper(substitute(kMma16Helpers, mma16Holes(t)));
}

LogicalResult emitAttentionForwardMma16(Operation *op, const EmitContext &ctx,
                                        OpLowering &out,
                                        const AttentionParts &a) {
  Shape q = a.qShape(), v = a.vShape();
  int64_t B = q[0], Hq = q[1], T = q[2], D = q[3], Dv = v[3];
  Type rt = elementTypeOf(a.result), et = elementTypeOf(a.query);
  const std::string ptx = mma16PtxType(et);
  if (B > 65535 || Hq > 65535)
    return op->emitError("codegen: attention with batch ")
           << B << " and " << Hq
           << " heads exceeds the grid (at most 65535 each)";
  // At most 2 * (64 * 136 + 2 * 64 * 272) = 87 KiB for head dims of 128.
  auto sharedFor = [&](int64_t rows) {
    return static_cast<unsigned>(
        2 * (rows * (D + 8) + 2 * kKeyTile * (D + 8 + Dv + 8)));
  };
  const int64_t kRowTile = 16 * kWarps;
  KernelSource src(op, ctx.name);
  src.use(et);
  src.scheme("flash forward on tensor cores (" + ptx +
             " mma.sync m16n8k16, f32 accumulate): " +
             std::to_string(kWarps) +
             " warps x 16 query rows per block, keys in tiles of 64 "
             "double-buffered by cp.async, online softmax in the log2 "
             "domain; never materializes [T, S]");
  src.scheme("writes the row log-sum-exp (f32 [B, Hq, T], natural log) for "
             "the backward; P rounded to " +
             ptx +
             " for P V, the row sum from the unrounded P "
             "(docs/precision.md)");
  tileConstants(src, a, kRowTile, kKeyTile, kWarps, 8, /*grad=*/false);
  mma16AttentionConstants(src, a.scale, et);
  ForwardInterface f = forwardInterface(src, out, a, "            ");
  // Whole tile visible to all 16 rows of the warp.
  std::string full = "!" + std::string(a.mask ? "true" : "false") +
                     " && warpRow0 + 16 <= kT && s0 + kBc <= kS";
  if (a.causal)
    full += " && s0 + kBc - 1 <= warpRow0 + kS - kT";
  std::string skip = a.causal ? "warpRow0 >= kT || s0 > warpRow0 + 15 + kS - kT"
                              : "warpRow0 >= kT";
  std::vector<std::pair<std::string, std::string>> holes = mma16Holes(et);
  holes.insert(
      holes.end(),
      {{"THREADS", std::to_string(kWarps * 32)},
                 {"NAME", ctx.name},
                 {"PARAMS", f.params},
                 {"KVEND", f.kvEnd},
                 {"SKIP", skip},
                 {"FULL", full},
                 {"VISIBLE", f.visible},
                 {"MASK", f.mask},
                 {"STORE0", storeAs(rt, "o[j][2 * r] * inv")},
                 {"STORE1", storeAs(rt, "o[j][2 * r + 1] * inv")}});
  src.kernel(substitute(kForward, holes));
  out.kernels.push_back(attentionLaunch(
      src,
      {static_cast<unsigned>((T + kRowTile - 1) / kRowTile),
       static_cast<unsigned>(Hq), static_cast<unsigned>(B)},
      kWarps, sharedFor(kRowTile), std::move(f.args)));
  out.kind = OpLowering::Kind::Kernels;
  return success();
}

} // namespace llmc::codegen
