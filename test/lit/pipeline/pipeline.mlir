// RUN: llmc-opt %s --llmc-pipeline --split-input-file | FileCheck %s
// RUN: llmc-opt %s --llmc-pipeline="optimizer=sgd clip-norm=0 weight-decay=0" --split-input-file | FileCheck %s --check-prefix=SGD

// A model that outputs logits: the loss is appended, @forward is replaced by
// a full AdamW step (TrainConfig's defaults: beta2 0.95, weight decay 0.1 on
// matrices only, clipping at 1).
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: {llmc.input = "targets"}
// CHECK-SAME: %[[LR:[^:]+]]: tensor<f32> {llmc.input = "lr", llmc.slot = "lr"}
// CHECK-SAME: llmc.state = "step"
// CHECK-SAME: -> (tensor<f32> {llmc.output = "loss", llmc.slot = "loss"}, tensor<f32> {llmc.output = "grad_norm"}, tensor<16x32xf32> {llmc.next = 0 : i64}, tensor<32xf32> {llmc.next = 1 : i64}
// Every op that launches something is in a kernel group; the bias add rides
// in its matmul's (llmc-fuse-epilogues).
// CHECK: llmc.kernel -> (tensor<2x8x32xf32>) {
// CHECK-NEXT: llmc.matmul %arg2, %arg0
// CHECK-NEXT: llmc.add %{{.+}}, %arg1
// CHECK: llmc.cross_entropy mean
// CHECK: llmc.cross_entropy_grad mean
// Clipping is one global_norm; the updates are one multi-tensor update that
// reads the unclipped gradients and the clip coefficient (llmc-batch-adamw),
// and writes params, m, v and the step in place (llmc-mark-in-place).
// CHECK: llmc.global_norm %[[GW:.+]], %[[GB:.+]] : (tensor<16x32xf32>, tensor<32xf32>) -> tensor<f32>
// The coefficient min(1, 1 / (norm + eps)) is one fused elementwise group,
// and the step counter (written in place) a second segment of its kernel.
// CHECK: %[[COEF:.+]]:2 = llmc.kernel -> (tensor<f32>, tensor<i64>) attributes {in_place = array<i64: -1, 5>} {
// CHECK-NEXT: llmc.add
// CHECK-NEXT: llmc.div
// CHECK-NEXT: llmc.min
// CHECK-NEXT: llmc.add %arg5
// CHECK-NOT: llmc.mul
// CHECK: llmc.kernel -> ({{.*}}) attributes {in_place = array<i64: 0, 1, 6, 7, 8, 9>} {
// CHECK-NEXT: llmc.multi_adamw_update params(%arg0, %arg1) grads(%[[GW]], %[[GB]]) {{.*}} lr(%[[LR]]) step(%[[COEF]]#1) scale(%[[COEF]]#0) {beta2 = 0.9{{.*}} : f64, weight_decays = array<f64: 1.000000e-01, 0.000000e+00>}
// CHECK-NOT: llmc.adamw_update
// CHECK-NOT: func.func @forward
// SGD-LABEL: func.func @train_step
// SGD-SAME: -> (tensor<f32> {llmc.output = "loss", llmc.slot = "loss"}, tensor<16x32xf32> {llmc.next = 0 : i64}, tensor<32xf32> {llmc.next = 1 : i64})
// SGD-NOT: adamw_update
// SGD-NOT: llmc.global_norm
// SGD: llmc.sub %arg0
// SGD: llmc.sub %arg1
func.func @forward(%w: tensor<16x32xf32> {llmc.param = "w", llmc.init_rule = "normal(0.02)"},
                   %b: tensor<32xf32> {llmc.param = "b", llmc.init_rule = "zeros"},
                   %x: tensor<2x8x16xf32> {llmc.input = "x"}) -> (tensor<2x8x32xf32> {llmc.output = "logits"}) {
  %0 = llmc.matmul %x, %w : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %1 = llmc.add %0, %b : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  return %1 : tensor<2x8x32xf32>
}

// -----

// A model that returns its loss gets no second one.
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: "targets"
// CHECK-SAME: -> (tensor<f32> {llmc.output = "loss", llmc.slot = "loss"}, tensor<f32> {llmc.output = "grad_norm"}, tensor<8xf32> {llmc.next = 0 : i64}
// CHECK-NOT: llmc.cross_entropy
// CHECK: llmc.multi_adamw_update
// SGD-LABEL: func.func @train_step
// SGD-SAME: -> (tensor<f32> {llmc.output = "loss", llmc.slot = "loss"}, tensor<8xf32> {llmc.next = 0 : i64})
func.func @forward(%w: tensor<8xf32> {llmc.param = "w", llmc.init_rule = "ones"},
                   %x: tensor<8xf32> {llmc.input = "x"}) -> (tensor<f32> {llmc.output = "loss"}) {
  %0 = llmc.mul %w, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %1 = llmc.mul %0, %0 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %2 = llmc.reduce_mean %1 axes [0] : (tensor<8xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}
