// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s
// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=NVRTC

// The loss gradient, the optimizer update and the multi-tensor optimizer.

// cross_entropy_grad (mean): one block counts the positions that are not
// ignored, then one block per position writes w * (softmax - onehot).
// CHECK-LABEL: // ===== cross_entropy_grad_0_count.cu =====
// CHECK:       constexpr index_t kIgnore = -100;  // ignore_index
// CHECK:       c += targets[j] != kIgnore ? 1.0f : 0.0f;
// CHECK:       count[0] = total;
// CHECK-LABEL: // ===== cross_entropy_grad_0.cu =====
// CHECK:       //   cross_entropy_grad (mean): one block per position; the row is read in vectors of 1 elements, online max/sum of exp, then w * (exp(x - max) / sum - onehot(target)) over the row
// CHECK:       constexpr index_t kCols = 50257;  // columns of a row
// CHECK:       cross_entropy_grad_0(const float *logits, const long long *__restrict__ targets, const float *__restrict__ dloss, const float *__restrict__ count, float *dlogits)
// CHECK:       if (target == kIgnore) {
// CHECK:       const float w = valid ? dloss[0] / count[0] : NAN;
// CHECK:       o.v[e] = w * (p - (j == target ? 1.0f : 0.0f));
// CHECK-LABEL: // ===== cross_entropy_grad_1.cu =====
// CHECK:       const float w = valid ? __bfloat162float(dloss[row]) : NAN;
// NVRTC:       buffer cross_entropy_grad_0.count scratch f32[1]
// NVRTC:       step 0 launch cross_entropy_grad_0_count grid [1, 1, 1] block [1024, 1, 1] smem 0 args (arg1, cross_entropy_grad_0.count)
// NVRTC-NEXT:  step 1 launch cross_entropy_grad_0 grid [1024, 1, 1] block [1024, 1, 1] smem 0 args (arg0, arg1, arg2, cross_entropy_grad_0.count, cross_entropy_grad_0.out0)
// NVRTC-NEXT:  step 2 launch cross_entropy_grad_1 grid [1024, 1, 1]
// NVRTC:       compiled 3 kernels for sm_90
func.func @forward(%logits: tensor<4x256x50257xf32>, %t: tensor<4x256xi64>, %g: tensor<f32>,
                   %lb: tensor<4x256x50257xbf16>, %gn: tensor<4x256xbf16>)
    -> (tensor<4x256x50257xf32>, tensor<4x256x50257xbf16>) {
  %0 = llmc.cross_entropy_grad mean %logits, %t, %g : (tensor<4x256x50257xf32>, tensor<4x256xi64>, tensor<f32>) -> tensor<4x256x50257xf32>
  %1 = llmc.cross_entropy_grad none %lb, %t, %gn : (tensor<4x256x50257xbf16>, tensor<4x256xi64>, tensor<4x256xbf16>) -> tensor<4x256x50257xbf16>
  return %0, %1 : tensor<4x256x50257xf32>, tensor<4x256x50257xbf16>
}

// -----

