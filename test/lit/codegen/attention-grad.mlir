// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s
// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=NVRTC

// attention_lse is the forward kernel with lse as result #1; attention_grad
// is three kernels (FlashAttention-2's backward without atomics): the row
// dots, dK/dV per key tile over the whole GQA group, dQ per query tile.

// CHECK-LABEL: // ===== attention_lse_0.cu =====
// CHECK:       // attention_lse_0: llmc.attention_lse "/h.0/attn/sdpa"
// CHECK-NEXT:  //   (f32[8, 32, 1024, 64], f32[8, 8, 1024, 64], f32[8, 8, 1024, 64], i1[8, 1, 1024, 1024]) -> f32[8, 32, 1024, 64], f32[8, 32, 1024]
// CHECK:       attention_lse_0(const float *__restrict__ q, const float *__restrict__ k, const float *__restrict__ v, const unsigned char *__restrict__ mask, float *__restrict__ out, float *__restrict__ lse)
// CHECK-LABEL: // ===== attention_grad_1_dot.cu =====
// CHECK:       //   attention_grad, kernel 1/3: Dr = rowsum(dout * out), one warp per query row, into the f32 scratch `rowdot`
// CHECK:       const index_t at = row * kDv;
// CHECK:       acc += dout[at + e] * out[at + e];
// CHECK-LABEL: // ===== attention_grad_1_kv.cu =====
// CHECK:       // attention_grad_1_kv: llmc.attention_grad "/h.0/attn/sdpa"
// CHECK:       //   attention_grad, kernel 2/3, tensor cores (3xTF32)
// CHECK:       constexpr index_t kGroup = 4;  // query heads per kv head (GQA)
// CHECK-NEXT:  constexpr index_t kQsB = 2097152;  // q/dq batch, head, row strides ([B, H, T, D])
// CHECK:       constexpr index_t kBr = 64;  // query rows per tile
// CHECK-NEXT:  constexpr index_t kBc = 128;  // keys per tile
// CHECK:       constexpr float kScale = 0.125f;  // applied to q.k
// CHECK:       constexpr index_t kMaskB = 1048576;  // mask strides in [B, Hq, T, S]
// CHECK-NEXT:  constexpr index_t kMaskH = 0;
// CHECK:       attention_grad_1_kv(const float *__restrict__ q, const float *__restrict__ k, const float *__restrict__ v, const float *__restrict__ lse, const float *__restrict__ dout, const float *__restrict__ rowdot, const unsigned char *__restrict__ mask, float *__restrict__ dk, float *__restrict__ dv)
// CHECK:       const index_t tFirst = max((index_t)0, s0 - (kS - kT));
// CHECK:       for (index_t h = kvh * kGroup; h < (kvh + 1) * kGroup; ++h)
// CHECK:       mmaTile<kBr / 8, kD, true>(st, Ks + warp * 16 * kLdK, kLdK, Qs, kLdQ);
// CHECK:       if (tq < kT && s < kS && s <= tq + kS - kT && Ls[qi] != -INFINITY) {
// CHECK:       if (mask[b * kMaskB + h * kMaskH + (tq) * kMaskT + (s) * kMaskS] == 0)
// CHECK:       p = expf(x - Ls[qi]);
// CHECK:       dpt[j][e] = p * (dpt[j][e] - Rs[qi]);
// CHECK:       mmaRegA<kDv / 8, kBr / 8, false>(tile, st, Os, kLdO);
// CHECK:       dvAcc[j][e] += tile[j][e];
// CHECK:       mmaRegA<kD / 8, kBr / 8, false>(tile, dpt, Qs, kLdQ);
// CHECK:       dkAcc[j][e] += tile[j][e];
// CHECK:       dk[atK + j * 8 + 2 * t] = dkAcc[j][2 * r] * kScale;
// CHECK:       dv[atV + j * 8 + 2 * t] = dvAcc[j][2 * r];
// CHECK-NOT:   atomic
// CHECK-LABEL: // ===== attention_grad_1_q.cu =====
// CHECK:       const index_t t0 = (index_t)(gridDim.x - 1 - blockIdx.x) * kBr;
// CHECK:       const index_t kvEnd = max((index_t)0, min(kS, lastRow + kS - kT + 1));
// CHECK:       sc[j][e] = p * (dp[j][e] - rd[r]);
// CHECK:       mmaRegA<kD / 8, kBc / 8, false>(dqAcc, sc, Ks, kLdK);
// CHECK:       dq[at + j * 8 + 2 * t] = dqAcc[j][2 * r] * kScale;
// NVRTC:       buffer attention_grad_1.rowdot scratch f32[8, 32, 1024]
// NVRTC:       step 0 launch attention_lse_0 grid [8, 32, 8] block [256, 1, 1] smem 104448 args (arg0, arg1, arg2, arg4, attention_lse_0.out0, attention_lse_0.out1)
// NVRTC-NEXT:  step 1 launch attention_grad_1_dot grid [32768, 1, 1] block [256, 1, 1] smem 0 args (attention_lse_0.out0, arg3, attention_grad_1.rowdot)
// NVRTC-NEXT:  step 2 launch attention_grad_1_kv grid [8, 8, 8] block [256, 1, 1] smem 139776 args (arg0, arg1, arg2, attention_lse_0.out1, arg3, attention_grad_1.rowdot, arg4, attention_grad_1.out1, attention_grad_1.out2)
// NVRTC-NEXT:  step 3 launch attention_grad_1_q grid [8, 32, 8] block [256, 1, 1] smem 139776 args (arg0, arg1, arg2, attention_lse_0.out1, arg3, attention_grad_1.rowdot, arg4, attention_grad_1.out0)
// NVRTC:       compiled 4 kernels for sm_90
func.func @forward(%q: tensor<8x32x1024x64xf32>, %k: tensor<8x8x1024x64xf32>, %v: tensor<8x8x1024x64xf32>, %do: tensor<8x32x1024x64xf32>, %m: tensor<8x1x1024x1024xi1>)
    -> (tensor<8x32x1024x64xf32>, tensor<8x8x1024x64xf32>, tensor<8x8x1024x64xf32>) {
  %o, %l = llmc.attention_lse %q, %k, %v mask %m {causal} : (tensor<8x32x1024x64xf32>, tensor<8x8x1024x64xf32>, tensor<8x8x1024x64xf32>, tensor<8x1x1024x1024xi1>) -> (tensor<8x32x1024x64xf32>, tensor<8x32x1024xf32>) loc("/h.0/attn/sdpa")
  %dq, %dk, %dv = llmc.attention_grad %q, %k, %v, %o, %l, %do mask %m {causal} : (tensor<8x32x1024x64xf32>, tensor<8x8x1024x64xf32>, tensor<8x8x1024x64xf32>, tensor<8x32x1024x64xf32>, tensor<8x32x1024xf32>, tensor<8x32x1024x64xf32>, tensor<8x1x1024x1024xi1>) -> (tensor<8x32x1024x64xf32>, tensor<8x8x1024x64xf32>, tensor<8x8x1024x64xf32>) loc("/h.0/attn/sdpa")
  return %dq, %dk, %dv : tensor<8x32x1024x64xf32>, tensor<8x8x1024x64xf32>, tensor<8x8x1024x64xf32>
}

