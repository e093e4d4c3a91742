// RUN: llmc-opt %s --llmc-raise-silu --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @silu
// CHECK-SAME: (%[[X:.+]]: tensor<2x8xf32>)
// CHECK: %[[Y:.+]] = llmc.silu %[[X]] : tensor<2x8xf32>
// CHECK-NOT: llmc.sigmoid
// CHECK: return %[[Y]]
func.func @silu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %s = llmc.sigmoid %x : tensor<2x8xf32>
  %y = llmc.mul %x, %s : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// The dynamo form puts the sigmoid first.
// CHECK-LABEL: func.func @silu_commuted
// CHECK: llmc.silu %{{.*}} : tensor<2x8xf32>
// CHECK-NOT: llmc.mul
func.func @silu_commuted(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %s = llmc.sigmoid %x : tensor<2x8xf32>
  %y = llmc.mul %s, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Near miss: sigmoid of another value (x * sigmoid(1.702 x) is not silu).
// CHECK-LABEL: func.func @sigmoid_of_other
// CHECK-NOT: llmc.silu
// CHECK: llmc.mul
func.func @sigmoid_of_other(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %c = llmc.constant dense<1.702> : tensor<f32>
  %z = llmc.mul %x, %c : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %s = llmc.sigmoid %z : tensor<2x8xf32>
  %y = llmc.mul %x, %s : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Near miss: the sigmoid has another use.
// CHECK-LABEL: func.func @sigmoid_other_use
// CHECK-NOT: llmc.silu
func.func @sigmoid_other_use(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %s = llmc.sigmoid %x : tensor<2x8xf32>
  %y = llmc.mul %x, %s : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y, %s : tensor<2x8xf32>, tensor<2x8xf32>
}
