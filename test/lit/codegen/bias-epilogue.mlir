// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s

// add(matmul(x, w), b) with b a row vector rides in the matmul's cuBLASLt
// bias epilogue (compiler/codegen/EpilogueFusion.h): the add launches
// nothing and its result is the matmul's buffer. Anything else stays a
// matmul and an add kernel.

// An [n] bias; the add's result is read later through the matmul's buffer.
// CHECK-LABEL: # forward
// CHECK:       step 0 matmul matmul_0 m 32 n 96 k 64 batch 1 {{.*}} (arg0, arg1 -> matmul_0.out0) bias arg2
// CHECK-NOT:   launch add_1
// CHECK:       step 1 launch gelu_2 {{.*}} args (matmul_0.out0, gelu_2.out0)
// CHECK:       compiled 1 kernels for sm_90 with NVRTC
func.func @forward(%x: tensor<2x16x64xf32>, %w: tensor<64x96xf32>, %b: tensor<96xf32>) -> tensor<2x16x96xf32> {
  %0 = llmc.matmul %x, %w : (tensor<2x16x64xf32>, tensor<64x96xf32>) -> tensor<2x16x96xf32>
  %1 = llmc.add %0, %b : (tensor<2x16x96xf32>, tensor<96xf32>) -> tensor<2x16x96xf32>
  %2 = llmc.gelu tanh %1 : tensor<2x16x96xf32>
  return %2 : tensor<2x16x96xf32>
}

// -----

// A [1, 1, n] bf16 bias as the add's first operand, a transposed weight and
// a bias computed before the matmul; the returned add names the buffer.
// CHECK-LABEL: # forward
// CHECK:       step 0 launch neg_0
// CHECK-NEXT:  step 1 matmul matmul_1 m 32 n 96 k 64 batch 1 transA 0 transB 1 {{.*}} (arg0, arg1 -> matmul_1.out0) bias neg_0.out0
// CHECK-NOT:   step 2
// CHECK:       compiled 1 kernels for sm_90 with NVRTC
func.func @forward(%x: tensor<2x16x64xbf16>, %w: tensor<96x64xbf16>, %c: tensor<1x1x96xbf16>) -> tensor<2x16x96xbf16> {
  %b = llmc.neg %c : tensor<1x1x96xbf16>
  %0 = llmc.matmul %x, %w {transpose_rhs} : (tensor<2x16x64xbf16>, tensor<96x64xbf16>) -> tensor<2x16x96xbf16>
  %1 = llmc.add %b, %0 : (tensor<1x1x96xbf16>, tensor<2x16x96xbf16>) -> tensor<2x16x96xbf16>
  return %1 : tensor<2x16x96xbf16>
}

// -----

// The matmul result has another use (it is returned): not fused.
// CHECK-LABEL: # forward
// CHECK:       step 0 matmul matmul_0 {{.*}} (arg0, arg1 -> matmul_0.out0){{$}}
// CHECK-NEXT:  step 1 launch add_1 {{.*}} args (matmul_0.out0, arg2, add_1.out0)
func.func @forward(%x: tensor<32x64xf32>, %w: tensor<64x96xf32>, %b: tensor<96xf32>) -> (tensor<32x96xf32>, tensor<32x96xf32>) {
  %0 = llmc.matmul %x, %w : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
  %1 = llmc.add %0, %b : (tensor<32x96xf32>, tensor<96xf32>) -> tensor<32x96xf32>
  return %0, %1 : tensor<32x96xf32>, tensor<32x96xf32>
}

// -----

// A [rows, n] operand is not a row vector: not fused.
// CHECK-LABEL: # forward
// CHECK:       step 0 matmul matmul_0 {{.*}} (arg0, arg1 -> matmul_0.out0){{$}}
// CHECK-NEXT:  step 1 launch add_1 {{.*}} args (matmul_0.out0, arg2, add_1.out0)
func.func @forward(%x: tensor<32x64xf32>, %w: tensor<64x96xf32>, %b: tensor<32x96xf32>) -> tensor<32x96xf32> {
  %0 = llmc.matmul %x, %w : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
  %1 = llmc.add %0, %b : (tensor<32x96xf32>, tensor<32x96xf32>) -> tensor<32x96xf32>
  return %1 : tensor<32x96xf32>
}