// -----
// bf16 operands take the bf16 tensor-core kernels: K and V (or q and dout)
// staged once, the other side streamed in tiles of 32 through cp.async
// double buffers; P^T and dS^T feed their products as bf16 without
// shuffles; still no atomics.
// CHECK-LABEL: // ===== attention_grad_1_kv.cu =====
// CHECK:       //   attention_grad, kernel 2/3, tensor cores (bf16 mma.sync m16n8k16): a block owns (b, kv head, 64 keys)
// CHECK:       constexpr index_t kBr = 32;  // query rows per tile
// CHECK-NEXT:  constexpr index_t kBc = 64;  // keys per tile
// CHECK:       attention_grad_1_kv(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k, const __nv_bfloat16 *__restrict__ v, const float *__restrict__ lse, const __nv_bfloat16 *__restrict__ dout, const float *__restrict__ rowdot, const unsigned char *__restrict__ mask, __nv_bfloat16 *__restrict__ dk, __nv_bfloat16 *__restrict__ dv)
// CHECK:       Ls[r] = t0 + r < kT ? lse[qRow0 + r] * kLog2e : -INFINITY;
// CHECK:       mmaXYt<kBr / 8, kD>(sT, Ks, kLdK, warp * 16, Qs, kLdQ);
// CHECK:       mmaXYt<kBr / 8, kDv>(dpT, Vs, kLdV, warp * 16, Os, kLdO);
// CHECK:       if (tq < kT && s < kS && s <= tq + kS - kT && Ls[qi] != -INFINITY) {
// CHECK:       if (mask[b * kMaskB + h * kMaskH + (tq) * kMaskT + (s) * kMaskS] == 0)
// CHECK:       mmaCZ<kDv / 8, kBr / 8>(dvAcc, sT, Os, kLdO);
// CHECK-NEXT:  mmaCZ<kD / 8, kBr / 8>(dkAcc, dpT, Qs, kLdQ);
// CHECK:       dk[atK + j * 8 + 2 * t] = __float2bfloat16(dkAcc[j][2 * r] * kScale);
// CHECK-NOT:   atomic
// CHECK-LABEL: // ===== attention_grad_1_q.cu =====
// CHECK:       mmaCZ<kD / 8, kBc / 8>(dqAcc, sc, Ks, kLdK);
// CHECK:       dq[at + j * 8 + 2 * t] = __float2bfloat16(dqAcc[j][2 * r] * kScale);
// NVRTC:       step 2 launch attention_grad_1_kv grid [16, 8, 8] block [128, 1, 1] smem 37376
// NVRTC-NEXT:  step 3 launch attention_grad_1_q grid [16, 32, 8] block [128, 1, 1] smem 36864
// NVRTC:       compiled 4 kernels for sm_90
func.func @forward(%q: tensor<8x32x1024x64xbf16>, %k: tensor<8x8x1024x64xbf16>, %v: tensor<8x8x1024x64xbf16>, %do: tensor<8x32x1024x64xbf16>, %m: tensor<8x1x1024x1024xi1>)
    -> (tensor<8x32x1024x64xbf16>, tensor<8x8x1024x64xbf16>, tensor<8x8x1024x64xbf16>) {
  %o, %l = llmc.attention_lse %q, %k, %v mask %m {causal} : (tensor<8x32x1024x64xbf16>, tensor<8x8x1024x64xbf16>, tensor<8x8x1024x64xbf16>, tensor<8x1x1024x1024xi1>) -> (tensor<8x32x1024x64xbf16>, tensor<8x32x1024xf32>)
  %dq, %dk, %dv = llmc.attention_grad %q, %k, %v, %o, %l, %do mask %m {causal} : (tensor<8x32x1024x64xbf16>, tensor<8x8x1024x64xbf16>, tensor<8x8x1024x64xbf16>, tensor<8x32x1024x64xbf16>, tensor<8x32x1024xf32>, tensor<8x32x1024x64xbf16>, tensor<8x1x1024x1024xi1>) -> (tensor<8x32x1024x64xbf16>, tensor<8x8x1024x64xbf16>, tensor<8x8x1024x64xbf16>)
  return %dq, %dk, %dv : tensor<8x32x1024x64xbf16>, tensor<8x8x1024x64xbf16>, tensor<8x8x1024x64xbf16>
}

