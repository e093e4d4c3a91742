// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s
// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=NVRTC

// Row ops: one block per row; statistics in one pass (online softmax,
// Welford), f32 for every input type. layer_norm and rms_norm over rows of
// 4k <= 2048 elements: one warp per row, the row in registers, 4-element
// vectors (rms_norm: the sum of squares gathered in the loads).

// CHECK-LABEL: // ===== layer_norm_0.cu =====
// CHECK:       // layer_norm_0: llmc.layer_norm "/transformer/h.0/ln_1/LayerNormalization"
// CHECK-NEXT:  //   (bf16[8, 1024, 768], bf16[768], bf16[768]) -> bf16[8, 1024, 768]
// CHECK-NEXT:  //   layer_norm: one warp per row, the row in registers
// CHECK:       constexpr index_t kRows = 8192;  // rows
// CHECK-NEXT:  constexpr index_t kCols = 768;  // elements per row
// CHECK-NEXT:  constexpr index_t kBlock = 256;  // threads per block, one warp per row
// CHECK:       constexpr float kEps = 9.99999975e-06f;  // epsilon
// CHECK:       static_assert(kCols % 4 == 0 && kBlock % 32 == 0, "whole vectors, whole warps");
// CHECK:       __device__ __forceinline__ float warpAllSum(float v)
// CHECK:       extern "C" __global__ void __launch_bounds__(kBlock)
// CHECK-NEXT:  layer_norm_0(const __nv_bfloat16 *__restrict__ in, const __nv_bfloat16 *__restrict__ weight, const __nv_bfloat16 *__restrict__ bias, __nv_bfloat16 *__restrict__ out)
// CHECK:       const Vec<__nv_bfloat16, 4> v = x_row[c];
// CHECK:       x[i][e] = 0.0f;
// CHECK:       const float mean = warpAllSum(sum) / (float)kCols;
// CHECK:       sq += (x[i][e] - mean) * (x[i][e] - mean);
// CHECK:       const float rstd = 1.0f / sqrtf(warpAllSum(sq) / (float)kCols + kEps);
// CHECK:       o.v[e] = __float2bfloat16(((x[i][e] - mean) * rstd) * __bfloat162float(w.v[e]) + __bfloat162float(b.v[e]));
// CHECK:       y_row[c] = o;
// CHECK-LABEL: // ===== rms_norm_1.cu =====
// CHECK:       //   rms_norm: one warp per row, the row in registers (4-element vectors); the sum of squares (a warp butterfly), then (x * rstd) * w
// CHECK:       constexpr index_t kBlock = 256;  // threads per block, one warp per row
// CHECK:       __device__ __forceinline__ float warpAllSum(float v)
// CHECK:       x[i][e] = __bfloat162float(v.v[e]);
// CHECK:       sq += x[i][e] * x[i][e];
// CHECK-NOT:   mean
// CHECK:       const float rstd = 1.0f / sqrtf(warpAllSum(sq) / (float)kCols + kEps);
// CHECK:       o.v[e] = __float2bfloat16((x[i][e] * rstd) * __bfloat162float(w.v[e]));
// NVRTC: step 0 launch layer_norm_0 grid [1024, 1, 1] block [256, 1, 1]
// NVRTC: step 1 launch rms_norm_1 grid [1024, 1, 1] block [256, 1, 1]
// NVRTC: compiled 2 kernels for sm_90
func.func @forward(%x: tensor<8x1024x768xbf16>, %w: tensor<768xbf16>, %b: tensor<768xbf16>)
    -> (tensor<8x1024x768xbf16>, tensor<8x1024x768xbf16>) {
  %0 = llmc.layer_norm %x weight %w bias %b {epsilon = 1.0e-05 : f64} : (tensor<8x1024x768xbf16>, tensor<768xbf16>, tensor<768xbf16>) -> tensor<8x1024x768xbf16> loc("/transformer/h.0/ln_1/LayerNormalization")
  %1 = llmc.rms_norm %x weight %w : (tensor<8x1024x768xbf16>, tensor<768xbf16>) -> tensor<8x1024x768xbf16>
  return %0, %1 : tensor<8x1024x768xbf16>, tensor<8x1024x768xbf16>
}

// -----

// Rows that are not whole vectors (770) or too long for a warp's registers
// (4096): one block per row, Welford; rms_norm the block sum of squares.
// CHECK-LABEL: // ===== layer_norm_0.cu =====
// CHECK:       constexpr index_t kCols = 770;
// CHECK:       blockWelford(n, mean, m2);
// CHECK:       out[row * kCols + j] = ((x - mean) * rstd) * weight[j] + bias[j];
// CHECK-LABEL: // ===== layer_norm_1.cu =====
// CHECK:       constexpr index_t kCols = 4096;
// CHECK:       blockWelford(n, mean, m2);
// CHECK-LABEL: // ===== rms_norm_2.cu =====
// CHECK:       rms_norm: one block per row; sum of squares (block reduction)
// CHECK:       constexpr index_t kCols = 770;
// CHECK:       const float rstd = 1.0f / sqrtf(blockSum(sq) / (float)kCols + kEps);
// CHECK:       out[row * kCols + j] = x * rstd * weight[j];
// CHECK-LABEL: // ===== rms_norm_3.cu =====
// CHECK:       constexpr index_t kCols = 4096;
// CHECK:       blockSum(sq)
// NVRTC: compiled 4 kernels for sm_90
func.func @forward(%x: tensor<4x770xf32>, %w: tensor<770xf32>, %b: tensor<770xf32>, %y: tensor<2x4096xf32>) -> (tensor<4x770xf32>, tensor<2x4096xf32>, tensor<4x770xf32>, tensor<2x4096xf32>) {
  %0 = llmc.layer_norm %x weight %w bias %b : (tensor<4x770xf32>, tensor<770xf32>, tensor<770xf32>) -> tensor<4x770xf32>
  %1 = llmc.layer_norm %y : (tensor<2x4096xf32>) -> tensor<2x4096xf32>
  %2 = llmc.rms_norm %x weight %w : (tensor<4x770xf32>, tensor<770xf32>) -> tensor<4x770xf32>
  %3 = llmc.rms_norm %y : (tensor<2x4096xf32>) -> tensor<2x4096xf32>
  return %0, %1, %2, %3 : tensor<4x770xf32>, tensor<2x4096xf32>, tensor<4x770xf32>, tensor<2x4096xf32>
}

// -----

// softmax along a middle axis reads a row's elements kInner apart.
// CHECK-LABEL: // ===== softmax_0.cu =====
// CHECK:       //   softmax along axis 1: one block per row; online max/sum (one pass), then the outputs
// CHECK:       constexpr index_t kInner = 5;  // stride between a row's elements
// CHECK:       __device__ __forceinline__ void onlineAdd(float &m, float &s, float x)
// CHECK:       onlineAdd(m, s, in[base + j * kInner]);
// CHECK:       blockOnline(m, s);
// CHECK:       out[base + j * kInner] = expf(x - m) * inv;
// CHECK-LABEL: // ===== log_softmax_1.cu =====
// CHECK:       constexpr index_t kInner = 1;
// CHECK:       out[base + j * kInner] = x - m - logs;
// NVRTC: compiled 2 kernels for sm_90
func.func @forward(%x: tensor<4x6x5xf32>) -> (tensor<4x6x5xf32>, tensor<4x6x5xf32>) {
  %0 = llmc.softmax %x {axis = 1 : i64} : tensor<4x6x5xf32>
  %1 = llmc.log_softmax %x : tensor<4x6x5xf32>
  return %0, %1 : tensor<4x6x5xf32>, tensor<4x6x5xf32>
}
