// RUN: llmc-opt %s --split-input-file --llmc-rematerialize=levels=1 | FileCheck %s --check-prefix=ONE
// RUN: llmc-opt %s --split-input-file --llmc-rematerialize=levels=2 | FileCheck %s --check-prefix=ALL
// RUN: llmc-opt %s --split-input-file --llmc-rematerialize | FileCheck %s --check-prefix=OFF

// The cheaper value per byte (the gelu: 128 bytes read and written and a
// launch, against the matmul's 512 bytes and a launch) is recomputed
// first, the matmul next; each copy
// goes right before its first backward reader (the gelu's before the
// earlier of its own and the matmul copy's), and the matmul's copy reads
// the gelu's copy. Forward readers keep the originals.
// Without a budget or levels the pass changes nothing.

// ONE: llmc.recompute = [{candidates = 2 : i64, func = "train_step", level = 1 : i64, levels = 2 : i64, modelled_ns = 2000 : i64, values = [{bytes = 128 : i64, class = 0 : i64, modelled_ns = 2000 : i64, op = "llmc.gelu", ops = 1 : i64, position = 1 : i64}]}]
// ONE-LABEL: func.func @train_step
// ONE-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>
// ONE: %[[H:.+]] = llmc.gelu tanh %[[X]] : tensor<4x8xf32>
// ONE: %[[Y:.+]] = llmc.matmul %[[H]], %{{.+}} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// ONE: llmc.gelu tanh %[[Y]]
// ONE: llmc.reduce_sum
// ONE: %[[RH:.+]] = llmc.gelu tanh %[[X]] {llmc.recomputed} : tensor<4x8xf32>
// ONE: %[[D1:.+]] = llmc.mul %[[RH]], %{{.+}}
// ONE: %[[DY:.+]] = llmc.gelu_grad tanh %[[Y]], %[[D1]]
// ONE: llmc.matmul %[[RH]], %[[DY]] {transpose_lhs}

// ALL: values = [{bytes = 128 : i64, class = 0 : i64, {{.*}}op = "llmc.gelu"{{.*}}}, {bytes = 128 : i64, class = 2 : i64, {{.*}}op = "llmc.matmul"
// ALL-LABEL: func.func @train_step
// ALL-SAME: (%[[X:[^:]+]]: tensor<4x8xf32> {llmc.input = "x"}, %[[W:[^:]+]]: tensor<8x8xf32>
// ALL: %[[RH:.+]] = llmc.gelu tanh %[[X]] {llmc.recomputed} : tensor<4x8xf32>
// ALL: %[[D1:.+]] = llmc.mul %[[RH]], %{{.+}}
// ALL: %[[RY:.+]] = llmc.matmul %[[RH]], %[[W]] {llmc.recomputed}
// ALL: %[[DY:.+]] = llmc.gelu_grad tanh %[[RY]], %[[D1]]
// ALL: llmc.matmul %[[RH]], %[[DY]] {transpose_lhs}

