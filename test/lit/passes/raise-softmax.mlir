// RUN: llmc-opt %s --llmc-raise-softmax --split-input-file | FileCheck %s

// exp(x - max) / sum(exp(x - max)) over the last axis (axis -1, the default,
// does not print).
// CHECK-LABEL: func.func @softmax_last
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x16x16xf32>)
// CHECK: %[[Y:.+]] = llmc.softmax %[[X]] : tensor<2x4x16x16xf32>
// CHECK-NOT: llmc.exp
// CHECK: return %[[Y]]
func.func @softmax_last(%x: tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> {
  %m = llmc.reduce_max %x axes [3] keepdims : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x1xf32>
  %z = llmc.sub %x, %m : (tensor<2x4x16x16xf32>, tensor<2x4x16x1xf32>) -> tensor<2x4x16x16xf32>
  %e = llmc.exp %z : tensor<2x4x16x16xf32>
  %s = llmc.reduce_sum %e axes [3] keepdims : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x1xf32>
  %y = llmc.div %e, %s : (tensor<2x4x16x16xf32>, tensor<2x4x16x1xf32>) -> tensor<2x4x16x16xf32>
  return %y : tensor<2x4x16x16xf32>
}

// -----

// Without the max, multiplied by the reciprocal, over axis 0.
// CHECK-LABEL: func.func @softmax_axis0_reciprocal
// CHECK: llmc.softmax %{{[^ ]+}} {axis = 0 : i64} : tensor<8x4xf32>
func.func @softmax_axis0_reciprocal(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %e = llmc.exp %x : tensor<8x4xf32>
  %s = llmc.reduce_sum %e axes [0] keepdims : (tensor<8x4xf32>) -> tensor<1x4xf32>
  %r = llmc.reciprocal %s : tensor<1x4xf32>
  %y = llmc.mul %r, %e : (tensor<1x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// log_softmax: (x - max) - log(sum(exp(x - max))).
// CHECK-LABEL: func.func @log_softmax
// CHECK-SAME: (%[[X:.+]]: tensor<30x512xf32>)
// CHECK: %[[Y:.+]] = llmc.log_softmax %[[X]] : tensor<30x512xf32>
// CHECK-NOT: llmc.log %
// CHECK: return %[[Y]]
func.func @log_softmax(%x: tensor<30x512xf32>) -> tensor<30x512xf32> {
  %m = llmc.reduce_max %x axes [1] keepdims : (tensor<30x512xf32>) -> tensor<30x1xf32>
  %z = llmc.sub %x, %m : (tensor<30x512xf32>, tensor<30x1xf32>) -> tensor<30x512xf32>
  %e = llmc.exp %z : tensor<30x512xf32>
  %s = llmc.reduce_sum %e axes [1] keepdims : (tensor<30x512xf32>) -> tensor<30x1xf32>
  %l = llmc.log %s : tensor<30x1xf32>
  %y = llmc.sub %z, %l : (tensor<30x512xf32>, tensor<30x1xf32>) -> tensor<30x512xf32>
  return %y : tensor<30x512xf32>
}

// -----

// Near miss: the sum is over another axis than the division broadcasts.
// CHECK-LABEL: func.func @sum_wrong_axis
// CHECK-NOT: llmc.softmax
func.func @sum_wrong_axis(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %m = llmc.reduce_max %x axes [1] keepdims : (tensor<8x4xf32>) -> tensor<8x1xf32>
  %z = llmc.sub %x, %m : (tensor<8x4xf32>, tensor<8x1xf32>) -> tensor<8x4xf32>
  %e = llmc.exp %z : tensor<8x4xf32>
  %s = llmc.reduce_sum %e axes [0, 1] keepdims : (tensor<8x4xf32>) -> tensor<1x1xf32>
  %y = llmc.div %e, %s : (tensor<8x4xf32>, tensor<1x1xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// Near miss: the max is over axis 0 but the sum over axis 1. The max is
// then a plain part of x - max, and softmax(x - max0) is what remains.
// CHECK-LABEL: func.func @max_other_axis
// CHECK: %[[Z:.+]] = llmc.sub
// CHECK: llmc.softmax %[[Z]] : tensor<8x4xf32>
func.func @max_other_axis(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %m = llmc.reduce_max %x axes [0] keepdims : (tensor<8x4xf32>) -> tensor<1x4xf32>
  %z = llmc.sub %x, %m : (tensor<8x4xf32>, tensor<1x4xf32>) -> tensor<8x4xf32>
  %e = llmc.exp %z : tensor<8x4xf32>
  %s = llmc.reduce_sum %e axes [1] keepdims : (tensor<8x4xf32>) -> tensor<8x1xf32>
  %y = llmc.div %e, %s : (tensor<8x4xf32>, tensor<8x1xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// Near miss: exp(x) is also returned.
// CHECK-LABEL: func.func @exp_other_use
// CHECK-NOT: llmc.softmax
func.func @exp_other_use(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %e = llmc.exp %x : tensor<8x4xf32>
  %s = llmc.reduce_sum %e axes [1] keepdims : (tensor<8x4xf32>) -> tensor<8x1xf32>
  %y = llmc.div %e, %s : (tensor<8x4xf32>, tensor<8x1xf32>) -> tensor<8x4xf32>
  return %y, %e : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Near miss: the numerator is exp of another tensor.
// CHECK-LABEL: func.func @normalized_by_other
// CHECK-NOT: llmc.softmax
func.func @normalized_by_other(%x: tensor<8x4xf32>, %w: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %e = llmc.exp %x : tensor<8x4xf32>
  %f = llmc.exp %w : tensor<8x4xf32>
  %s = llmc.reduce_sum %f axes [1] keepdims : (tensor<8x4xf32>) -> tensor<8x1xf32>
  %y = llmc.div %e, %s : (tensor<8x4xf32>, tensor<8x1xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}
