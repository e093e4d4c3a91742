// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s
// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=NVRTC

// Flash forward on tensor cores (3xTF32) when the head dims are multiples
// of 8 up to 128: key tiles through shared memory, online softmax, the row
// log-sum-exp written to scratch; never a [T, S] buffer.

// CHECK-LABEL: // ===== attention_0.cu =====
// CHECK:       // attention_0: llmc.attention "/h.0/attn/sdpa"
// CHECK-NEXT:  //   (f32[8, 32, 1024, 64], f32[8, 8, 1024, 64], f32[8, 8, 1024, 64]) -> f32[8, 32, 1024, 64]
// CHECK:       //   flash forward on tensor cores (3xTF32 mma.sync m16n8k8)
// CHECK:       //   writes the row log-sum-exp (f32 [B, Hq, T]) for the backward
// CHECK:       constexpr index_t kHq = 32;  // query heads
// CHECK-NEXT:  constexpr index_t kHkv = 8;  // key/value heads
// CHECK:       constexpr index_t kGroup = 4;  // query heads per kv head (GQA)
// CHECK:       constexpr float kScale = 0.125f;  // applied to q.k
// CHECK-NEXT:  static_assert(kHq % kHkv == 0, "GQA groups are whole");
// CHECK:       hi = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
// CHECK:       mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// CHECK:       extern "C" __global__ void __launch_bounds__(256)
// CHECK-NEXT:  attention_0(const float *__restrict__ q, const float *__restrict__ k, const float *__restrict__ v, float *__restrict__ out, float *__restrict__ lse)
// CHECK:       extern __shared__ float smem[];
// CHECK:       // Causal: key s is visible to row t when s <= t + S - T.
// CHECK:       mmaTile<kBc / 8, kD, true>(s, Qs + warp * 16 * kLdQ, kLdQ, Ks, kLdK);
// CHECK:       if (row < kT && col < kS && col <= row + kS - kT) {
// CHECK:       mmaRegA<kDv / 8, kBc / 8, false>(o, s, Vs, kLdV);
// CHECK:       lse[at] = l[r] > 0.0f ? m[r] + logf(l[r]) : -INFINITY;
// NVRTC:       buffer attention_0.lse scratch f32[8, 32, 1024]
// NVRTC:       step 0 launch attention_0 grid [8, 32, 8] block [256, 1, 1] smem 104448 args (arg0, arg1, arg2, attention_0.out0, attention_0.lse)
// NVRTC:       compiled 1 kernels for sm_90
func.func @forward(%q: tensor<8x32x1024x64xf32>, %k: tensor<8x8x1024x64xf32>, %v: tensor<8x8x1024x64xf32>)
    -> tensor<8x32x1024x64xf32> {
  %0 = llmc.attention %q, %k, %v {causal} : (tensor<8x32x1024x64xf32>, tensor<8x8x1024x64xf32>, tensor<8x8x1024x64xf32>) -> tensor<8x32x1024x64xf32> loc("/h.0/attn/sdpa")
  return %0 : tensor<8x32x1024x64xf32>
}

