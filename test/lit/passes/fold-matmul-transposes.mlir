// RUN: llmc-opt %s --llmc-fold-matmul-transposes --split-input-file | FileCheck %s

// An [out, in] weight transposed for the product (HF's lm_head): the
// transpose becomes the rhs flag and goes away.
// CHECK-LABEL: func.func @lm_head
// CHECK-NOT: llmc.transpose
// CHECK: llmc.matmul %arg0, %arg1 {transpose_rhs} : (tensor<2x8x16xf32>, tensor<32x16xf32>) -> tensor<2x8x32xf32>
func.func @lm_head(%x: tensor<2x8x16xf32>, %w: tensor<32x16xf32>) -> tensor<2x8x32xf32> {
  %t = llmc.transpose %w [1, 0] : (tensor<32x16xf32>) -> tensor<16x32xf32>
  %y = llmc.matmul %x, %t : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// A transposed lhs, and a flag that is already set toggles off.
// CHECK-LABEL: func.func @both_sides
// CHECK-NOT: llmc.transpose
// CHECK: llmc.matmul %arg0, %arg1 {transpose_lhs} : (tensor<16x8xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
func.func @both_sides(%a: tensor<16x8xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %ta = llmc.transpose %a [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %tb = llmc.transpose %b [1, 0] : (tensor<16x4xf32>) -> tensor<4x16xf32>
  %y = llmc.matmul %ta, %tb {transpose_rhs} : (tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// Batched: a swap of the last two dims that keeps the batch folds.
// CHECK-LABEL: func.func @batched
// CHECK-NOT: llmc.transpose
// CHECK: llmc.matmul %arg0, %arg1 {transpose_rhs} : (tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>) -> tensor<2x3x8x8xf32>
func.func @batched(%q: tensor<2x3x8x16xf32>, %k: tensor<2x3x8x16xf32>) -> tensor<2x3x8x8xf32> {
  %kt = llmc.transpose %k [0, 1, 3, 2] : (tensor<2x3x8x16xf32>) -> tensor<2x3x16x8xf32>
  %s = llmc.matmul %q, %kt : (tensor<2x3x8x16xf32>, tensor<2x3x16x8xf32>) -> tensor<2x3x8x8xf32>
  return %s : tensor<2x3x8x8xf32>
}

// -----

// Negative: a transpose with another reader folds into the matmul but
// stays for that reader.
// CHECK-LABEL: func.func @shared_transpose
// CHECK: %[[T:.*]] = llmc.transpose %arg1 [1, 0]
// CHECK: llmc.matmul %arg0, %arg1 {transpose_rhs}
// CHECK: return %{{.*}}, %[[T]]
func.func @shared_transpose(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>) -> (tensor<8x32xf32>, tensor<16x32xf32>) {
  %t = llmc.transpose %w [1, 0] : (tensor<32x16xf32>) -> tensor<16x32xf32>
  %y = llmc.matmul %x, %t : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %y, %t : tensor<8x32xf32>, tensor<16x32xf32>
}

// -----

// Negative: a permutation that moves a batch dim is not a matmul flag.
// CHECK-LABEL: func.func @moves_batch
// CHECK: llmc.transpose %arg1 [1, 0, 2]
// CHECK-NOT: transpose_rhs
func.func @moves_batch(%x: tensor<2x8x16xf32>, %w: tensor<16x2x8xf32>) -> tensor<2x8x8xf32> {
  %t = llmc.transpose %w [1, 0, 2] : (tensor<16x2x8xf32>) -> tensor<2x16x8xf32>
  %y = llmc.matmul %x, %t : (tensor<2x8x16xf32>, tensor<2x16x8xf32>) -> tensor<2x8x8xf32>
  return %y : tensor<2x8x8xf32>
}

// -----

// One transpose read by two matmuls: both take the flag, the transpose goes.
// CHECK-LABEL: func.func @two_readers
// CHECK-NOT: llmc.transpose
// CHECK: llmc.matmul %arg0, %arg2 {transpose_rhs}
// CHECK: llmc.matmul %arg1, %arg2 {transpose_rhs}
func.func @two_readers(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>, %w: tensor<32x16xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %t = llmc.transpose %w [1, 0] : (tensor<32x16xf32>) -> tensor<16x32xf32>
  %a = llmc.matmul %x, %t : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %b = llmc.matmul %y, %t : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %a, %b : tensor<8x32xf32>, tensor<8x32xf32>
}
