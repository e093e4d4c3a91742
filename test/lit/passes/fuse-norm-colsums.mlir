// RUN: llmc-opt %s --llmc-form-kernels --llmc-fuse-epilogues --llmc-fuse-elementwise --split-input-file | FileCheck %s
// RUN: llmc-opt %s --llmc-form-kernels --llmc-fuse-epilogues --llmc-fuse-elementwise="col-sums=false" --split-input-file | FileCheck %s --check-prefix=OFF

// Column sums of llmc-fuse-elementwise (docs/fusion.md "Column sums in the
// norm-gradient kernel"): a bias gradient, a reduce_sum over every axis
// before a norm gradient's of the gradient's row value, joins the norm
// group and is summed in its row kernel next to dweight and dbias.

// HF GPT-2's attention projection: the residual gradient (the norm
// gradient's epilogue, cast to bf16) is the cotangent of the projection's
// bias and the rhs of its weight gradient dW = x^T c. The sum leaves the
// weight gradient's BGRADA epilogue for the norm group; the matmul is a
// plain cuBLASLt call again.
// CHECK-LABEL: func.func @residual_grad_bias
// CHECK:       %[[K:.+]]:4 = llmc.kernel -> (tensor<64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xbf16>, tensor<64xbf16>) {
// CHECK-NEXT:    llmc.cast %arg1
// CHECK-NEXT:    %[[G:.+]]:2 = llmc.layer_norm_grad
// CHECK-NEXT:    %[[A:.+]] = llmc.add %arg3, %[[G]]#0
// CHECK-NEXT:    %[[C:.+]] = llmc.cast %[[A]] : tensor<2x16x64xf32> -> tensor<2x16x64xbf16>
// CHECK-NEXT:    %[[S:.+]] = llmc.reduce_sum %[[C]] axes [0, 1] : (tensor<2x16x64xbf16>) -> tensor<64xbf16>
// CHECK-NEXT:    llmc.yield %[[G]]#1, %[[A]], %[[C]], %[[S]]
// CHECK-NEXT:  }
// CHECK:       %[[V:.+]] = llmc.reshape %[[K]]#2
// CHECK-NEXT:  %[[M:.+]] = llmc.kernel -> (tensor<96x64xbf16>) {
// CHECK-NEXT:    llmc.matmul %arg4, %[[V]] {transpose_lhs}
// CHECK-NEXT:    llmc.yield
// CHECK-NEXT:  }
// CHECK-NOT:   llmc.epilogue
// CHECK:       return %[[K]]#1, %[[K]]#0, %[[K]]#3, %[[M]]
// OFF-LABEL:   func.func @residual_grad_bias
// OFF:         llmc.layer_norm_grad
// OFF-NOT:     llmc.reduce_sum
// OFF:         llmc.kernel -> (tensor<96x64xbf16>, tensor<64xbf16>) attributes {llmc.epilogue = "bias_grad_rhs"}
func.func @residual_grad_bias(%x: tensor<2x16x64xf32>, %dy: tensor<2x16x64xbf16>, %w: tensor<64xf32>, %dres: tensor<2x16x64xf32>, %xin: tensor<32x96xbf16>) -> (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xbf16>, tensor<96x64xbf16>) {
  %0 = llmc.cast %dy : tensor<2x16x64xbf16> -> tensor<2x16x64xf32>
  %1:2 = llmc.layer_norm_grad %x, %0 weight %w : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64xf32>) -> (tensor<2x16x64xf32>, tensor<64xf32>)
  %2 = llmc.add %dres, %1#0 : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  %3 = llmc.cast %2 : tensor<2x16x64xf32> -> tensor<2x16x64xbf16>
  %4 = llmc.reduce_sum %3 axes [0, 1] : (tensor<2x16x64xbf16>) -> tensor<64xbf16>
  %5 = llmc.reshape %3 : tensor<2x16x64xbf16> -> tensor<32x64xbf16>
  %6 = llmc.matmul %xin, %5 {transpose_lhs} : (tensor<32x96xbf16>, tensor<32x64xbf16>) -> tensor<96x64xbf16>
  return %2, %1#1, %4, %6 : tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xbf16>, tensor<96x64xbf16>
}

