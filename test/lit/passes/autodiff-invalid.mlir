// RUN: llmc-opt %s --split-input-file --llmc-autodiff --verify-diagnostics

// Every error of llmc-autodiff. An op without a gradient rule on the path
// from a parameter to the loss is an error naming it, never a zero.

func.func @forward(%w: tensor<4x8xf32> {llmc.param = "w", llmc.init_rule = "zeros"},
                   %x: tensor<4x8xf32> {llmc.input = "x"}) -> (tensor<f32> {llmc.output = "loss"}) {
  // Backward ops have no rule (no double backward).
  // expected-error @+1 {{'llmc.silu_grad' has no gradient rule; the loss depends on a trainable parameter through it (mark the parameter llmc.frozen, or give the op a DifferentiableOpInterface rule)}}
  %0 = llmc.silu_grad %x, %w : tensor<4x8xf32>
  %1 = llmc.reduce_sum %0 axes [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// The same op on inputs only is fine: nothing needs its gradient.
func.func @forward(%w: tensor<4x8xf32> {llmc.param = "w", llmc.init_rule = "zeros"},
                   %x: tensor<4x8xf32> {llmc.input = "x"}) -> (tensor<f32> {llmc.output = "loss"}) {
  %0 = llmc.silu_grad %x, %x : tensor<4x8xf32>
  %1 = llmc.mul %0, %w : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = llmc.reduce_sum %1 axes [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// A trained mask (a relative-position bias) gets dS in the [B, H, T, S]
// layout; seq_major attention (set after autodiff) is refused.
func.func @forward(%q: tensor<1x4x2x8xf32> {llmc.param = "q", llmc.init_rule = "zeros"},
                   %m: tensor<4x4xf32> {llmc.param = "bias", llmc.init_rule = "zeros"}) -> (tensor<f32> {llmc.output = "loss"}) {
  // expected-error @+1 {{'llmc.attention' op gradient with respect to the attention mask is not supported with seq_major; the mask must not depend on a trainable parameter (mark it llmc.frozen)}}
  %0 = llmc.attention %q, %q, %q mask %m {seq_major} : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<4x4xf32>) -> tensor<1x4x2x8xf32>
  %1 = llmc.reduce_sum %0 axes [0, 1, 2, 3] : (tensor<1x4x2x8xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// expected-error @+1 {{llmc-autodiff: the module has no func.func @forward; autodiff differentiates @forward (docs/model-ir.md)}}
module {
  func.func @model(%w: tensor<f32>) -> tensor<f32> {
    return %w : tensor<f32>
  }
}

// -----

// expected-error @+1 {{llmc-autodiff: the module already has a @train_step; run autodiff once}}
module {
  func.func @forward(%w: tensor<f32> {llmc.param = "w", llmc.init_rule = "zeros"}) -> (tensor<f32> {llmc.output = "loss"}) {
    return %w : tensor<f32>
  }
  func.func @train_step(%w: tensor<f32>) -> tensor<f32> {
    return %w : tensor<f32>
  }
}

// -----

// expected-error @+2 {{llmc-autodiff: argument 1 has dynamic shape 'tensor<?x8xi64>'; specialize shapes first (--shape NAME=VALUE)}}
func.func @forward(%w: tensor<16x4xf32> {llmc.param = "w", llmc.init_rule = "zeros"},
                   %idx: tensor<?x8xi64> {llmc.input = "idx"}) -> (tensor<f32> {llmc.output = "loss"}) {
  %0 = llmc.gather %w, %idx axis 0 : (tensor<16x4xf32>, tensor<?x8xi64>) -> tensor<?x8x4xf32>
  %1 = llmc.reduce_sum %0 axes [0, 1, 2] : (tensor<?x8x4xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// expected-error @+1 {{llmc-autodiff: @forward has no rank-0 float result to use as the loss; append one (--llmc-append-loss) or name it with --loss}}
func.func @forward(%w: tensor<4x8xf32> {llmc.param = "w", llmc.init_rule = "zeros"}) -> (tensor<4x8xf32> {llmc.output = "logits"}) {
  return %w : tensor<4x8xf32>
}

// -----

// expected-warning @+1 {{llmc-autodiff: the loss does not depend on any trainable parameter; every gradient is zero}}
func.func @forward(%w: tensor<4xf32> {llmc.param = "w", llmc.frozen, llmc.init_rule = "zeros"},
                   %v: tensor<4xf32> {llmc.param = "v", llmc.init_rule = "zeros"}) -> (tensor<f32> {llmc.output = "loss"}) {
  %0 = llmc.reduce_sum %w axes [0] : (tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @forward(%w: tensor<4x8xf32> {llmc.param = "w", llmc.init_rule = "zeros"}) -> (tensor<f32> {llmc.output = "loss"}) {
  // expected-error @+1 {{llmc-autodiff: result type 'tensor<?x8xf32>' is dynamic; specialize shapes first (--shape NAME=VALUE)}}
  %0 = llmc.reshape %w : tensor<4x8xf32> -> tensor<?x8xf32>
  %1 = llmc.reduce_sum %0 axes [0, 1] : (tensor<?x8xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// expected-error @+1 {{llmc-autodiff: argument 0 has type 'f32'; model arguments are ranked tensors (docs/model-ir.md)}}
func.func @forward(%s: f32, %w: tensor<f32> {llmc.param = "w", llmc.init_rule = "zeros"}) -> (tensor<f32> {llmc.output = "loss"}) {
  return %w : tensor<f32>
}