// adamw_update reads lr and step from device memory; the bias corrections
// are computed once per thread in double.
// CHECK-LABEL: // ===== adamw_update_0.cu =====
// CHECK:       // adamw_update_0: llmc.adamw_update "h.0.attn.c_attn.weight"
// CHECK-NEXT:  //   (f32[768, 2304], f32[768, 2304], f32[768, 2304], f32[768, 2304], f32[], i64[]) -> f32[768, 2304], f32[768, 2304], f32[768, 2304]
// CHECK:       constexpr float kBeta1 = 0.899999976f;  // beta1
// CHECK:       constexpr float kOneMinusBeta2 = 0.0500000007f;  // 1 - beta2
// CHECK:       constexpr float kWeightDecay = 0.100000001f;  // weight_decay
// CHECK:       constexpr double kBeta1d = 0.90000000000000002, kBeta2d = 0.94999999999999996;
// CHECK:       const float lr = lr_ptr[0];
// CHECK-NEXT:  const double t = (double)step_ptr[0];
// CHECK-NEXT:  const float bc1 = (float)(1.0 - pow(kBeta1d, t));
// CHECK-NEXT:  const float rootBc2 = (float)sqrt(1.0 - pow(kBeta2d, t));
// CHECK:       const float denom = sqrtf(vi) / rootBc2 + kEps;
// CHECK-NEXT:  new_param[i] = param[i] * decay - stepSize * mi / denom;
// CHECK-NEXT:  new_m[i] = mi;
// CHECK-NEXT:  new_v[i] = vi;
// NVRTC:       step 0 launch adamw_update_0 grid [2112, 1, 1] block [256, 1, 1] smem 0 args (arg0, arg1, arg2, arg3, arg4, arg5, adamw_update_0.out0, adamw_update_0.out1, adamw_update_0.out2)
// NVRTC:       compiled 1 kernels for sm_90
func.func @forward(%p: tensor<768x2304xf32>, %g: tensor<768x2304xf32>, %m: tensor<768x2304xf32>, %v: tensor<768x2304xf32>, %lr: tensor<f32>, %t: tensor<i64>)
    -> (tensor<768x2304xf32>, tensor<768x2304xf32>, tensor<768x2304xf32>) {
  %0, %1, %2 = llmc.adamw_update %p, %g, %m, %v, %lr, %t {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : (tensor<768x2304xf32>, tensor<768x2304xf32>, tensor<768x2304xf32>, tensor<768x2304xf32>, tensor<f32>, tensor<i64>) -> (tensor<768x2304xf32>, tensor<768x2304xf32>, tensor<768x2304xf32>) loc("h.0.attn.c_attn.weight")
  return %0, %1, %2 : tensor<768x2304xf32>, tensor<768x2304xf32>, tensor<768x2304xf32>
}

// -----

// The multi-tensor optimizer: global_norm is a partials kernel (a block per
// chunk, grid-stride, one partial per block) and a one-block combine;
// multi_adamw_update is one kernel over a chunk table of every tensor, the
// AdamW element math of adamw_update, per-tensor weight decay, the clip
// scale applied to the gradient. Both find their tensors through an i64
// offset table relative to operand #0, filled by the plan builder.
// CHECK-LABEL: // ===== global_norm_0_partials.cu =====
// CHECK:       constexpr index_t kChunk = 4096;  // elements per chunk (16 per thread)
// CHECK:       constexpr index_t kChunks = 4;  // chunks of all tensors
// CHECK:       __constant__ index_t kSize[2] = {12000, 40};
// CHECK-NEXT:  __constant__ int kChunkBegin[2] = {0, 3};
// CHECK:       global_norm_0_partials(char *base, const long long *__restrict__ offsets, float *__restrict__ partials)
// CHECK:       const float *x = (const float *)(base + offsets[k]);
// CHECK:       acc += xi * xi;
// CHECK:       partials[blockIdx.x] = total;
// CHECK-LABEL: // ===== global_norm_0_combine.cu =====
// CHECK:       acc += partials[i];
// CHECK:       norm[0] = sqrtf(total);
// CHECK-LABEL: // ===== multi_adamw_update_1.cu =====
// CHECK:       AdamW (torch.optim.AdamW) over 2 tensors
// CHECK:       __constant__ float kWeightDecay[2] = {0.100000001f, 0.0f};
// CHECK:       multi_adamw_update_1(char *base, const long long *__restrict__ offsets,
// CHECK-NEXT:  const float *__restrict__ lr_ptr, const long long *__restrict__ step_ptr, const float *__restrict__ scale_ptr)
// CHECK:       const float stepSize = lr / bc1;
// CHECK-NEXT:  const float scale = scale_ptr[0];
// CHECK:       const int k = tensorOfChunk(c);
// CHECK:       float *new_v = (float *)(base + o[6]);
// CHECK-NEXT:  const float decay = 1.0f - lr * kWeightDecay[k];
// CHECK:       for (index_t i0 = begin + threadIdx.x; i0 < end; i0 += kIlp * blockDim.x) {
// CHECK:       p_[u] = param[i];
// CHECK-NEXT:  g_[u] = grad[i] * scale;
// CHECK:       if (i >= end)
// CHECK:       const float g = g_[u];
// CHECK:       new_param[i] = p_[u] * decay - stepSize * mi / denom;
// NVRTC:       buffer global_norm_0.offsets scratch i64[2]
// NVRTC:       buffer multi_adamw_update_1.offsets scratch i64[14]
// NVRTC:       step 0 launch global_norm_0_partials grid [4, 1, 1] block [256, 1, 1] smem 0 args (arg2, global_norm_0.offsets, global_norm_0.partials)
// NVRTC-NEXT:  step 1 launch global_norm_0_combine grid [1, 1, 1] block [256, 1, 1] smem 0 args (global_norm_0.partials, global_norm_0.out0)
// NVRTC-NEXT:  step 2 launch multi_adamw_update_1 grid [4, 1, 1] block [256, 1, 1] smem 0 args (arg0, multi_adamw_update_1.offsets, arg8, arg9, arg10)
// NVRTC:       compiled 3 kernels for sm_90
func.func @forward(%w: tensor<300x40xf32>, %b: tensor<40xf32>, %gw: tensor<300x40xf32>, %gb: tensor<40xf32>,
                   %mw: tensor<300x40xf32>, %mb: tensor<40xf32>, %vw: tensor<300x40xf32>, %vb: tensor<40xf32>,
                   %lr: tensor<f32>, %t: tensor<i64>, %c: tensor<f32>)
    -> (tensor<f32>, tensor<300x40xf32>, tensor<40xf32>, tensor<300x40xf32>, tensor<40xf32>, tensor<300x40xf32>, tensor<40xf32>) {
  %n = llmc.global_norm %gw, %gb : (tensor<300x40xf32>, tensor<40xf32>) -> tensor<f32>
  %r:6 = llmc.multi_adamw_update params(%w, %b) grads(%gw, %gb) m(%mw, %mb) v(%vw, %vb) lr(%lr) step(%t) scale(%c) {beta2 = 0.95 : f64, weight_decays = array<f64: 0.1, 0.0>} : (tensor<300x40xf32>, tensor<40xf32>, tensor<300x40xf32>, tensor<40xf32>, tensor<300x40xf32>, tensor<40xf32>, tensor<300x40xf32>, tensor<40xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<300x40xf32>, tensor<40xf32>, tensor<300x40xf32>, tensor<40xf32>, tensor<300x40xf32>, tensor<40xf32>)
  return %n, %r#0, %r#1, %r#2, %r#3, %r#4, %r#5 : tensor<f32>, tensor<300x40xf32>, tensor<40xf32>, tensor<300x40xf32>, tensor<40xf32>, tensor<300x40xf32>, tensor<40xf32>
}

// -----

// bf16: the scaled gradient is rounded to bf16 as llmc.mul would store it.
// CHECK-LABEL: // ===== multi_adamw_update_0.cu =====
// CHECK:       #include <cuda_bf16.h>
// CHECK:       const float scale = __bfloat162float(scale_ptr[0]);
// CHECK:       g_[u] = __bfloat162float(__float2bfloat16(__bfloat162float(grad[i]) * scale));
// CHECK:       new_m[i] = __float2bfloat16(mi);
// NVRTC:       compiled 1 kernels for sm_90
func.func @forward(%p: tensor<700xbf16>, %lr: tensor<f32>, %t: tensor<i64>, %c: tensor<bf16>)
    -> (tensor<700xbf16>, tensor<700xbf16>, tensor<700xbf16>) {
  %r:3 = llmc.multi_adamw_update params(%p) grads(%p) m(%p) v(%p) lr(%lr) step(%t) scale(%c) {weight_decays = array<f64: 0.0>} : (tensor<700xbf16>, tensor<700xbf16>, tensor<700xbf16>, tensor<700xbf16>, tensor<f32>, tensor<i64>, tensor<bf16>) -> (tensor<700xbf16>, tensor<700xbf16>, tensor<700xbf16>)
  return %r#0, %r#1, %r#2 : tensor<700xbf16>, tensor<700xbf16>, tensor<700xbf16>
}