// -----

// The graph of ColumnSumGpu (test/gpu/codegen/ColumnSumGpuTest.cpp): as
// above with dbias too and the f32 residual gradient returned next to its
// bf16 cast. The sum joins the norm group here as well: two groups with
// the sum and two without (where it is the matmul group's BGRADA result),
// so a launch count cannot tell the plans apart; these checks can.
// CHECK-LABEL: func.func @gpu_test_residual
// CHECK:       %[[K:.+]]:5 = llmc.kernel -> (tensor<64xf32>, tensor<64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xbf16>, tensor<64xbf16>) {
// CHECK:         llmc.layer_norm_grad
// CHECK:         %[[S:.+]] = llmc.reduce_sum
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.kernel -> (tensor<96x64xbf16>) {
// CHECK-NEXT:    llmc.matmul
// CHECK-NEXT:    llmc.yield
// CHECK-NOT:   llmc.kernel
// CHECK:       return %[[K]]#2, %[[K]]#0, %[[K]]#1, %[[K]]#4
// OFF-LABEL:   func.func @gpu_test_residual
// OFF:         llmc.kernel -> (tensor<64xf32>, tensor<64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xbf16>) {
// OFF-NOT:     llmc.reduce_sum
// OFF:         llmc.kernel -> (tensor<96x64xbf16>, tensor<64xbf16>) attributes {llmc.epilogue = "bias_grad_rhs"}
// OFF-NOT:     llmc.kernel
func.func @gpu_test_residual(%x: tensor<2x16x64xf32>, %dy: tensor<2x16x64xbf16>, %w: tensor<64xf32>, %dres: tensor<2x16x64xf32>, %xin: tensor<32x96xbf16>) -> (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xbf16>, tensor<96x64xbf16>) {
  %c = llmc.cast %dy : tensor<2x16x64xbf16> -> tensor<2x16x64xf32>
  %g:3 = llmc.layer_norm_grad %x, %c weight %w {axis = 2 : i64, bias_grad} : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64xf32>) -> (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>)
  %r = llmc.add %dres, %g#0 : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  %rc = llmc.cast %r : tensor<2x16x64xf32> -> tensor<2x16x64xbf16>
  %s = llmc.reduce_sum %rc axes [0, 1] : (tensor<2x16x64xbf16>) -> tensor<64xbf16>
  %v = llmc.reshape %rc : tensor<2x16x64xbf16> -> tensor<32x64xbf16>
  %m = llmc.matmul %xin, %v {transpose_lhs} : (tensor<32x96xbf16>, tensor<32x64xbf16>) -> tensor<96x64xbf16>
  return %r, %g#1, %g#2, %s, %m : tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xbf16>, tensor<96x64xbf16>
}

// -----

// The last norm gradient (ln_f's) is a reduction with casts, no epilogue:
// its bf16 dx is the MLP projection's bias cotangent. The group becomes a
// row-fused one with the sum.
// CHECK-LABEL: func.func @cast_dx_bias
// CHECK:       llmc.kernel -> (tensor<64xf32>, tensor<64xf32>, tensor<32x64xbf16>, tensor<64xbf16>) {
// CHECK-NEXT:    llmc.cast %arg1
// CHECK-NEXT:    %[[G:.+]]:3 = llmc.layer_norm_grad
// CHECK-NEXT:    %[[C:.+]] = llmc.cast %[[G]]#0
// CHECK-NEXT:    %[[S:.+]] = llmc.reduce_sum %[[C]] axes [0]
// CHECK-NEXT:    llmc.yield %[[G]]#1, %[[G]]#2, %[[C]], %[[S]]
// CHECK-NOT:   llmc.epilogue
// OFF-LABEL:   func.func @cast_dx_bias
// OFF:         llmc.epilogue = "bias_grad_rhs"
func.func @cast_dx_bias(%x: tensor<32x64xf32>, %dy: tensor<32x64xbf16>, %w: tensor<64xf32>, %xin: tensor<32x96xbf16>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xbf16>, tensor<96x64xbf16>) {
  %0 = llmc.cast %dy : tensor<32x64xbf16> -> tensor<32x64xf32>
  %1:3 = llmc.layer_norm_grad %x, %0 weight %w {bias_grad} : (tensor<32x64xf32>, tensor<32x64xf32>, tensor<64xf32>) -> (tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32>)
  %2 = llmc.cast %1#0 : tensor<32x64xf32> -> tensor<32x64xbf16>
  %3 = llmc.reduce_sum %2 axes [0] : (tensor<32x64xbf16>) -> tensor<64xbf16>
  %4 = llmc.matmul %xin, %2 {transpose_lhs} : (tensor<32x96xbf16>, tensor<32x64xbf16>) -> tensor<96x64xbf16>
  return %1#1, %1#2, %3, %4 : tensor<64xf32>, tensor<64xf32>, tensor<64xbf16>, tensor<96x64xbf16>
}

