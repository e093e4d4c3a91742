// RUN: llmc-opt %s --split-input-file --llmc-fold-position-gathers | FileCheck %s

// HF GPT-2's position embedding: the positions are a constant arange(T)
// over the whole table. The gather is the table itself; its gradient (the
// broadcast add's vjp has already summed the batch) is the gradient itself.

// CHECK-LABEL: func.func @whole_table
// CHECK-SAME: (%[[W:[^:]+]]: tensor<8x4xf32>, %[[G:[^:]+]]: tensor<8x4xf32>)
// CHECK-NOT: llmc.gather
// CHECK: return %[[W]], %[[G]]
func.func @whole_table(%wpe: tensor<8x4xf32>, %g: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %pos = llmc.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64>
  %y = llmc.gather %wpe, %pos axis 0 : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<8x4xf32>
  %dw = llmc.gather_grad %g, %pos axis 0 : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<8x4xf32>
  return %y, %dw : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Positions of a shorter sequence (6 of 8 rows) for each of 2 sequences:
// the first 6 rows repeated over the batch, and the gradient summed over the
// batch into rows [0, 6) of zeros.

// CHECK-LABEL: func.func @batched_iota
// CHECK-SAME: (%[[W:[^:]+]]: tensor<8x4xbf16>, %[[G:[^:]+]]: tensor<2x6x4xbf16>)
// CHECK-NOT: llmc.gather
// CHECK: %[[ROWS:.+]] = llmc.slice %[[W]] starts [0, 0] limits [6, 4] strides [1, 1]
// CHECK: %[[VIEW:.+]] = llmc.reshape %[[ROWS]] : tensor<6x4xbf16> -> tensor<1x6x4xbf16>
// CHECK: %[[Y:.+]] = llmc.broadcast_to %[[VIEW]] : tensor<1x6x4xbf16> -> tensor<2x6x4xbf16>
// CHECK: %[[SUM:.+]] = llmc.reduce_sum %[[G]] axes [0] : (tensor<2x6x4xbf16>) -> tensor<6x4xbf16>
// CHECK: %[[DW:.+]] = llmc.slice_grad %[[SUM]] starts [0, 0] limits [6, 4] strides [1, 1] : (tensor<6x4xbf16>) -> tensor<8x4xbf16>
// CHECK: return %[[Y]], %[[DW]]
func.func @batched_iota(%wpe: tensor<8x4xbf16>, %g: tensor<2x6x4xbf16>) -> (tensor<2x6x4xbf16>, tensor<8x4xbf16>) {
  %pos = llmc.iota dim 1 : tensor<2x6xi64>
  %y = llmc.gather %wpe, %pos axis 0 : (tensor<8x4xbf16>, tensor<2x6xi64>) -> tensor<2x6x4xbf16>
  %dw = llmc.gather_grad %g, %pos axis 0 : (tensor<2x6x4xbf16>, tensor<2x6xi64>) -> tensor<8x4xbf16>
  return %y, %dw : tensor<2x6x4xbf16>, tensor<8x4xbf16>
}

// -----

// An iota broadcast over the batch, within a padded table's real rows.

// CHECK-LABEL: func.func @broadcast_iota
// CHECK-NOT: llmc.gather
// CHECK: llmc.reduce_sum %{{.+}} axes [0, 1] : (tensor<3x1x4x2xf32>) -> tensor<4x2xf32>
// CHECK: llmc.slice_grad %{{.+}} starts [0, 0] limits [4, 2] strides [1, 1] : (tensor<4x2xf32>) -> tensor<8x2xf32>
func.func @broadcast_iota(%g: tensor<3x1x4x2xf32>) -> tensor<8x2xf32> {
  %row = llmc.iota dim 0 : tensor<4xi32>
  %pos = llmc.broadcast_to %row : tensor<4xi32> -> tensor<3x1x4xi32>
  %dw = llmc.gather_grad %g, %pos axis 0 {bound = 5 : i64} : (tensor<3x1x4x2xf32>, tensor<3x1x4xi32>) -> tensor<8x2xf32>
  return %dw : tensor<8x2xf32>
}

// -----

// Not positions: a permutation, an offset, an iota over the batch dim,
// token ids, more positions than the table's real rows. All stay scatters.

// CHECK-LABEL: func.func @not_positions
// CHECK-COUNT-5: llmc.gather_grad
// CHECK: llmc.gather
func.func @not_positions(%g: tensor<4x2xf32>, %gb: tensor<2x3x2xf32>, %ids: tensor<4xi64>, %wpe: tensor<8x2xf32>)
    -> (tensor<8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<4x2xf32>) {
  %perm = llmc.constant dense<[0, 2, 1, 3]> : tensor<4xi64>
  %a = llmc.gather_grad %g, %perm axis 0 : (tensor<4x2xf32>, tensor<4xi64>) -> tensor<8x2xf32>
  %shifted = llmc.iota dim 0 {start = 1.0} : tensor<4xi64>
  %b = llmc.gather_grad %g, %shifted axis 0 : (tensor<4x2xf32>, tensor<4xi64>) -> tensor<8x2xf32>
  %batchpos = llmc.iota dim 0 : tensor<2x3xi64>
  %c = llmc.gather_grad %gb, %batchpos axis 0 : (tensor<2x3x2xf32>, tensor<2x3xi64>) -> tensor<8x2xf32>
  %d = llmc.gather_grad %g, %ids axis 0 : (tensor<4x2xf32>, tensor<4xi64>) -> tensor<8x2xf32>
  %pos = llmc.iota dim 0 : tensor<4xi64>
  %e = llmc.gather_grad %g, %pos axis 0 {bound = 3 : i64} : (tensor<4x2xf32>, tensor<4xi64>) -> tensor<8x2xf32>
  %y = llmc.gather %wpe, %ids axis 0 : (tensor<8x2xf32>, tensor<4xi64>) -> tensor<4x2xf32>
  return %a, %b, %c, %d, %e, %y : tensor<8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<4x2xf32>
}

// -----

// A gather along another axis of the data: the positions name columns, and
// the rewrite (rows of the table) does not apply.

// CHECK-LABEL: func.func @other_axis
// CHECK: llmc.gather %{{.+}}, %{{.+}} axis 1
// CHECK: llmc.gather_grad %{{.+}}, %{{.+}} axis 1
func.func @other_axis(%w: tensor<2x8xf32>, %g: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x8xf32>) {
  %pos = llmc.iota dim 0 : tensor<4xi64>
  %y = llmc.gather %w, %pos axis 1 : (tensor<2x8xf32>, tensor<4xi64>) -> tensor<2x4xf32>
  %dw = llmc.gather_grad %g, %pos axis 1 : (tensor<2x4xf32>, tensor<4xi64>) -> tensor<2x8xf32>
  return %y, %dw : tensor<2x4xf32>, tensor<2x8xf32>
}
