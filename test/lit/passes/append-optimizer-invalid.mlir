// RUN: llmc-opt %s --split-input-file --llmc-append-optimizer --verify-diagnostics
// RUN: not llmc-opt %s --split-input-file --llmc-append-optimizer="optimizer=lion" 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// UNKNOWN: error: llmc-append-optimizer: unknown optimizer 'lion'; use adamw or sgd

// expected-error @+1 {{llmc-append-optimizer: the module has no func.func @train_step; run llmc-autodiff first}}
module {
  func.func @forward(%w: tensor<f32> {llmc.param = "w", llmc.init_rule = "zeros"}) -> (tensor<f32> {llmc.output = "loss"}) {
    return %w : tensor<f32>
  }
}

// -----

// expected-error @+1 {{llmc-append-optimizer: @train_step result 1 is not a gradient (no llmc.grad_of); expected (loss, grads...) from llmc-autodiff}}
func.func @train_step(%w: tensor<f32> {llmc.param = "w", llmc.init_rule = "zeros"}) -> (tensor<f32> {llmc.output = "loss"}, tensor<f32>) {
  return %w, %w : tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{llmc-append-optimizer: result 1 is the gradient of 'v', which is not a parameter of @train_step}}
func.func @train_step(%w: tensor<f32> {llmc.param = "w", llmc.init_rule = "zeros"}) -> (tensor<f32> {llmc.output = "loss"}, tensor<f32> {llmc.grad_of = "v"}) {
  return %w, %w : tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{llmc-append-optimizer: @train_step already has optimizer state; run the pass once}}
func.func @train_step(%w: tensor<f32> {llmc.param = "w", llmc.init_rule = "zeros"},
                      %s: tensor<i64> {llmc.state = "step", llmc.init_rule = "zeros"}) -> (tensor<f32> {llmc.output = "loss"}, tensor<f32> {llmc.grad_of = "w"}) {
  return %w, %w : tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{llmc-append-optimizer: result 1 (the gradient of 'w') has type 'tensor<4xf32>' but the parameter has type 'tensor<f32>'}}
func.func @train_step(%w: tensor<f32> {llmc.param = "w", llmc.init_rule = "zeros"}, %x: tensor<4xf32> {llmc.input = "x"}) -> (tensor<f32> {llmc.output = "loss"}, tensor<4xf32> {llmc.grad_of = "w"}) {
  return %w, %x : tensor<f32>, tensor<4xf32>
}
