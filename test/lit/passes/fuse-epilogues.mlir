// RUN: llmc-opt %s --llmc-form-kernels --llmc-fuse-epilogues --split-input-file | FileCheck %s

// add(matmul(x, w), b) with b a row vector: one group, the matmul's, that
// yields the add (one cuBLASLt call with a BIAS epilogue). The gelu reads
// the group's result.
// CHECK-LABEL: func.func @bias
// CHECK:       %[[K:.+]] = llmc.kernel -> (tensor<2x16x96xf32>) {
// CHECK-NEXT:    %[[M:.+]] = llmc.matmul %arg0, %arg1
// CHECK-NEXT:    %[[A:.+]] = llmc.add %[[M]], %arg2
// CHECK-NEXT:    llmc.yield %[[A]] : tensor<2x16x96xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  llmc.kernel
// CHECK-NEXT:    llmc.gelu tanh %[[K]]
// CHECK-NOT:   llmc.add
func.func @bias(%x: tensor<2x16x64xf32>, %w: tensor<64x96xf32>, %b: tensor<96xf32>) -> tensor<2x16x96xf32> {
  %0 = llmc.matmul %x, %w : (tensor<2x16x64xf32>, tensor<64x96xf32>) -> tensor<2x16x96xf32>
  %1 = llmc.add %0, %b : (tensor<2x16x96xf32>, tensor<96xf32>) -> tensor<2x16x96xf32>
  %2 = llmc.gelu tanh %1 : tensor<2x16x96xf32>
  return %2 : tensor<2x16x96xf32>
}

// -----

// A [1, 1, n] bf16 bias as the add's first operand, computed before the
// matmul, a transposed weight: fused; the group stays where the matmul was.
// CHECK-LABEL: func.func @bias_first
// CHECK:       %[[B:.+]] = llmc.kernel
// CHECK-NEXT:    llmc.neg
// CHECK:       %[[K:.+]] = llmc.kernel -> (tensor<2x16x96xbf16>) {
// CHECK-NEXT:    %[[M:.+]] = llmc.matmul %arg0, %arg1 {transpose_rhs}
// CHECK-NEXT:    %[[A:.+]] = llmc.add %[[B]], %[[M]]
// CHECK-NEXT:    llmc.yield %[[A]]
// CHECK-NEXT:  }
// CHECK-NEXT:  return %[[K]]
func.func @bias_first(%x: tensor<2x16x64xbf16>, %w: tensor<96x64xbf16>, %c: tensor<1x1x96xbf16>) -> tensor<2x16x96xbf16> {
  %b = llmc.neg %c : tensor<1x1x96xbf16>
  %0 = llmc.matmul %x, %w {transpose_rhs} : (tensor<2x16x64xbf16>, tensor<96x64xbf16>) -> tensor<2x16x96xbf16>
  %1 = llmc.add %b, %0 : (tensor<1x1x96xbf16>, tensor<2x16x96xbf16>) -> tensor<2x16x96xbf16>
  return %1 : tensor<2x16x96xbf16>
}

// -----

// Negative: the matmul result is also returned (read by two users).
// CHECK-LABEL: func.func @two_uses
// CHECK:       llmc.kernel
// CHECK-NEXT:    llmc.matmul
// CHECK-NEXT:    llmc.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  llmc.kernel
// CHECK-NEXT:    llmc.add
func.func @two_uses(%x: tensor<32x64xf32>, %w: tensor<64x96xf32>, %b: tensor<96xf32>) -> (tensor<32x96xf32>, tensor<32x96xf32>) {
  %0 = llmc.matmul %x, %w : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
  %1 = llmc.add %0, %b : (tensor<32x96xf32>, tensor<96xf32>) -> tensor<32x96xf32>
  return %0, %1 : tensor<32x96xf32>, tensor<32x96xf32>
}

// -----

// Negative: the matmul result read by two groups (the add and a neg).
// CHECK-LABEL: func.func @two_groups
// CHECK:       llmc.kernel
// CHECK-NEXT:    llmc.matmul
// CHECK-NEXT:    llmc.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  llmc.kernel
// CHECK-NEXT:    llmc.add
func.func @two_groups(%x: tensor<32x64xf32>, %w: tensor<64x96xf32>, %b: tensor<96xf32>) -> (tensor<32x96xf32>, tensor<32x96xf32>) {
  %0 = llmc.matmul %x, %w : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
  %1 = llmc.add %0, %b : (tensor<32x96xf32>, tensor<96xf32>) -> tensor<32x96xf32>
  %2 = llmc.neg %0 : tensor<32x96xf32>
  return %1, %2 : tensor<32x96xf32>, tensor<32x96xf32>
}

// -----

// Negative: a [rows, n] operand is not a row vector.
// CHECK-LABEL: func.func @not_row_vector
// CHECK:       llmc.matmul
// CHECK-NEXT:    llmc.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  llmc.kernel
// CHECK-NEXT:    llmc.add
func.func @not_row_vector(%x: tensor<32x64xf32>, %w: tensor<64x96xf32>, %b: tensor<32x96xf32>) -> tensor<32x96xf32> {
  %0 = llmc.matmul %x, %w : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
  %1 = llmc.add %0, %b : (tensor<32x96xf32>, tensor<32x96xf32>) -> tensor<32x96xf32>
  return %1 : tensor<32x96xf32>
}

// -----

