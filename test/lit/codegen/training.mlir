// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s
// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=NVRTC

// The loss gradient and the optimizer update.

// cross_entropy_grad (mean): one block counts the positions that are not
// ignored, then one block per position writes w * (softmax - onehot).
// CHECK-LABEL: // ===== cross_entropy_grad_0_count.cu =====
// CHECK:       constexpr index_t kIgnore = -100;  // ignore_index
// CHECK:       c += targets[j] != kIgnore ? 1.0f : 0.0f;
// CHECK:       count[0] = total;
// CHECK-LABEL: // ===== cross_entropy_grad_0.cu =====
// CHECK:       //   cross_entropy_grad (mean): one block per position; online max/sum of exp over the classes, then w * (exp(x - max) / sum - onehot(target))
// CHECK:       constexpr index_t kCols = 50257;  // classes
// CHECK:       cross_entropy_grad_0(const float *__restrict__ logits, const long long *__restrict__ targets, const float *__restrict__ dloss, const float *__restrict__ count, float *__restrict__ dlogits)
// CHECK:       if (target == kIgnore) {
// CHECK:       const float w = (target >= 0 && target < kCols) ? dloss[0] / count[0] : NAN;
// CHECK:       d[j] = w * (p - (j == target ? 1.0f : 0.0f));
// CHECK-LABEL: // ===== cross_entropy_grad_1.cu =====
// CHECK:       const float w = (target >= 0 && target < kCols) ? __bfloat162float(dloss[row]) : NAN;
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
