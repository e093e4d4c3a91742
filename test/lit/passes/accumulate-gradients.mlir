// RUN: llmc-opt %s --split-input-file --llmc-autodiff=keep-forward=false --llmc-accumulate-gradients | FileCheck %s
// RUN: not llmc-opt %s --split-input-file --llmc-autodiff=keep-forward=false --llmc-accumulate-gradients --llmc-accumulate-gradients 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not llmc-opt %s --split-input-file --llmc-autodiff=keep-forward=false --llmc-append-optimizer --llmc-accumulate-gradients 2>&1 | FileCheck %s --check-prefix=LATE
// RUN: not llmc-opt %s --split-input-file --llmc-accumulate-gradients 2>&1 | FileCheck %s --check-prefix=EARLY

// Once, after autodiff, before the optimizer.
// TWICE: error: llmc-accumulate-gradients: the module already has @accumulate_step; run the pass once
// LATE: error: llmc-accumulate-gradients: @train_step already has state (argument {{[0-9]+}}); run the pass before llmc-append-optimizer
// EARLY: error: llmc-accumulate-gradients: the module has no func.func @train_step; run llmc-autodiff first

// The step splits in two. @accumulate_step: the loss and its gradient op
// become sums, the accumulators are zero-initialized state whose next
// values add this micro-batch's sums and its count of non-ignored targets.
// CHECK-LABEL: func.func @accumulate_step
// CHECK-SAME: %[[T:[^:]+]]: tensor<2xi64> {llmc.input = "targets"}
// CHECK-SAME: %[[AW:[^:]+]]: tensor<4x8xf32> {llmc.init_rule = "zeros", llmc.state = "accum.grad", llmc.state_of = "w"}
// CHECK-SAME: %[[AB:[^:]+]]: tensor<8xf32> {llmc.init_rule = "zeros", llmc.state = "accum.grad", llmc.state_of = "b"}
// CHECK-SAME: %[[AL:[^:]+]]: tensor<f32> {llmc.init_rule = "zeros", llmc.state = "accum.loss"}
// CHECK-SAME: %[[AC:[^:]+]]: tensor<f32> {llmc.init_rule = "zeros", llmc.state = "accum.count"})
// CHECK-SAME: -> (tensor<4x8xf32> {llmc.next = 4 : i64, llmc.state = "accum.grad", llmc.state_of = "w"}, tensor<8xf32> {llmc.next = 5 : i64, llmc.state = "accum.grad", llmc.state_of = "b"}, tensor<f32> {llmc.next = 6 : i64, llmc.state = "accum.loss"}, tensor<f32> {llmc.next = 7 : i64, llmc.state = "accum.count"})
// CHECK: %[[SUM:.+]] = llmc.cross_entropy sum %{{.+}}, %[[T]] {ignore_index = 0 : i64}
// CHECK: llmc.cross_entropy_grad sum %{{.+}}, %[[T]], %{{.+}} {ignore_index = 0 : i64}
// CHECK-NOT: mean
// CHECK: %[[IGN:.+]] = llmc.constant dense<0> : tensor<i64>
// CHECK: %[[VALID:.+]] = llmc.compare ne, %[[T]], %[[IGN]]
// CHECK: %[[ONES:.+]] = llmc.cast %[[VALID]] : tensor<2xi1> -> tensor<2xf32>
// CHECK: %[[N:.+]] = llmc.reduce_sum %[[ONES]] axes [0] : (tensor<2xf32>) -> tensor<f32>
// CHECK: %[[NW:.+]] = llmc.add %[[AW]], %{{.+}} : (tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: %[[NB:.+]] = llmc.add %[[AB]], %{{.+}} : (tensor<8xf32>, tensor<8xf32>)
// CHECK: %[[NL:.+]] = llmc.add %[[AL]], %[[SUM]]
// CHECK: %[[NC:.+]] = llmc.add %[[AC]], %[[N]]
// CHECK: return %[[NW]], %[[NB]], %[[NL]], %[[NC]]

// The apply step: parameters and accumulators in, the window's loss and
// gradients out, each divided by the tokens the window counted.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[W:[^:]+]]: tensor<4x8xf32> {llmc.param = "w"}, %{{[^:]+}}: tensor<8xf32> {llmc.param = "b"}
// CHECK-SAME: %[[GW:[^:]+]]: tensor<4x8xf32> {llmc.input = "accum.grad:w"}
// CHECK-SAME: %[[GB:[^:]+]]: tensor<8xf32> {llmc.input = "accum.grad:b"}
// CHECK-SAME: %[[L:[^:]+]]: tensor<f32> {llmc.input = "accum.loss"}
// CHECK-SAME: %[[C:[^:]+]]: tensor<f32> {llmc.input = "accum.count"})
// CHECK-SAME: -> (tensor<f32> {llmc.output = "loss"}, tensor<4x8xf32> {llmc.grad_of = "w"}, tensor<8xf32> {llmc.grad_of = "b"})
// CHECK-NEXT: %[[LOSS:.+]] = llmc.div %[[L]], %[[C]]
// CHECK-NEXT: %[[DW:.+]] = llmc.div %[[GW]], %[[C]]
// CHECK-NEXT: %[[DB:.+]] = llmc.div %[[GB]], %[[C]]
// CHECK-NEXT: return %[[LOSS]], %[[DW]], %[[DB]]
module {
  func.func @forward(%x: tensor<2x4xf32> {llmc.input = "x"},
                     %t: tensor<2xi64> {llmc.input = "targets"},
                     %w: tensor<4x8xf32> {llmc.param = "w"},
                     %b: tensor<8xf32> {llmc.param = "b"})
      -> (tensor<f32> {llmc.output = "loss"}) {
    %0 = llmc.matmul %x, %w : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
    %1 = llmc.add %0, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %2 = llmc.cross_entropy mean %1, %t {ignore_index = 0} : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// A frozen parameter and an input stay out of the apply step's gradients;
// the frozen one is still a parameter argument (the optimizer skips it).
// CHECK-LABEL: func.func @accumulate_step
// CHECK-SAME: llmc.state = "accum.grad", llmc.state_of = "w"
// CHECK-NOT: llmc.state_of = "e"
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: {llmc.frozen, llmc.param = "e"}
// CHECK-SAME: {llmc.input = "accum.grad:w"}
// CHECK-NOT: accum.grad:e
// CHECK-SAME: -> (tensor<f32> {llmc.output = "loss"}, tensor<4x8xf32> {llmc.grad_of = "w"})
module {
  func.func @forward(%x: tensor<2x4xf32> {llmc.input = "x"},
                     %t: tensor<2xi64> {llmc.input = "targets"},
                     %w: tensor<4x8xf32> {llmc.param = "w"},
                     %e: tensor<8xf32> {llmc.param = "e", llmc.frozen})
      -> (tensor<f32> {llmc.output = "loss"}) {
    %0 = llmc.matmul %x, %w : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
    %1 = llmc.add %0, %e : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %2 = llmc.cross_entropy mean %1, %t : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
