// RUN: llmc-opt %s --llmc-autodiff="loss=aux keep-forward=false" | FileCheck %s --check-prefix=AUX
// RUN: llmc-opt %s --llmc-autodiff="loss=loss" | FileCheck %s --check-prefix=LOSS
// RUN: not llmc-opt %s --llmc-autodiff 2>&1 | FileCheck %s --check-prefix=AMBIGUOUS
// RUN: not llmc-opt %s --llmc-autodiff="loss=logits" 2>&1 | FileCheck %s --check-prefix=NOTSCALAR
// RUN: not llmc-opt %s --llmc-autodiff="loss=nope" 2>&1 | FileCheck %s --check-prefix=MISSING

// --loss picks the output to differentiate; --keep-forward=false drops
// @forward. Other outputs are not results of @train_step, and the ops only
// they need are gone.

// AUX-NOT: func.func @forward
// AUX-LABEL: func.func @train_step
// AUX-SAME: -> (tensor<f32> {llmc.output = "aux"}, tensor<4x8xf32> {llmc.grad_of = "w"})
// AUX-NOT: llmc.exp
// AUX: %[[G:.+]] = llmc.broadcast_to %{{.+}} : tensor<1x1xf32> -> tensor<4x8xf32>
// AUX: return %{{.+}}, %[[G]] :

// LOSS-LABEL: func.func @forward
// LOSS-LABEL: func.func @train_step
// LOSS-SAME: -> (tensor<f32> {llmc.output = "loss"}, tensor<4x8xf32> {llmc.grad_of = "w"})
// LOSS: %[[E:.+]] = llmc.exp %arg0
// LOSS: %[[G:.+]] = llmc.mul %{{.+}}, %[[E]]
// LOSS: return %{{.+}}, %[[G]] :

// AMBIGUOUS: error: llmc-autodiff: @forward has 2 rank-0 float results; name the loss with --loss
// NOTSCALAR: error: llmc-autodiff: the loss 'logits' has type 'tensor<4x8xf32>'; it must be a rank-0 float tensor
// MISSING: error: llmc-autodiff: @forward has no result named 'nope' (llmc.output)

func.func @forward(%w: tensor<4x8xf32> {llmc.param = "w", llmc.init_rule = "zeros"})
    -> (tensor<f32> {llmc.output = "loss"}, tensor<f32> {llmc.output = "aux"},
        tensor<4x8xf32> {llmc.output = "logits"}) {
  %0 = llmc.exp %w : tensor<4x8xf32>
  %1 = llmc.reduce_sum %0 axes [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  %2 = llmc.reduce_sum %w axes [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %1, %2, %w : tensor<f32>, tensor<f32>, tensor<4x8xf32>
}