// -----

// f16 operands (the fp16 policy) take the same kernels on f16 mma tiles,
// P^T and dS^T packed to f16.
// CHECK-LABEL: // ===== attention_grad_1_kv.cu =====
// CHECK:       //   attention_grad, kernel 2/3, tensor cores (f16 mma.sync m16n8k16): a block owns (b, kv head, 64 keys)
// CHECK:       typedef __half f16_t;
// CHECK:       mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK:       const __half2 v = __floats2half2_rn(lo, hi);
// CHECK:       attention_grad_1_kv(const __half *__restrict__ q, const __half *__restrict__ k, const __half *__restrict__ v, const float *__restrict__ lse, const __half *__restrict__ dout, const float *__restrict__ rowdot, __half *__restrict__ dk, __half *__restrict__ dv)
// CHECK:       f16_t *Stream = Vs + kBc * kLdV;
// CHECK:       mmaCZ<kDv / 8, kBr / 8>(dvAcc, sT, Os, kLdO);
// CHECK:       dk[atK + j * 8 + 2 * t] = __float2half_rn(dkAcc[j][2 * r] * kScale);
// CHECK-LABEL: // ===== attention_grad_1_q.cu =====
// CHECK:       //   attention_grad, kernel 3/3, tensor cores (f16 mma.sync m16n8k16)
// CHECK:       dq[at + j * 8 + 2 * t] = __float2half_rn(dqAcc[j][2 * r] * kScale);
// NVRTC:       step 2 launch attention_grad_1_kv grid [2, 2, 2] block [128, 1, 1]
// NVRTC:       compiled 4 kernels for sm_90
func.func @forward(%q: tensor<2x4x100x64xf16>, %k: tensor<2x2x100x64xf16>, %v: tensor<2x2x100x64xf16>, %do: tensor<2x4x100x64xf16>)
    -> (tensor<2x4x100x64xf16>, tensor<2x2x100x64xf16>, tensor<2x2x100x64xf16>) {
  %o, %l = llmc.attention_lse %q, %k, %v {causal} : (tensor<2x4x100x64xf16>, tensor<2x2x100x64xf16>, tensor<2x2x100x64xf16>) -> (tensor<2x4x100x64xf16>, tensor<2x4x100xf32>)
  %dq, %dk, %dv = llmc.attention_grad %q, %k, %v, %o, %l, %do {causal} : (tensor<2x4x100x64xf16>, tensor<2x2x100x64xf16>, tensor<2x2x100x64xf16>, tensor<2x4x100x64xf16>, tensor<2x4x100xf32>, tensor<2x4x100x64xf16>) -> (tensor<2x4x100x64xf16>, tensor<2x2x100x64xf16>, tensor<2x2x100x64xf16>)
  return %dq, %dk, %dv : tensor<2x4x100x64xf16>, tensor<2x2x100x64xf16>, tensor<2x2x100x64xf16>
}