// OFF-LABEL: func.func @train_step
// OFF-NOT: llmc.recomputed
// OFF-NOT: llmc.recompute =
func.func @train_step(%x: tensor<4x8xf32> {llmc.input = "x"},
                      %w: tensor<8x8xf32> {llmc.param = "w"})
    -> (tensor<f32> {llmc.output = "loss"}, tensor<8x8xf32> {llmc.grad_of = "w"}) {
  %c = llmc.constant dense<1.0> : tensor<4x8xf32>
  %h = llmc.gelu tanh %x : tensor<4x8xf32>
  %y = llmc.matmul %h, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %z = llmc.gelu tanh %y : tensor<4x8xf32>
  %loss = llmc.reduce_sum %z axes [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  %d1 = llmc.mul %h, %c : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %dy = llmc.gelu_grad tanh %y, %d1 : tensor<4x8xf32>
  %dw = llmc.matmul %h, %dy {transpose_lhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  return %loss, %dw : tensor<f32>, tensor<8x8xf32>
}

// -----

// A recomputed dropout mask replays the same draws: the copy keeps the
// seed, the per-op offset and the step it reads. The mask's closure takes
// nothing else (the step is an argument).

// ONE-LABEL: func.func @train_step
// ONE-SAME: %[[STEP:[^:]+]]: tensor<i64> {llmc.state = "step"}
// ONE: llmc.dropout_mask %[[STEP]] {offset = 3 : i64, ratio = 1.000000e-01 : f64, seed = 7 : i64} : (tensor<i64>) -> tensor<4x8xf32>
// ONE: llmc.reduce_sum
// ONE: %[[RM:.+]] = llmc.dropout_mask %[[STEP]] {llmc.recomputed, offset = 3 : i64, ratio = 1.000000e-01 : f64, seed = 7 : i64} : (tensor<i64>) -> tensor<4x8xf32>
// ONE: llmc.mul %{{.+}}, %[[RM]]
// ALL-LABEL: func.func @train_step
// OFF-LABEL: func.func @train_step
func.func @train_step(%x: tensor<4x8xf32> {llmc.input = "x"},
                      %step: tensor<i64> {llmc.state = "step"})
    -> (tensor<f32> {llmc.output = "loss"}, tensor<4x8xf32> {llmc.grad_of = "x"}) {
  %c = llmc.constant dense<1.0> : tensor<4x8xf32>
  %m = llmc.dropout_mask %step {ratio = 0.1 : f64, seed = 7 : i64, offset = 3 : i64} : (tensor<i64>) -> tensor<4x8xf32>
  %y = llmc.mul %x, %m : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %loss = llmc.reduce_sum %y axes [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  %dx = llmc.mul %c, %m : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %loss, %dx : tensor<f32>, tensor<4x8xf32>
}

// -----

// Not candidates: a value the backward reads only before any other saved
// value (a copy would sit next to the original: here the logits, which
// only the loss gradient reads), a returned value, and functions without
// a loss. With every level forced, only the gelu is recomputed.

// ONE: llmc.recompute = [{candidates = 1 : i64, func = "logits"{{.*}}op = "llmc.gelu"{{.*}}}]}]} {
// ONE-LABEL: func.func @logits
// ONE: llmc.gelu tanh %{{.+}} {llmc.recomputed}
// ONE-NOT: llmc.recomputed
// ONE-LABEL: func.func @returned
// ONE-NOT: llmc.recomputed
// ONE-LABEL: func.func @no_loss
// ONE-NOT: llmc.recomputed
// ALL-LABEL: func.func @logits
// OFF-LABEL: func.func @logits
func.func @logits(%x: tensor<4x8xf32> {llmc.input = "x"},
                  %t: tensor<4xi64> {llmc.input = "targets"})
    -> (tensor<f32> {llmc.output = "loss"}, tensor<4x8xf32> {llmc.grad_of = "x"}) {
  %one = llmc.constant dense<1.0> : tensor<f32>
  %a = llmc.gelu tanh %x : tensor<4x8xf32>
  %h = llmc.mul %a, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %loss = llmc.cross_entropy mean %h, %t : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  %dh = llmc.cross_entropy_grad mean %h, %t, %one : (tensor<4x8xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x8xf32>
  %dx = llmc.mul %dh, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %loss, %dx : tensor<f32>, tensor<4x8xf32>
}

func.func @returned(%x: tensor<4x8xf32> {llmc.input = "x"})
    -> (tensor<f32> {llmc.output = "loss"}, tensor<4x8xf32> {llmc.grad_of = "x"}, tensor<4x8xf32> {llmc.output = "h"}) {
  %h = llmc.gelu tanh %x : tensor<4x8xf32>
  %loss = llmc.reduce_sum %h axes [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  %dx = llmc.gelu_grad tanh %x, %h : tensor<4x8xf32>
  return %loss, %dx, %h : tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32>
}

func.func @no_loss(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h = llmc.gelu tanh %x : tensor<4x8xf32>
  %y = llmc.mul %h, %h : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Gradient accumulation's @accumulate_step returns no `loss`: its loss is
// the micro-batch's sum added into the "accum.loss" state, and the forward
// is that sum's slice. The gelu is recomputed before the backward, as in a
// plain step; the running sums (state results) are not candidates. The
// apply step (@train_step: a loss from its inputs, no backward) is left
// alone.

// ONE: llmc.recompute = [{candidates = 1 : i64, func = "accumulate_step"{{.*}}op = "llmc.gelu"{{.*}}}]}]} {
// ONE-LABEL: func.func @accumulate_step
// ONE: %[[H:.+]] = llmc.gelu tanh %{{.+}} : tensor<4x8xf32>
// ONE: %[[S:.+]] = llmc.reduce_sum %[[H]]
// ONE: llmc.add %{{.+}}, %[[S]]
// ONE: %[[RH:.+]] = llmc.gelu tanh %{{.+}} {llmc.recomputed}
// ONE: llmc.gelu_grad tanh %{{.+}}, %[[RH]]
// ONE-LABEL: func.func @train_step
// ONE-NOT: llmc.recomputed
// ALL-LABEL: func.func @accumulate_step
// OFF-LABEL: func.func @accumulate_step
// OFF-NOT: llmc.recomputed
func.func @accumulate_step(%x: tensor<4x8xf32> {llmc.input = "x"},
                           %acc_g: tensor<4x8xf32> {llmc.state = "accum.grad", llmc.state_of = "x"},
                           %acc_l: tensor<f32> {llmc.state = "accum.loss"})
    -> (tensor<4x8xf32> {llmc.state = "accum.grad", llmc.state_of = "x", llmc.next = 1 : i64},
        tensor<f32> {llmc.state = "accum.loss", llmc.next = 2 : i64}) {
  %h = llmc.gelu tanh %x : tensor<4x8xf32>
  %sum = llmc.reduce_sum %h axes [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  %loss = llmc.add %acc_l, %sum : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %e = llmc.exp %x : tensor<4x8xf32>
  %dx = llmc.gelu_grad tanh %e, %h : tensor<4x8xf32>
  %g = llmc.add %acc_g, %dx : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %g, %loss : tensor<4x8xf32>, tensor<f32>
}

func.func @train_step(%acc_l: tensor<f32> {llmc.input = "accum.loss"},
                      %n: tensor<f32> {llmc.input = "accum.count"})
    -> (tensor<f32> {llmc.output = "loss"}) {
  %loss = llmc.div %acc_l, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %loss : tensor<f32>
}
