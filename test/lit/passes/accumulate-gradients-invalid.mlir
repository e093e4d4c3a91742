// RUN: llmc-opt %s --split-input-file --llmc-autodiff=keep-forward=false --llmc-accumulate-gradients --verify-diagnostics

// A loss that is not a cross entropy has no tokens to count.
// expected-error @+1 {{llmc-accumulate-gradients: the loss must be a mean llmc.cross_entropy, so that a window can count its tokens; it is 'llmc.reduce_sum'}}
func.func @forward(%x: tensor<2x4xf32> {llmc.input = "x"},
                   %w: tensor<4x8xf32> {llmc.param = "w"})
    -> (tensor<f32> {llmc.output = "loss"}) {
  %0 = llmc.matmul %x, %w : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %1 = llmc.reduce_sum %0 axes [0, 1] : (tensor<2x8xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// A summed cross entropy is not normalized by anything a window could count.
// expected-error @+1 {{llmc-accumulate-gradients: the loss must be a mean llmc.cross_entropy, so that a window can count its tokens; it is 'llmc.cross_entropy'}}
func.func @forward(%x: tensor<2x4xf32> {llmc.input = "x"},
                   %t: tensor<2xi64> {llmc.input = "targets"},
                   %w: tensor<4x8xf32> {llmc.param = "w"})
    -> (tensor<f32> {llmc.output = "loss"}) {
  %0 = llmc.matmul %x, %w : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %1 = llmc.cross_entropy sum %0, %t : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<f32>
  return %1 : tensor<f32>
}
