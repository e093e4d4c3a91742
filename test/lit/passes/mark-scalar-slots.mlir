// RUN: llmc-opt %s --llmc-form-kernels --llmc-fuse-epilogues --llmc-mark-scalar-slots --split-input-file | FileCheck %s

// The f32 rank-0 input lr, the i64 rank-0 state step and the f32 rank-0
// output loss become the slots lr, step and loss.
// CHECK-LABEL: func.func @slots
// CHECK-SAME:  %arg1: tensor<f32> {llmc.input = "lr", llmc.slot = "lr"}
// CHECK-SAME:  %arg2: tensor<i64> {llmc.slot = "step", llmc.state = "step"}
// CHECK-SAME:  -> (tensor<f32> {llmc.output = "loss", llmc.slot = "loss"}, tensor<8xf32>, tensor<i64>)
func.func @slots(%p: tensor<8xf32>, %lr: tensor<f32> {llmc.input = "lr"}, %t: tensor<i64> {llmc.state = "step"})
    -> (tensor<f32> {llmc.output = "loss"}, tensor<8xf32>, tensor<i64>) {
  %0 = llmc.mul %p, %lr : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %1 = llmc.reduce_sum %0 axes [0] : (tensor<8xf32>) -> tensor<f32>
  %one = llmc.constant dense<1> : tensor<i64>
  %2 = llmc.add %t, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  return %1, %0, %2 : tensor<f32>, tensor<8xf32>, tensor<i64>
}

// -----

// Negative: a matmul (a cuBLASLt call, which takes buffers) reads lr
// through a reshape, and writes the loss.
// CHECK-LABEL: func.func @matmul
// CHECK-NOT:   llmc.slot
func.func @matmul(%x: tensor<1x4xf32>, %lr: tensor<f32> {llmc.input = "lr"}) -> (tensor<1x1xf32>, tensor<f32> {llmc.output = "loss"}) {
  %0 = llmc.reshape %lr : tensor<f32> -> tensor<1x1xf32>
  %1 = llmc.matmul %0, %x : (tensor<1x1xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  %2 = llmc.reshape %x : tensor<1x4xf32> -> tensor<4x1xf32>
  %3 = llmc.matmul %1, %2 : (tensor<1x4xf32>, tensor<4x1xf32>) -> tensor<1x1xf32>
  %4 = llmc.reshape %3 : tensor<1x1xf32> -> tensor<f32>
  return %3, %4 : tensor<1x1xf32>, tensor<f32>
}

// -----

// Negative: lr of rank 1, a step of type i32, a loss that is not a group's
// result (an argument returned as it is).
// CHECK-LABEL: func.func @types
// CHECK-NOT:   llmc.slot
func.func @types(%lr: tensor<1xf32> {llmc.input = "lr"}, %t: tensor<i32> {llmc.state = "step"}, %l: tensor<f32>)
    -> (tensor<1xf32>, tensor<f32> {llmc.output = "loss"}) {
  %0 = llmc.neg %lr : tensor<1xf32>
  return %0, %l : tensor<1xf32>, tensor<f32>
}

// -----

// Each name once: the second lr stays a buffer.
// CHECK-LABEL: func.func @twice
// CHECK-SAME:  %arg0: tensor<f32> {llmc.input = "lr", llmc.slot = "lr"}
// CHECK-SAME:  %arg1: tensor<f32> {llmc.input = "lr"})
func.func @twice(%a: tensor<f32> {llmc.input = "lr"}, %b: tensor<f32> {llmc.input = "lr"}) -> tensor<f32> {
  %0 = llmc.add %a, %b : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
