// RUN: llmc-opt %s --split-input-file --llmc-append-optimizer | FileCheck %s --check-prefix=ADAMW
// RUN: llmc-opt %s --split-input-file --llmc-append-optimizer="optimizer=sgd" | FileCheck %s --check-prefix=SGD

// Training-mode dropout draws its mask from the step counter: every
// llmc.dropout_mask without a step reads the optimizer's step state (its
// value before the increment), so a replay or a resumed run draws the same
// mask. SGD keeps no step of its own; one is added for the dropout.

// ADAMW-LABEL: func.func @train_step
// ADAMW-SAME: %[[STEP:[^:]+]]: tensor<i64> {llmc.init_rule = "zeros", llmc.state = "step"}
// ADAMW: llmc.dropout_mask %[[STEP]] {offset = 0 : i64, ratio = 1.000000e-01 : f64, seed = 0 : i64} : (tensor<i64>) -> tensor<4x8xf32>
// ADAMW: llmc.dropout_mask %[[STEP]] {offset = 1 : i64, ratio = 1.000000e-01 : f64, seed = 0 : i64} : (tensor<i64>) -> tensor<4x8xf32>
// ADAMW-NOT: llmc.state = "step"

// SGD-LABEL: func.func @train_step
// SGD-SAME: %[[STEP:[^:]+]]: tensor<i64> {llmc.init_rule = "zeros", llmc.state = "step"}
// SGD-SAME: tensor<i64> {llmc.next = 3 : i64, llmc.state = "step"}
// SGD: llmc.dropout_mask %[[STEP]] {offset = 0 : i64
// SGD: llmc.dropout_mask %[[STEP]] {offset = 1 : i64
// SGD: %[[NEXT:.+]] = llmc.add %[[STEP]], %{{.+}} : (tensor<i64>, tensor<i64>) -> tensor<i64>
// SGD: return {{.*}}, %[[NEXT]] :
func.func @train_step(%w: tensor<4x8xf32> {llmc.param = "w", llmc.init_rule = "zeros"},
                      %x: tensor<4x8xf32> {llmc.input = "x"})
    -> (tensor<f32> {llmc.output = "loss"}, tensor<4x8xf32> {llmc.grad_of = "w"}) {
  %m0 = llmc.dropout_mask {ratio = 0.1 : f64, seed = 0 : i64, offset = 0 : i64} : () -> tensor<4x8xf32>
  %m1 = llmc.dropout_mask {ratio = 0.1 : f64, seed = 0 : i64, offset = 1 : i64} : () -> tensor<4x8xf32>
  %y = llmc.mul %x, %m0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %z = llmc.mul %y, %m1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %loss = llmc.reduce_sum %z axes [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %loss, %z : tensor<f32>, tensor<4x8xf32>
}

// -----

// Without dropout, SGD adds no step.
// ADAMW-LABEL: func.func @train_step
// SGD-LABEL: func.func @train_step
// SGD-NOT: llmc.state = "step"
func.func @train_step(%w: tensor<4xf32> {llmc.param = "w", llmc.init_rule = "zeros"})
    -> (tensor<f32> {llmc.output = "loss"}, tensor<4xf32> {llmc.grad_of = "w"}) {
  %loss = llmc.reduce_sum %w axes [0] : (tensor<4xf32>) -> tensor<f32>
  return %loss, %w : tensor<f32>, tensor<4xf32>
}