// -----
// bf16 q, k, v with head dims that are multiples of 16 take the bf16
// tensor-core kernel: ldmatrix operands, cp.async double-buffered key tiles,
// 4 warps, softmax in the log2 domain; fully visible tiles skip the
// per-element tests.
// CHECK-LABEL: // ===== attention_0.cu =====
// CHECK:       //   flash forward on tensor cores (bf16 mma.sync m16n8k16, f32 accumulate): 4 warps x 16 query rows per block
// CHECK:       constexpr float kScaleLog2 = 0.180336878f;  // kScale * log2(e): scores in the log2 domain
// CHECK:       mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK:       ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK:       cp.async.cg.shared.global
// CHECK:       extern "C" __global__ void __launch_bounds__(128)
// CHECK-NEXT:  attention_0(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k, const __nv_bfloat16 *__restrict__ v, __nv_bfloat16 *__restrict__ out, float *__restrict__ lse)
// CHECK:       if (warpRow0 >= kT || s0 > warpRow0 + 15 + kS - kT) {
// CHECK:       mmaXYt<kBc / 8, kD>(s, Qs, kLdQ, warp * 16, Ks, kLdK);
// CHECK:       if (!false && warpRow0 + 16 <= kT && s0 + kBc <= kS && s0 + kBc - 1 <= warpRow0 + kS - kT) {
// CHECK:       if (row < kT && col < kS && col <= row + kS - kT) {
// CHECK:       mmaCZ<kDv / 8, kBc / 8>(o, s, Vs, kLdV);
// CHECK:       lse[at] = l[r] > 0.0f ? (m[r] + log2f(l[r])) * kLn2 : -INFINITY;
// NVRTC:       step 0 launch attention_0 grid [16, 32, 8] block [128, 1, 1] smem 46080 args (arg0, arg1, arg2, attention_0.out0, attention_0.lse)
// NVRTC:       compiled 1 kernels for sm_90
func.func @forward(%q: tensor<8x32x1024x64xbf16>, %k: tensor<8x8x1024x64xbf16>, %v: tensor<8x8x1024x64xbf16>)
    -> tensor<8x32x1024x64xbf16> {
  %0 = llmc.attention %q, %k, %v {causal} : (tensor<8x32x1024x64xbf16>, tensor<8x8x1024x64xbf16>, tensor<8x8x1024x64xbf16>) -> tensor<8x32x1024x64xbf16>
  return %0 : tensor<8x32x1024x64xbf16>
}

// -----

// A bf16 mask goes into the bf16 kernel's per-element path (scaled into the
// log2 domain after it is added); a mask disables the fully-visible path.
// CHECK-LABEL: // ===== attention_0.cu =====
// CHECK:       //   flash forward on tensor cores (bf16 mma.sync m16n8k16
// CHECK:       if (!true && warpRow0 + 16 <= kT && s0 + kBc <= kS) {
// CHECK:       x += __bfloat162float(mask[b * kMaskB + h * kMaskH + (row) * kMaskT + (col) * kMaskS]);
// CHECK-NEXT:  x *= kLog2e;
// NVRTC: compiled 1 kernels for sm_90
func.func @forward(%q: tensor<2x4x45x64xbf16>, %k: tensor<2x2x70x64xbf16>, %v: tensor<2x2x70x48xbf16>,
                   %fm: tensor<45x70xbf16>) -> tensor<2x4x45x48xbf16> {
  %0 = llmc.attention %q, %k, %v mask %fm : (tensor<2x4x45x64xbf16>, tensor<2x2x70x64xbf16>, tensor<2x2x70x48xbf16>, tensor<45x70xbf16>) -> tensor<2x4x45x48xbf16>
  return %0 : tensor<2x4x45x48xbf16>
}

// -----

// f16 q, k, v take the same tensor-core kernel on f16 mma tiles: the
// element typedef, the pair packing (P rounded to f16 for P V) and the mma
// type string are all that differ from bf16.
// CHECK-LABEL: // ===== attention_0.cu =====
// CHECK:       //   flash forward on tensor cores (f16 mma.sync m16n8k16, f32 accumulate): 4 warps x 16 query rows per block
// CHECK:       //   writes the row log-sum-exp (f32 [B, Hq, T], natural log) for the backward; P rounded to f16 for P V
// CHECK:       typedef __half f16_t;
// CHECK:       mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK:       const __half2 v = __floats2half2_rn(lo, hi);
// CHECK-NOT:   bf16
// CHECK:       attention_0(const __half *__restrict__ q, const __half *__restrict__ k, const __half *__restrict__ v, __half *__restrict__ out, float *__restrict__ lse)
// CHECK:       const f16_t *kp = reinterpret_cast<const f16_t *>(k)
// CHECK:       out[o0 + j * 8 + 2 * t] = __float2half_rn(o[j][2 * r] * inv);
// NVRTC:       step 0 launch attention_0 grid [16, 32, 8] block [128, 1, 1] smem 46080 args (arg0, arg1, arg2, attention_0.out0, attention_0.lse)
// NVRTC:       compiled 1 kernels for sm_90
func.func @forward(%q: tensor<8x32x1024x64xf16>, %k: tensor<8x8x1024x64xf16>, %v: tensor<8x8x1024x64xf16>)
    -> tensor<8x32x1024x64xf16> {
  %0 = llmc.attention %q, %k, %v {causal} : (tensor<8x32x1024x64xf16>, tensor<8x8x1024x64xf16>, tensor<8x8x1024x64xf16>) -> tensor<8x32x1024x64xf16>
  return %0 : tensor<8x32x1024x64xf16>
}

