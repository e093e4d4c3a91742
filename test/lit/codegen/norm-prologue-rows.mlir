// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s
// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file --no-fuse=norm-prologue 2>&1 >/dev/null | FileCheck %s --check-prefix=OFF
// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=NVRTC

// A norm's warp row kernel with its prologue (RowFusedEmitters.cpp): the
// residual add of a bf16 Llama block computed in the RMS norm's loads (issue
// 19), the new f32 residual stored from there, the row kept in registers
// for the sum of squares, and the bf16 output rounded in the stores.

// CHECK-LABEL: // ===== rms_norm_2.cu =====
// CHECK:       //   (f32[8, 2048], f32[2048]) -> f32[8, 2048]
// CHECK-NEXT:  //   rms_norm: one warp per row, the row in registers (4-element vectors); the sum of squares (a warp butterfly), then (x * rstd) * w
// CHECK-NEXT:  //   fused (llmc-fuse-elementwise, norm prologue/epilogue): prologue [ llmc.cast llmc.add ] computed in the loads, epilogue [ llmc.cast ] in the stores; 2 row tensor(s) written
// CHECK:       constexpr index_t kCols = 2048;  // elements per row
// CHECK:       rms_norm_2(const __nv_bfloat16 *__restrict__ in0, const float *__restrict__ in1, const float *__restrict__ weight, float *__restrict__ out0, __nv_bfloat16 *__restrict__ out1)
// CHECK:       const Vec<__nv_bfloat16, 4> p0 = reinterpret_cast<const Vec<__nv_bfloat16, 4> *>(in0 + row * kCols)[c];
// CHECK-NEXT:  const Vec<float, 4> p1 = reinterpret_cast<const Vec<float, 4> *>(in1 + row * kCols)[c];
// CHECK:       s1 = __fadd_rn(a, b);
// CHECK:       out0v.v[e] = s1;
// CHECK-NEXT:  x[i][e] = s1;
// CHECK:       reinterpret_cast<Vec<float, 4> *>(out0 + row * kCols)[c] = out0v;
// CHECK:       sq += x[i][e] * x[i][e];
// CHECK:       const float rstd = 1.0f / sqrtf(warpAllSum(sq) / (float)kCols + kEps);
// CHECK:       float nr = (x[i][e] * rstd) * w.v[e];
// CHECK:       s3 = __float2bfloat16((float)a);
// CHECK:       reinterpret_cast<Vec<__nv_bfloat16, 4> *>(out1 + row * kCols)[c] = out1v;
// CHECK-NOT:   =====
// Apart: the add writes the residual and the RMS norm (the same warp
// kernel, the cast in its store) reads it back.
// OFF-LABEL:   // ===== cast_0.cu =====
// OFF-LABEL:   // ===== rms_norm_2.cu =====
// OFF:         rms_norm_2(const float *__restrict__ in, const float *__restrict__ weight, __nv_bfloat16 *__restrict__ out)
// OFF:         o.v[e] = __float2bfloat16((x[i][e] * rstd) * w.v[e]);
// NVRTC: step 0 launch rms_norm_2 grid [1, 1, 1] block [256, 1, 1] smem 0 args (arg0, arg1, arg2, rms_norm_2.out0, rms_norm_2.out1)
// NVRTC: compiled 1 kernels for sm_90
func.func @forward(%mm: tensor<8x2048xbf16>, %res: tensor<8x2048xf32>, %w: tensor<2048xf32>) -> (tensor<8x2048xbf16>, tensor<8x2048xf32>) {
  %0 = llmc.cast %mm : tensor<8x2048xbf16> -> tensor<8x2048xf32>
  %1 = llmc.add %res, %0 : (tensor<8x2048xf32>, tensor<8x2048xf32>) -> tensor<8x2048xf32>
  %2 = llmc.rms_norm %1 weight %w {epsilon = 1.0e-05 : f64} : (tensor<8x2048xf32>, tensor<2048xf32>) -> tensor<8x2048xf32>
  %3 = llmc.cast %2 : tensor<8x2048xf32> -> tensor<8x2048xbf16>
  return %3, %1 : tensor<8x2048xbf16>, tensor<8x2048xf32>
}

// -----

// Rows of 4100 are past what a warp keeps in registers: the RMS norm keeps
// its block kernel and the add its own kernel.
// CHECK-LABEL: // ===== add_0.cu =====
// CHECK-LABEL: // ===== rms_norm_1.cu =====
// CHECK:       rms_norm: one block per row
// NVRTC: compiled 2 kernels for sm_90
func.func @forward(%x: tensor<2x4100xf32>, %h: tensor<2x4100xf32>) -> tensor<2x4100xf32> {
  %0 = llmc.add %x, %h : (tensor<2x4100xf32>, tensor<2x4100xf32>) -> tensor<2x4100xf32>
  %1 = llmc.rms_norm %0 : (tensor<2x4100xf32>) -> tensor<2x4100xf32>
  return %1 : tensor<2x4100xf32>
}
