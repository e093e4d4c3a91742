// RUN: not llmc codegen %s --split-input-file 2>/dev/null | FileCheck %s
// RUN: not llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=ERR

// matmul is a cuBLASLt call: no kernel, a row-major problem description.

// A weight without batch dims: the activation's batch folds into m.
// CHECK-LABEL: # forward
// CHECK: step 0 matmul matmul_0 m 2048 n 2304 k 768 batch 1 transA 0 transB 1 strideA 1572864 strideB 1769472 (arg0, arg1 -> matmul_0.out0)
func.func @forward(%x: tensor<2x1024x768xbf16>, %w: tensor<2304x768xbf16>) -> tensor<2x1024x2304xbf16> {
  %0 = llmc.matmul %x, %w {transpose_rhs} : (tensor<2x1024x768xbf16>, tensor<2304x768xbf16>) -> tensor<2x1024x2304xbf16>
  return %0 : tensor<2x1024x2304xbf16>
}

// -----

// Both batched: dense batch strides. A transposed lhs does not fold.
// CHECK-LABEL: # forward
// CHECK: step 0 matmul matmul_0 m 16 n 24 k 8 batch 6 transA 0 transB 0 strideA 128 strideB 192
// CHECK: step 1 matmul matmul_1 m 16 n 24 k 8 batch 6 transA 1 transB 0 strideA 128 strideB 0
func.func @forward(%a: tensor<2x3x16x8xf32>, %b: tensor<2x3x8x24xf32>, %at: tensor<2x3x8x16xf32>, %w: tensor<8x24xf32>)
    -> (tensor<2x3x16x24xf32>, tensor<2x3x16x24xf32>) {
  %0 = llmc.matmul %a, %b : (tensor<2x3x16x8xf32>, tensor<2x3x8x24xf32>) -> tensor<2x3x16x24xf32>
  %1 = llmc.matmul %at, %w {transpose_lhs} : (tensor<2x3x8x16xf32>, tensor<8x24xf32>) -> tensor<2x3x16x24xf32>
  return %0, %1 : tensor<2x3x16x24xf32>, tensor<2x3x16x24xf32>
}

// -----

// Batch dims that broadcast partially ([2, 1] against [3]) have no single
// cuBLASLt stride: llmc-form-kernels broadcasts both operands to [2, 3]
// first, and the GEMM runs with dense batch strides.
// CHECK-LABEL: # forward
// CHECK: step 0 launch broadcast_to_0 {{.*}} args (arg0, broadcast_to_0.out0)
// CHECK: step 1 launch broadcast_to_1 {{.*}} args (arg1, broadcast_to_1.out0)
// CHECK: step 2 matmul matmul_2 m 4 n 5 k 8 batch 6 transA 0 transB 0 strideA 32 strideB 40
func.func @forward(%a: tensor<2x1x4x8xf32>, %b: tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32> {
  %0 = llmc.matmul %a, %b : (tensor<2x1x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

// ERR: error: codegen: matmul of 'i32' is not supported (cuBLASLt takes float operands)
func.func @forward(%a: tensor<4x8xi32>, %b: tensor<8x5xi32>) -> tensor<4x5xi32> {
  %0 = llmc.matmul %a, %b : (tensor<4x8xi32>, tensor<8x5xi32>) -> tensor<4x5xi32>
  return %0 : tensor<4x5xi32>
}