// -----

// f16 with a head dim that is not a multiple of 16 (odd_gpt2's 40) stays on
// the 3xTF32 kernel, which rounds P to f16 as the evaluator does.
// CHECK-LABEL: // ===== attention_0.cu =====
// CHECK:       //   flash forward on tensor cores (3xTF32 mma.sync m16n8k8)
// CHECK:       //   f16: P rounded to f16 before P V
// CHECK:       s[j][e] = __half2float(__float2half_rn(p));
// NVRTC:       compiled 1 kernels for sm_90
func.func @forward(%q: tensor<2x4x45x40xf16>, %k: tensor<2x4x45x40xf16>, %v: tensor<2x4x45x40xf16>)
    -> tensor<2x4x45x40xf16> {
  %0 = llmc.attention %q, %k, %v {causal} : (tensor<2x4x45x40xf16>, tensor<2x4x45x40xf16>, tensor<2x4x45x40xf16>) -> tensor<2x4x45x40xf16>
  return %0 : tensor<2x4x45x40xf16>
}

// -----

// f16 on the CUDA-core kernel (head dim 20) rounds P to f16 too.
// CHECK-LABEL: // ===== attention_0.cu =====
// CHECK:       //   flash-style forward: one warp per query row
// CHECK:       const float pj = __half2float(__float2half_rn(__shfl_sync(0xffffffffu, p, j)));
// NVRTC:       compiled 1 kernels for sm_90
func.func @forward(%q: tensor<1x2x37x20xf16>, %k: tensor<1x2x37x20xf16>, %v: tensor<1x2x37x20xf16>)
    -> tensor<1x2x37x20xf16> {
  %0 = llmc.attention %q, %k, %v {causal} : (tensor<1x2x37x20xf16>, tensor<1x2x37x20xf16>, tensor<1x2x37x20xf16>) -> tensor<1x2x37x20xf16>
  return %0 : tensor<1x2x37x20xf16>
}

// -----

// Head dims that are not multiples of 8 take the CUDA-core kernel: one warp
// per query row, 32-key tiles.
// CHECK-LABEL: // ===== attention_0.cu =====
// CHECK:       //   flash-style forward: one warp per query row
// CHECK:       extern "C" __global__ void __launch_bounds__(kWarps * 32)
// CHECK:       if (s < kS && s <= t + kS - kT) {
// CHECK:       lse[row] = l > 0.0f ? m + logf(l) : -INFINITY;
// NVRTC:       step 0 launch attention_0 grid [5, 2, 1] block [256, 1, 1]
// NVRTC:       compiled 1 kernels for sm_90
func.func @forward(%q: tensor<1x2x37x20xf32>, %k: tensor<1x2x37x20xf32>, %v: tensor<1x2x37x20xf32>)
    -> tensor<1x2x37x20xf32> {
  %0 = llmc.attention %q, %k, %v {causal} : (tensor<1x2x37x20xf32>, tensor<1x2x37x20xf32>, tensor<1x2x37x20xf32>) -> tensor<1x2x37x20xf32>
  return %0 : tensor<1x2x37x20xf32>
}

// -----