// -----

// A [rows, 1] operand broadcasts along the columns, not the rows: not fused.
// CHECK-LABEL: # forward
// CHECK:       step 0 matmul matmul_0 {{.*}} (arg0, arg1 -> matmul_0.out0){{$}}
// CHECK-NEXT:  step 1 launch add_1 {{.*}} args (matmul_0.out0, arg2, add_1.out0)
func.func @forward(%x: tensor<2x16x64xf32>, %w: tensor<64x96xf32>, %b: tensor<2x16x1xf32>) -> tensor<2x16x96xf32> {
  %0 = llmc.matmul %x, %w : (tensor<2x16x64xf32>, tensor<64x96xf32>) -> tensor<2x16x96xf32>
  %1 = llmc.add %0, %b : (tensor<2x16x96xf32>, tensor<2x16x1xf32>) -> tensor<2x16x96xf32>
  return %1 : tensor<2x16x96xf32>
}

// -----

// A [1, 1, n] operand of higher rank than the matmul result broadcasts the
// result itself (the add's type is not the matmul's): not fused.
// CHECK-LABEL: # forward
// CHECK:       step 0 matmul matmul_0 {{.*}} (arg0, arg1 -> matmul_0.out0){{$}}
// CHECK-NEXT:  step 1 launch add_1
func.func @forward(%x: tensor<32x64xf32>, %w: tensor<64x96xf32>, %b: tensor<1x1x96xf32>) -> tensor<1x32x96xf32> {
  %0 = llmc.matmul %x, %w : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
  %1 = llmc.add %0, %b : (tensor<32x96xf32>, tensor<1x1x96xf32>) -> tensor<1x32x96xf32>
  return %1 : tensor<1x32x96xf32>
}

// -----

// A batched GEMM (batch 6: both operands batched): not fused.
// CHECK-LABEL: # forward
// CHECK:       step 0 matmul matmul_0 m 16 n 24 k 8 batch 6 {{.*}} (arg0, arg1 -> matmul_0.out0){{$}}
// CHECK-NEXT:  step 1 launch add_1
func.func @forward(%a: tensor<2x3x16x8xf32>, %b: tensor<2x3x8x24xf32>, %bias: tensor<24xf32>) -> tensor<2x3x16x24xf32> {
  %0 = llmc.matmul %a, %b : (tensor<2x3x16x8xf32>, tensor<2x3x8x24xf32>) -> tensor<2x3x16x24xf32>
  %1 = llmc.add %0, %bias : (tensor<2x3x16x24xf32>, tensor<24xf32>) -> tensor<2x3x16x24xf32>
  return %1 : tensor<2x3x16x24xf32>
}

// -----

// The bias is computed after the matmul, which could not read it: not fused.
// CHECK-LABEL: # forward
// CHECK:       step 0 matmul matmul_0 {{.*}} (arg0, arg1 -> matmul_0.out0){{$}}
// CHECK-NEXT:  step 1 launch neg_1
// CHECK-NEXT:  step 2 launch add_2
func.func @forward(%x: tensor<32x64xf32>, %w: tensor<64x96xf32>, %c: tensor<96xf32>) -> tensor<32x96xf32> {
  %0 = llmc.matmul %x, %w : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
  %b = llmc.neg %c : tensor<96xf32>
  %1 = llmc.add %0, %b : (tensor<32x96xf32>, tensor<96xf32>) -> tensor<32x96xf32>
  return %1 : tensor<32x96xf32>
}

// -----

// The matmul result added to itself: not fused (the add alone reads its one
// input once).
// CHECK-LABEL: # forward
// CHECK:       step 0 matmul matmul_0 {{.*}} (arg0, arg1 -> matmul_0.out0){{$}}
// CHECK-NEXT:  step 1 launch add_1 {{.*}} args (matmul_0.out0, add_1.out0)
func.func @forward(%x: tensor<32x64xf32>, %w: tensor<64x96xf32>) -> tensor<32x96xf32> {
  %0 = llmc.matmul %x, %w : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
  %1 = llmc.add %0, %0 : (tensor<32x96xf32>, tensor<32x96xf32>) -> tensor<32x96xf32>
  return %1 : tensor<32x96xf32>
}
