// RUN: llmc-opt %s --llmc-append-loss | FileCheck %s

// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[T:[^:]+]]: tensor<2x8xi64> {llmc.input = "targets"})
// CHECK-SAME: -> (tensor<2x8x32xf32> {llmc.output = "logits"}, tensor<f32> {llmc.output = "loss"})
// CHECK: %[[L:.+]] = llmc.matmul
// CHECK: %[[LOSS:.+]] = llmc.cross_entropy mean %[[L]], %[[T]] :
// CHECK: return %[[L]], %[[LOSS]]
func.func @forward(%w: tensor<16x32xf32> {llmc.param = "w", llmc.init_rule = "zeros"},
                   %x: tensor<2x8x16xf32> {llmc.input = "x"}) -> (tensor<2x8x32xf32> {llmc.output = "logits"}) {
  %0 = llmc.matmul %x, %w : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  return %0 : tensor<2x8x32xf32>
}