// -----

// f32 (no cuBLASLt epilogue there): the sum of an RMS norm gradient's dx,
// a group of its own, joins the one-op norm group; dx is still written
// for the matmul.
// CHECK-LABEL: func.func @f32_dx_sum
// CHECK:       llmc.kernel -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) {
// CHECK-NEXT:    %[[G:.+]]:2 = llmc.rms_norm_grad
// CHECK-NEXT:    %[[S:.+]] = llmc.reduce_sum %[[G]]#0 axes [0, 1]
// CHECK-NEXT:    llmc.yield %[[G]]#0, %[[G]]#1, %[[S]]
// OFF-LABEL:   func.func @f32_dx_sum
// OFF:         llmc.kernel -> (tensor<16xf32>) {
// OFF-NEXT:      llmc.reduce_sum
func.func @f32_dx_sum(%x: tensor<2x8x16xf32>, %dy: tensor<2x8x16xf32>, %w: tensor<16xf32>, %xin: tensor<16x24xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<24x16xf32>) {
  %0:2 = llmc.rms_norm_grad %x, %dy weight %w : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>)
  %1 = llmc.reduce_sum %0#0 axes [0, 1] : (tensor<2x8x16xf32>) -> tensor<16xf32>
  %2 = llmc.reshape %0#0 : tensor<2x8x16xf32> -> tensor<16x16xf32>
  %3 = llmc.matmul %xin, %2 {transpose_lhs} : (tensor<16x24xf32>, tensor<16x16xf32>) -> tensor<24x16xf32>
  return %0#1, %1, %3 : tensor<16xf32>, tensor<16xf32>, tensor<24x16xf32>
}

// -----

// Negative: sums that are not column sums of the gradient's rows: over the
// last axis, over the batch axis only, with keepdims, of the parameter
// gradient dweight, and of the norm's input (not its result). Each stays
// a group of its own.
// CHECK-LABEL: func.func @not_column_sums
// CHECK:       llmc.kernel -> (tensor<2x8x16xf32>, tensor<16xf32>) {
// CHECK-NEXT:    llmc.rms_norm_grad
// CHECK-NEXT:    llmc.yield
// CHECK-NEXT:  }
// CHECK-COUNT-5: llmc.reduce_sum
// OFF-LABEL:   func.func @not_column_sums
func.func @not_column_sums(%x: tensor<2x8x16xf32>, %dy: tensor<2x8x16xf32>, %w: tensor<16xf32>) -> (tensor<2x8xf32>, tensor<8x16xf32>, tensor<1x1x16xf32>, tensor<f32>, tensor<16xf32>) {
  %0:2 = llmc.rms_norm_grad %x, %dy weight %w : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>)
  %1 = llmc.reduce_sum %0#0 axes [2] : (tensor<2x8x16xf32>) -> tensor<2x8xf32>
  %2 = llmc.reduce_sum %0#0 axes [0] : (tensor<2x8x16xf32>) -> tensor<8x16xf32>
  %3 = llmc.reduce_sum %0#0 axes [0, 1] keepdims : (tensor<2x8x16xf32>) -> tensor<1x1x16xf32>
  %4 = llmc.reduce_sum %0#1 axes [0] : (tensor<16xf32>) -> tensor<f32>
  %5 = llmc.reduce_sum %x axes [0, 1] : (tensor<2x8x16xf32>) -> tensor<16xf32>
  return %1, %2, %3, %4, %5 : tensor<2x8xf32>, tensor<8x16xf32>, tensor<1x1x16xf32>, tensor<f32>, tensor<16xf32>
}