// A float mask is added; an i1 mask keeps where true; strides are 0 along
// its broadcast dims.
// CHECK-LABEL: // ===== attention_0.cu =====
// CHECK:       constexpr index_t kMaskB = 0;  // mask strides in [B, Hq, T, S]
// CHECK-NEXT:  constexpr index_t kMaskH = 0;
// CHECK-NEXT:  constexpr index_t kMaskT = 70;
// CHECK-NEXT:  constexpr index_t kMaskS = 1;
// CHECK:       x += mask[b * kMaskB + h * kMaskH + (row) * kMaskT + (col) * kMaskS];
// CHECK-LABEL: // ===== attention_1.cu =====
// CHECK:       constexpr index_t kMaskB = 3150;
// CHECK:       if (mask[b * kMaskB + h * kMaskH + (row) * kMaskT + (col) * kMaskS] == 0)
// CHECK-NEXT:    x = -INFINITY;
// NVRTC: compiled 2 kernels for sm_90
func.func @forward(%q: tensor<2x4x45x64xf32>, %k: tensor<2x2x70x64xf32>, %v: tensor<2x2x70x48xf32>,
                   %fm: tensor<45x70xf32>, %bm: tensor<2x1x45x70xi1>) -> (tensor<2x4x45x48xf32>, tensor<2x4x45x48xf32>) {
  %0 = llmc.attention %q, %k, %v mask %fm : (tensor<2x4x45x64xf32>, tensor<2x2x70x64xf32>, tensor<2x2x70x48xf32>, tensor<45x70xf32>) -> tensor<2x4x45x48xf32>
  %1 = llmc.attention %q, %k, %v mask %bm {scale = 0.2 : f64} : (tensor<2x4x45x64xf32>, tensor<2x2x70x64xf32>, tensor<2x2x70x48xf32>, tensor<2x1x45x70xi1>) -> tensor<2x4x45x48xf32>
  return %0, %1 : tensor<2x4x45x48xf32>, tensor<2x4x45x48xf32>
}

// -----

// Rotary: the first R features rotate with their pair partner, 4 f32 a
// thread (test/lit/codegen/rotary.mlir has the other forms).
// CHECK-LABEL: // ===== rotary_0.cu =====
// CHECK:       //   rotary (rotate-half): a vector of 4 elements per thread (the partner half another vector of the row); y = x * cos + rotate(x) * sin on the first R features, copy after
// CHECK:       constexpr index_t kR = 16;  // rotated features
// CHECK-NEXT:  constexpr index_t kVec = 4;  // elements per thread
// CHECK-NEXT:  static_assert(kR % 2 == 0 && kR <= kD, "pairs within the features");
// CHECK:       const float p = (first ? -pv.v[e] : pv.v[e]);
// CHECK-NEXT:  o.v[e] = __fmaf_rn(x, c, __fmul_rn(p, s));
// CHECK-LABEL: // ===== rotary_1.cu =====
// CHECK:       const float p = (e % 2 == 0 ? -xv.v[e ^ 1] : xv.v[e ^ 1]);
// CHECK-NEXT:  o.v[e] = __fmaf_rn(x, c, __fmul_rn(p, s));
// NVRTC: compiled 2 kernels for sm_90
func.func @forward(%x: tensor<2x3x17x24xf32>, %cos: tensor<17x16xf32>, %sin: tensor<17x16xf32>)
    -> (tensor<2x3x17x24xf32>, tensor<2x3x17x24xf32>) {
  %0 = llmc.rotary %x, %cos, %sin : (tensor<2x3x17x24xf32>, tensor<17x16xf32>, tensor<17x16xf32>) -> tensor<2x3x17x24xf32>
  %1 = llmc.rotary %x, %cos, %sin {interleaved} : (tensor<2x3x17x24xf32>, tensor<17x16xf32>, tensor<17x16xf32>) -> tensor<2x3x17x24xf32>
  return %0, %1 : tensor<2x3x17x24xf32>, tensor<2x3x17x24xf32>
}