// Negative: a [rows, 1] operand broadcasts along the columns.
// CHECK-LABEL: func.func @column_vector
// CHECK:       llmc.matmul
// CHECK-NEXT:    llmc.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  llmc.kernel
// CHECK-NEXT:    llmc.add
func.func @column_vector(%x: tensor<2x16x64xf32>, %w: tensor<64x96xf32>, %b: tensor<2x16x1xf32>) -> tensor<2x16x96xf32> {
  %0 = llmc.matmul %x, %w : (tensor<2x16x64xf32>, tensor<64x96xf32>) -> tensor<2x16x96xf32>
  %1 = llmc.add %0, %b : (tensor<2x16x96xf32>, tensor<2x16x1xf32>) -> tensor<2x16x96xf32>
  return %1 : tensor<2x16x96xf32>
}

// -----

// Negative: a [1, 1, n] bias of higher rank broadcasts the product itself
// (the add's type is not the matmul's).
// CHECK-LABEL: func.func @higher_rank
// CHECK:       llmc.matmul
// CHECK-NEXT:    llmc.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  llmc.kernel
// CHECK-NEXT:    llmc.add
func.func @higher_rank(%x: tensor<32x64xf32>, %w: tensor<64x96xf32>, %b: tensor<1x1x96xf32>) -> tensor<1x32x96xf32> {
  %0 = llmc.matmul %x, %w : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
  %1 = llmc.add %0, %b : (tensor<32x96xf32>, tensor<1x1x96xf32>) -> tensor<1x32x96xf32>
  return %1 : tensor<1x32x96xf32>
}

// -----

// Negative: a batched GEMM (both operands batched); a per-batch bias would
// need a bias batch stride.
// CHECK-LABEL: func.func @batched
// CHECK:       llmc.matmul
// CHECK-NEXT:    llmc.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  llmc.kernel
// CHECK-NEXT:    llmc.add
func.func @batched(%a: tensor<2x3x16x8xf32>, %b: tensor<2x3x8x24xf32>, %bias: tensor<24xf32>) -> tensor<2x3x16x24xf32> {
  %0 = llmc.matmul %a, %b : (tensor<2x3x16x8xf32>, tensor<2x3x8x24xf32>) -> tensor<2x3x16x24xf32>
  %1 = llmc.add %0, %bias : (tensor<2x3x16x24xf32>, tensor<24xf32>) -> tensor<2x3x16x24xf32>
  return %1 : tensor<2x3x16x24xf32>
}

// -----

// Negative: a transposed batched lhs against a shared weight does not fold
// into one GEMM.
// CHECK-LABEL: func.func @transposed_lhs
// CHECK:       llmc.matmul
// CHECK-NEXT:    llmc.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  llmc.kernel
// CHECK-NEXT:    llmc.add
func.func @transposed_lhs(%a: tensor<2x8x16xf32>, %w: tensor<8x24xf32>, %bias: tensor<24xf32>) -> tensor<2x16x24xf32> {
  %0 = llmc.matmul %a, %w {transpose_lhs} : (tensor<2x8x16xf32>, tensor<8x24xf32>) -> tensor<2x16x24xf32>
  %1 = llmc.add %0, %bias : (tensor<2x16x24xf32>, tensor<24xf32>) -> tensor<2x16x24xf32>
  return %1 : tensor<2x16x24xf32>
}

// -----

// Negative: the bias is computed after the matmul, which could not read it.
// CHECK-LABEL: func.func @bias_after
// CHECK:       llmc.matmul
// CHECK-NEXT:    llmc.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  llmc.kernel
// CHECK-NEXT:    llmc.neg
// CHECK:       llmc.kernel
// CHECK-NEXT:    llmc.add
func.func @bias_after(%x: tensor<32x64xf32>, %w: tensor<64x96xf32>, %c: tensor<96xf32>) -> tensor<32x96xf32> {
  %0 = llmc.matmul %x, %w : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
  %b = llmc.neg %c : tensor<96xf32>
  %1 = llmc.add %0, %b : (tensor<32x96xf32>, tensor<96xf32>) -> tensor<32x96xf32>
  return %1 : tensor<32x96xf32>
}

// -----

// Negative: the product added to itself.
// CHECK-LABEL: func.func @self
// CHECK:       llmc.matmul
// CHECK-NEXT:    llmc.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  llmc.kernel
// CHECK-NEXT:    llmc.add
func.func @self(%x: tensor<32x64xf32>, %w: tensor<64x96xf32>) -> tensor<32x96xf32> {
  %0 = llmc.matmul %x, %w : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
  %1 = llmc.add %0, %0 : (tensor<32x96xf32>, tensor<32x96xf32>) -> tensor<32x96xf32>
  return %1 : tensor<32x96xf32>
}

// -----

// Negative: a sub (the epilogue adds).
// CHECK-LABEL: func.func @not_float_add
// CHECK:       llmc.matmul
// CHECK-NEXT:    llmc.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  llmc.kernel
// CHECK-NEXT:    llmc.sub
func.func @not_float_add(%x: tensor<32x64xf32>, %w: tensor<64x96xf32>, %b: tensor<96xf32>) -> tensor<32x96xf32> {
  %0 = llmc.matmul %x, %w : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
  %1 = llmc.sub %0, %b : (tensor<32x96xf32>, tensor<96xf32>) -> tensor<32x96xf32>
  return %1 : tensor<32x96xf32>
}
