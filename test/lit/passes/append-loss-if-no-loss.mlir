// RUN: llmc-opt %s --llmc-append-loss=if-no-loss --split-input-file | FileCheck %s

// A model that already returns its loss is left as it is.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> (tensor<f32> {llmc.output = "loss"})
// CHECK-NOT: cross_entropy
// CHECK-NOT: targets
func.func @forward(%w: tensor<16xf32> {llmc.param = "w", llmc.init_rule = "zeros"})
    -> (tensor<f32> {llmc.output = "loss"}) {
  %0 = llmc.reduce_sum %w axes [0] : (tensor<16xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A model that returns logits gets the loss, as without the option.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: {llmc.input = "targets"})
// CHECK-SAME: -> (tensor<2x8x32xf32> {llmc.output = "logits"}, tensor<f32> {llmc.output = "loss"})
// CHECK: llmc.cross_entropy mean
func.func @forward(%w: tensor<16x32xf32> {llmc.param = "w", llmc.init_rule = "zeros"},
                   %x: tensor<2x8x16xf32> {llmc.input = "x"}) -> (tensor<2x8x32xf32> {llmc.output = "logits"}) {
  %0 = llmc.matmul %x, %w : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  return %0 : tensor<2x8x32xf32>
}
