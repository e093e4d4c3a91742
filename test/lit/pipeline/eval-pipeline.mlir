// RUN: llmc-opt %s --llmc-eval-pipeline --split-input-file | FileCheck %s

// A model that outputs logits: the loss is appended as for training, and
// @forward stays what it is, with no backward ops, no optimizer and no
// @train_step: what an eval plan (`llmc compile --eval`) lowers, in its
// kernel groups (the bias add rides in the matmul's).
// CHECK-LABEL: func.func @forward
// CHECK-SAME: {llmc.input = "targets"}
// CHECK-SAME: -> (tensor<2x8x32xf32> {llmc.output = "logits"}, tensor<f32> {llmc.output = "loss", llmc.slot = "loss"})
// CHECK: llmc.kernel -> (tensor<2x8x32xf32>) {
// CHECK-NEXT: llmc.matmul
// CHECK-NEXT: llmc.add
// CHECK: llmc.cross_entropy mean
// CHECK-NOT: _grad
// CHECK-NOT: adamw_update
// CHECK-NOT: func.func @train_step
func.func @forward(%w: tensor<16x32xf32> {llmc.param = "w", llmc.init_rule = "normal(0.02)"},
                   %b: tensor<32xf32> {llmc.param = "b", llmc.init_rule = "zeros"},
                   %x: tensor<2x8x16xf32> {llmc.input = "x"}) -> (tensor<2x8x32xf32> {llmc.output = "logits"}) {
  %0 = llmc.matmul %x, %w : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %1 = llmc.add %0, %b : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  return %1 : tensor<2x8x32xf32>
}

// -----

// A model with a loss keeps its signature (no targets input is added); the
// cleanup folds what the export left (x * 1).
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %{{.*}}: tensor<4xf32> {llmc.input = "x"}) -> (tensor<f32> {llmc.output = "loss", llmc.slot = "loss"})
// CHECK-NOT: llmc.constant
// CHECK: llmc.mul
// CHECK-NOT: llmc.mul
// CHECK: llmc.reduce_sum
func.func @forward(%w: tensor<4xf32> {llmc.param = "w", llmc.init_rule = "ones"},
                   %x: tensor<4xf32> {llmc.input = "x"}) -> (tensor<f32> {llmc.output = "loss"}) {
  %one = llmc.constant dense<1.0> : tensor<4xf32>
  %0 = llmc.mul %x, %one : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = llmc.mul %w, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = llmc.reduce_sum %1 axes [0] : (tensor<4xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}
