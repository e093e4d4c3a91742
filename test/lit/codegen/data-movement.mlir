// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s
// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=NVRTC

// Data movement copies in the storage type; strides are baked in.

// CHECK-LABEL: // ===== transpose_0.cu =====
// CHECK:       //   one thread per element, grid-stride loop; transpose [0, 2, 1, 3]: out[c] = in[c permuted]
// CHECK:       constexpr index_t kN = 2048;
// CHECK:       const index_t i_c3 = i % 16;
// CHECK-NEXT:  const index_t i_c2 = (i / 16) % 16;
// CHECK-NEXT:  const index_t i_c1 = (i / 256) % 4;
// CHECK-NEXT:  const index_t i_c0 = (i / 1024);
// CHECK-NEXT:  out[i] = in[kBase + i_c0 * 1024 + i_c1 * 16 + i_c2 * 64 + i_c3];
// NVRTC: step 0 launch transpose_0
// NVRTC: compiled 1 kernels for sm_90
func.func @forward(%x: tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32> {
  %0 = llmc.transpose %x [0, 2, 1, 3] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  return %0 : tensor<2x4x16x16xf32>
}

// -----

// CHECK-LABEL: // ===== slice_0.cu =====
// CHECK:       constexpr index_t kBase = 26;  // first element read
// CHECK:       out[i] = in[kBase + i_c0 * 40 + i_c1 * 2];
// CHECK-LABEL: // ===== broadcast_to_1.cu =====
// CHECK:       //   one thread per element, grid-stride loop; broadcast: stride 0 along repeated dims
// CHECK:       out[i] = in[kBase + i_c1];
func.func @forward(%x: tensor<4x20xf32>, %b: tensor<1x5xi1>) -> (tensor<2x4xf32>, tensor<3x5xi1>) {
  %0 = llmc.slice %x starts [1, 6] limits [4, 14] strides [2, 2] : (tensor<4x20xf32>) -> tensor<2x4xf32>
  %1 = llmc.broadcast_to %b : tensor<1x5xi1> -> tensor<3x5xi1>
  return %0, %1 : tensor<2x4xf32>, tensor<3x5xi1>
}

// -----

// One concat kernel picks the operand by the axis coordinate; one split
// kernel reads the operand once and writes every result.
// CHECK-LABEL: // ===== concat_0.cu =====
// CHECK:       constexpr index_t kAxis = 6;  // result size along axis 1
// CHECK:       static_assert(kAxis == 6, "operand sizes add up to the result's");
// CHECK:       if (a < 2)
// CHECK-NEXT:    out[i] = in0[(o * kSize0 + (a - 0)) * kInner + c];
// CHECK-NEXT:  else
// CHECK-NEXT:    out[i] = in1[(o * kSize1 + (a - 2)) * kInner + c];
// CHECK-LABEL: // ===== split_1.cu =====
// CHECK:       //   one thread per element of the operand viewed as [outer, axis, inner]; one kernel writes every result
// CHECK:       static_assert(kAxis == 6, "result sizes add up to the operand's");
// CHECK:       split_1(const long long *__restrict__ in, long long *__restrict__ out0, long long *__restrict__ out1, long long *__restrict__ out2)
// CHECK:       else if (a < 3)
// NVRTC: step 1 launch split_1 grid [1, 1, 1] block [256, 1, 1] smem 0 args (concat_0.out0, split_1.out0, split_1.out1, split_1.out2)
// NVRTC: compiled 2 kernels for sm_90
func.func @forward(%a: tensor<3x2x5xi64>, %b: tensor<3x4x5xi64>) -> (tensor<3x1x5xi64>, tensor<3x2x5xi64>, tensor<3x3x5xi64>) {
  %c = llmc.concat %a, %b axis 1 : (tensor<3x2x5xi64>, tensor<3x4x5xi64>) -> tensor<3x6x5xi64>
  %0, %1, %2 = llmc.split %c axis 1 sizes [1, 2, 3] : (tensor<3x6x5xi64>) -> (tensor<3x1x5xi64>, tensor<3x2x5xi64>, tensor<3x3x5xi64>)
  return %0, %1, %2 : tensor<3x1x5xi64>, tensor<3x2x5xi64>, tensor<3x3x5xi64>
}

// -----

// Gathers normalize negative indices; out of range reads NaN.
// CHECK-LABEL: // ===== gather_0.cu =====
// CHECK:       // gather_0: llmc.gather "/transformer/wte/Gather"
// CHECK:       constexpr index_t kDim = 512;  // data size along axis 0
// CHECK:       long long k = indices[j];
// CHECK-NEXT:  if (k < 0)
// CHECK-NEXT:    k += kDim;
// CHECK-NEXT:  out[i] = (k >= 0 && k < kDim) ? data[(o * kDim + k) * kInner + c]
// CHECK-NEXT:                                : NAN;
// CHECK-LABEL: // ===== gather_elements_1.cu =====
// CHECK:       constexpr index_t kAxisStride = 1;  // data stride of the axis
// CHECK:       ? data[i_c0 * 512 + k * kAxisStride]
// CHECK-LABEL: // ===== iota_2.cu =====
// CHECK:       out[i] = (long long)(0LL + 1LL * i_c1);
// CHECK-LABEL: // ===== iota_3.cu =====
// CHECK:       constexpr float kStart = 0.5f;
// CHECK:       constexpr float kStep = 2.0f;
// CHECK:       out[i] = kStart + kStep * (float)i_c0;
// NVRTC: compiled 4 kernels for sm_90
func.func @forward(%w: tensor<512x64xf32>, %idx: tensor<2x16xi64>, %l: tensor<8x512xf32>, %t: tensor<8x1xi32>)
    -> (tensor<2x16x64xf32>, tensor<8x1xf32>, tensor<2x16xi64>, tensor<7x3xf32>) {
  %0 = llmc.gather %w, %idx axis 0 : (tensor<512x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32> loc("/transformer/wte/Gather")
  %1 = llmc.gather_elements %l, %t axis 1 : (tensor<8x512xf32>, tensor<8x1xi32>) -> tensor<8x1xf32>
  %2 = llmc.iota dim 1 : tensor<2x16xi64>
  %3 = llmc.iota dim 0 {start = 0.5, step = 2.0} : tensor<7x3xf32>
  return %0, %1, %2, %3 : tensor<2x16x64xf32>, tensor<8x1xf32>, tensor<2x16xi64>, tensor<7x3xf32>
}

// -----

// reshape aliases its operand's buffer and constant is initial data: no
// kernels.
// CHECK-NOT: =====
// NVRTC: # forward: 2 buffers, 512 bytes unplanned; 0 steps
// NVRTC: buffer constant_0.out0 output f32[2] offset
// NVRTC-NOT: step
// NVRTC: compiled 0 kernels for sm_90
func.func @forward(%x: tensor<2x3xf32>) -> (tensor<6xf32>, tensor<2xf32>) {
  %c = llmc.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = llmc.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  return %0, %c : tensor<6xf32>, tensor<2xf32>
}