// -----

// Negative: a forward layer norm sums no columns (only the gradients'
// row kernels have per-column accumulators), and a norm gradient whose
// rows no warp kernel takes (1028 elements: not 4k <= 1024) keeps its
// block kernel and its sum apart.
// CHECK-LABEL: func.func @no_warp_gradient
// CHECK:       llmc.layer_norm
// CHECK-NEXT:  llmc.yield
// CHECK:       llmc.reduce_sum
// CHECK:       llmc.layer_norm_grad
// CHECK-NEXT:  llmc.yield
// CHECK:       llmc.reduce_sum
// OFF-LABEL:   func.func @no_warp_gradient
func.func @no_warp_gradient(%x: tensor<4x8xf32>, %g: tensor<4x1028xf32>, %dy: tensor<4x1028xf32>) -> (tensor<8xf32>, tensor<1028xf32>) {
  %0 = llmc.layer_norm %x {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = llmc.reduce_sum %0 axes [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %2 = llmc.layer_norm_grad %g, %dy {axis = 1 : i64} : (tensor<4x1028xf32>, tensor<4x1028xf32>) -> tensor<4x1028xf32>
  %3 = llmc.reduce_sum %2 axes [0] : (tensor<4x1028xf32>) -> tensor<1028xf32>
  return %1, %3 : tensor<8xf32>, tensor<1028xf32>
}

// -----

// The HF dynamo export sums the bias gradient through the [rows, n] view
// its weight gradient reads: the sum of the view over axis 0 is the sum of
// the [B, T, n] value over axes [0, 1], which the norm group takes. A sum
// of a view that does not keep the row ([B, T, n] -> [B, T * n]) stays.
// CHECK-LABEL: func.func @through_view
// CHECK:       llmc.kernel
// CHECK:         %[[C:.+]] = llmc.cast %{{.+}} : tensor<2x16x64xf32> -> tensor<2x16x64xbf16>
// CHECK-NEXT:    %[[S:.+]] = llmc.reduce_sum %[[C]] axes [0, 1] : (tensor<2x16x64xbf16>) -> tensor<64xbf16>
// CHECK-NOT:   llmc.epilogue = "bias_grad_rhs"
// CHECK:       llmc.reduce_sum %{{.+}} axes [0] : (tensor<2x1024xbf16>) -> tensor<1024xbf16>
// OFF-LABEL:   func.func @through_view
// OFF:         llmc.reduce_sum %{{.+}} axes [0] : (tensor<32x64xbf16>)
func.func @through_view(%x: tensor<2x16x64xf32>, %dy: tensor<2x16x64xbf16>, %w: tensor<64xf32>, %dres: tensor<2x16x64xf32>, %xin: tensor<32x96xbf16>) -> (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xbf16>, tensor<96x64xbf16>, tensor<1024xbf16>) {
  %0 = llmc.cast %dy : tensor<2x16x64xbf16> -> tensor<2x16x64xf32>
  %1:2 = llmc.layer_norm_grad %x, %0 weight %w : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64xf32>) -> (tensor<2x16x64xf32>, tensor<64xf32>)
  %2 = llmc.add %dres, %1#0 : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  %3 = llmc.cast %2 : tensor<2x16x64xf32> -> tensor<2x16x64xbf16>
  %5 = llmc.reshape %3 : tensor<2x16x64xbf16> -> tensor<32x64xbf16>
  %4 = llmc.reduce_sum %5 axes [0] : (tensor<32x64xbf16>) -> tensor<64xbf16>
  %6 = llmc.matmul %xin, %5 {transpose_lhs} : (tensor<32x96xbf16>, tensor<32x64xbf16>) -> tensor<96x64xbf16>
  %7 = llmc.reshape %3 : tensor<2x16x64xbf16> -> tensor<2x1024xbf16>
  %8 = llmc.reduce_sum %7 axes [0] : (tensor<2x1024xbf16>) -> tensor<1024xbf16>
  return %2, %1#1, %4, %6, %8 : tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xbf16>, tensor<96x64xbf16>, tensor<1024xbf16>
}
