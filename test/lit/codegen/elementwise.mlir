// The one-op emitters: fusion off (fused kernels: fused-elementwise.mlir).
// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file --no-fuse=all 2>&1 >/dev/null | FileCheck %s
// RUN: llmc codegen %s --split-input-file --no-fuse=all --compile | FileCheck %s --check-prefix=NVRTC
// Fused, every kernel still compiles with NVRTC.
// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=FUSED
// FUSED: compiled {{[1-9][0-9]*}} kernels for sm_90

// Elementwise kernels: one thread per element in a grid-stride loop, the
// broadcast operand read through collapsed coordinates, math in f32.

// CHECK-LABEL: // ===== add_0.cu =====
// CHECK-NEXT:  // add_0: llmc.add "/h.0/attn/Add"
// CHECK-NEXT:  //   (f32[2, 16, 64], f32[64]) -> f32[2, 16, 64]
// CHECK-NEXT:  //   one thread per element, grid-stride loop; numpy broadcasting; y = a + b
// CHECK:       typedef int index_t;
// CHECK:       constexpr index_t kN = 2048;  // elements of the result [2, 16, 64]
// CHECK:       extern "C" __global__ void __launch_bounds__(256)
// CHECK-NEXT:  add_0(const float *__restrict__ in_a, const float *__restrict__ in_b, float *__restrict__ out) {
// CHECK:         const index_t i_c1 = i % 64;
// CHECK-NEXT:    const float a = in_a[i];
// CHECK-NEXT:    const float b = in_b[i_c1];
// CHECK-NEXT:    out[i] = __fadd_rn(a, b);
// NVRTC: step 0 launch add_0 grid [8, 1, 1] block [256, 1, 1] smem 0 args (arg0, arg1, add_0.out0)
// NVRTC: compiled 1 kernels for sm_90
func.func @forward(%x: tensor<2x16x64xf32>, %b: tensor<64xf32>) -> tensor<2x16x64xf32> {
  %0 = llmc.add %x, %b : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32> loc("/h.0/attn/Add")
  return %0 : tensor<2x16x64xf32>
}

// -----

// bf16 loads and stores convert through f32; the header pulls cuda_bf16.h.
// CHECK-LABEL: // ===== gelu_0.cu =====
// CHECK:       gelu tanh: y = 0.5f * a * (1.0f + tanhf(0.7978845608f * (a + 0.044715f * a * a * a)))
// CHECK:       #include <cuda_bf16.h>
// CHECK:       const float a = __bfloat162float(in_a[i]);
// CHECK-NEXT:  out[i] = __float2bfloat16(__fmul_rn(0.5f * a, 1.0f + tanhf(
// CHECK-LABEL: // ===== gelu_1.cu =====
// CHECK:       out[i] = __float2bfloat16(__fmul_rn(0.5f * a, 1.0f + erff(a * 0.7071067812f)));
// CHECK-LABEL: // ===== silu_2.cu =====
// CHECK:       out[i] = __float2bfloat16(a / (1.0f + expf(-a)));
// NVRTC: compiled 3 kernels for sm_90
func.func @forward(%x: tensor<3x5xbf16>) -> (tensor<3x5xbf16>, tensor<3x5xbf16>, tensor<3x5xbf16>) {
  %0 = llmc.gelu tanh %x : tensor<3x5xbf16>
  %1 = llmc.gelu erf %x : tensor<3x5xbf16>
  %2 = llmc.silu %x : tensor<3x5xbf16>
  return %0, %1, %2 : tensor<3x5xbf16>, tensor<3x5xbf16>, tensor<3x5xbf16>
}

// -----

// Compare yields one byte per i1; where reads it back as a bool; isnan is
// x != x; max propagates NaN.
// CHECK-LABEL: // ===== compare_0.cu =====
// CHECK:       out[i] = (unsigned char)(a <= b);
// CHECK-LABEL: // ===== where_1.cu =====
// CHECK:       where_1(const unsigned char *__restrict__ in_a, const float *__restrict__ in_b, const float *__restrict__ in_c, float *__restrict__ out)
// CHECK:       const bool a = (in_a[{{.*}}] != 0);
// CHECK:       out[i] = a ? b : c;
// CHECK-LABEL: // ===== isnan_2.cu =====
// CHECK:       out[i] = (unsigned char)(a != a);
// CHECK-LABEL: // ===== max_3.cu =====
// CHECK:       out[i] = ((a != a || b != b) ? NAN : fmaxf(a, b));
// NVRTC: compiled 4 kernels for sm_90
func.func @forward(%a: tensor<4x1xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>, tensor<4x8xf32>) {
  %m = llmc.compare le, %a, %b : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %w = llmc.where %m, %a, %b : (tensor<4x8xi1>, tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %n = llmc.isnan %w : tensor<4x8xf32> -> tensor<4x8xi1>
  %x = llmc.max %a, %b : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %w, %n, %x : tensor<4x8xf32>, tensor<4x8xi1>, tensor<4x8xf32>
}

// -----

// Integer arithmetic wraps in unsigned arithmetic; casts to 16-bit floats
// round once.
// CHECK-LABEL: // ===== add_0.cu =====
// CHECK:       out[i] = (int)((unsigned)a + (unsigned)b);
// CHECK-LABEL: // ===== div_1.cu =====
// CHECK:       out[i] = (b == 0 ? (int)0 : b == -1 ? (int)((unsigned)0 - (unsigned)a) : a / b);
// CHECK-LABEL: // ===== cast_2.cu =====
// CHECK:       out[i] = __ll2bfloat16_rn(a);
// CHECK-LABEL: // ===== cast_3.cu =====
// CHECK:       out[i] = (long long)a;
// NVRTC: compiled 4 kernels for sm_90
func.func @forward(%a: tensor<6xi32>, %b: tensor<6xi32>, %c: tensor<6xi64>, %x: tensor<6xf32>)
    -> (tensor<6xi32>, tensor<6xi32>, tensor<6xbf16>, tensor<6xi64>) {
  %0 = llmc.add %a, %b : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  %1 = llmc.div %a, %b : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  %2 = llmc.cast %c : tensor<6xi64> -> tensor<6xbf16>
  %3 = llmc.cast %x : tensor<6xf32> -> tensor<6xi64>
  return %0, %1, %2, %3 : tensor<6xi32>, tensor<6xi32>, tensor<6xbf16>, tensor<6xi64>
}