// -----

// Head dims above 128 take the CUDA-core kernels, with 32-row query tiles
// above 64; a float mask is added; without causal every query tile is
// visited.
// CHECK-LABEL: // ===== attention_grad_1_kv.cu =====
// CHECK:       constexpr index_t kBr = 32;  // query rows per tile
// CHECK:       constexpr index_t kRowsPT = 2;  // tile rows per thread (16 x 16)
// CHECK:       constexpr index_t kDPT = 9;  // q/k features per thread
// CHECK:       constexpr index_t kDvPT = 5;  // v features per thread
// CHECK:       const index_t tileStart = 0;
// CHECK:       score += mask[b * kMaskB + h * kMaskH + t * kMaskT + s * kMaskS];
// CHECK:       if (t < kT && s < kS && rowLse != -INFINITY) {
// NVRTC:       step 3 launch attention_grad_1_q grid [4, 6, 2] block [256, 1, 1]
// NVRTC:       compiled 4 kernels for sm_90
func.func @forward(%q: tensor<2x6x100x136xf32>, %k: tensor<2x2x77x136xf32>, %v: tensor<2x2x77x80xf32>, %do: tensor<2x6x100x80xf32>, %m: tensor<100x77xf32>)
    -> (tensor<2x6x100x136xf32>, tensor<2x2x77x136xf32>, tensor<2x2x77x80xf32>) {
  %o, %l = llmc.attention_lse %q, %k, %v mask %m : (tensor<2x6x100x136xf32>, tensor<2x2x77x136xf32>, tensor<2x2x77x80xf32>, tensor<100x77xf32>) -> (tensor<2x6x100x80xf32>, tensor<2x6x100xf32>)
  %dq, %dk, %dv = llmc.attention_grad %q, %k, %v, %o, %l, %do mask %m : (tensor<2x6x100x136xf32>, tensor<2x2x77x136xf32>, tensor<2x2x77x80xf32>, tensor<2x6x100x80xf32>, tensor<2x6x100xf32>, tensor<2x6x100x80xf32>, tensor<100x77xf32>) -> (tensor<2x6x100x136xf32>, tensor<2x2x77x136xf32>, tensor<2x2x77x80xf32>)
  return %dq, %dk, %dv : tensor<2x6x100x136xf32>, tensor<2x2x77x136xf32>, tensor<2x2x77x80xf32>
}

// -----

// Head dim 128: 8 warps of owned rows would need more than 227 KiB of
// shared memory with the split streamed tile, so the gradient kernels own
// 64 rows (4 warps); the forward still fits 8.
// CHECK-LABEL: // ===== attention_grad_1_kv.cu =====
// CHECK:       constexpr index_t kBc = 64;  // keys per tile
// NVRTC:       step 0 launch attention_lse_0 grid [1, 2, 1] block [256, 1, 1] smem 202752
// NVRTC:       step 2 launch attention_grad_1_kv grid [2, 2, 1] block [128, 1, 1] smem 203264
// NVRTC:       step 3 launch attention_grad_1_q grid [2, 2, 1] block [128, 1, 1] smem 203264
// NVRTC:       compiled 4 kernels for sm_90
func.func @forward(%q: tensor<1x2x100x128xf32>, %k: tensor<1x2x100x128xf32>, %v: tensor<1x2x100x128xf32>, %do: tensor<1x2x100x128xf32>) -> (tensor<1x2x100x128xf32>, tensor<1x2x100x128xf32>, tensor<1x2x100x128xf32>) {
  %o, %l = llmc.attention_lse %q, %k, %v {causal} : (tensor<1x2x100x128xf32>, tensor<1x2x100x128xf32>, tensor<1x2x100x128xf32>) -> (tensor<1x2x100x128xf32>, tensor<1x2x100xf32>)
  %a, %b, %c = llmc.attention_grad %q, %k, %v, %o, %l, %do {causal} : (tensor<1x2x100x128xf32>, tensor<1x2x100x128xf32>, tensor<1x2x100x128xf32>, tensor<1x2x100x128xf32>, tensor<1x2x100xf32>, tensor<1x2x100x128xf32>) -> (tensor<1x2x100x128xf32>, tensor<1x2x100x128xf32>, tensor<1x2x100x128xf32>)
  return %a, %b, %c : tensor<1x2x100x128xf32>, tensor<1x2x100x128xf32>, tensor<1x2x100x128xf32>
}
