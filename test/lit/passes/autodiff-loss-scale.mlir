// RUN: llmc-opt %s --split-input-file --llmc-autodiff="loss-scale=1024" | FileCheck %s
// RUN: llmc-opt %s --split-input-file --llmc-autodiff | FileCheck %s --check-prefix=NOSCALE

// loss-scale (fp16): the backward is seeded with the dynamic loss scale, a
// rank-0 f32 state argument starting at the option's value, instead of 1:
// that is multiplying the loss by the scale before the backward. The loss
// result itself is not scaled.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[SCALE:[^:]+]]: tensor<f32> {llmc.init = dense<1.024000e+03> : tensor<f32>, llmc.state = "amp.scale"})
// CHECK-SAME: -> (tensor<f32> {llmc.output = "loss"}, tensor<4x8xf32> {llmc.grad_of = "w"})
// CHECK: %[[L:.+]] = llmc.reduce_sum
// CHECK: %[[R:.+]] = llmc.reshape %[[SCALE]] : tensor<f32> -> tensor<1x1xf32>
// CHECK: %[[G:.+]] = llmc.broadcast_to %[[R]]
// CHECK: return %[[L]], %[[G]] :
// NOSCALE-LABEL: func.func @train_step
// NOSCALE-NOT: amp.scale
// NOSCALE: llmc.constant dense<1.000000e+00> : tensor<f32>
func.func @forward(%w: tensor<4x8xf32> {llmc.param = "w", llmc.init_rule = "zeros"})
    -> (tensor<f32> {llmc.output = "loss"}) {
  %l = llmc.reduce_sum %w axes [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An f16 loss gets the scale cast to f16 (under the policy the loss is f32;
// a hand-written graph may differ).
// CHECK-LABEL: func.func @train_step
// CHECK: %[[C:.+]] = llmc.cast %{{.+}} : tensor<f32> -> tensor<f16>
// CHECK: llmc.reshape %[[C]] : tensor<f16> -> tensor<1x1xf16>
func.func @forward(%w: tensor<4x8xf16> {llmc.param = "w", llmc.init_rule = "zeros"})
    -> (tensor<f16> {llmc.output = "loss"}) {
  %e = llmc.exp %w : tensor<4x8xf16>
  %l = llmc.reduce_sum %e axes [0, 1] : (tensor<4x8xf16>) -> tensor<f16>
  return %l : tensor<f16>
}
