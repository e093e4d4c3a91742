// RUN: llmc-opt %s --split-input-file --verify-diagnostics

// Every verifier error of the backward and optimizer ops. Type inference
// failures are followed by MLIR's generic "failed to infer returned types".
func.func @ln_axis(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) {
  // expected-error @+2 {{'llmc.layer_norm_grad' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.layer_norm_grad %x, %dy {axis = 2 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @ln_weight(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>, %w: tensor<4xf32>) {
  // expected-error @+2 {{'llmc.layer_norm_grad' op weight has shape [4] but the normalized dims are [8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = llmc.layer_norm_grad %x, %dy weight %w : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<4xf32>) -> (tensor<2x8xf32>, tensor<4xf32>)
  return
}

// -----

func.func @ln_weight_type(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>, %w: tensor<8xbf16>) {
  // expected-error @+2 {{'llmc.layer_norm_grad' op weight has element type 'bf16' but the input has 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = llmc.layer_norm_grad %x, %dy weight %w : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xbf16>) -> (tensor<2x8xf32>, tensor<8xbf16>)
  return
}

// -----

func.func @ln_grad(%x: tensor<2x8xf32>, %dy: tensor<2x4xf32>) {
  // expected-error @+2 {{'llmc.layer_norm_grad' op grad has type 'tensor<2x4xf32>' but input has type 'tensor<2x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.layer_norm_grad %x, %dy : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @ln_eps(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) {
  // expected-error @+2 {{'llmc.layer_norm_grad' op epsilon must not be negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.layer_norm_grad %x, %dy {epsilon = -1.0 : f64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @rms_axis(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) {
  // expected-error @+2 {{'llmc.rms_norm_grad' op axis -3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.rms_norm_grad %x, %dy {axis = -3 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @rms_grad(%x: tensor<2x8xf32>, %dy: tensor<2x8xbf16>) {
  // expected-error @+2 {{'llmc.rms_norm_grad' op grad has type 'tensor<2x8xbf16>' but input has type 'tensor<2x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.rms_norm_grad %x, %dy : (tensor<2x8xf32>, tensor<2x8xbf16>) -> tensor<2x8xf32>
  return
}

// -----

func.func @softmax_rank(%y: tensor<f32>) {
  // expected-error @+1 {{'llmc.softmax_grad' op needs an operand of rank 1 or more}}
  %0 = llmc.softmax_grad %y, %y : tensor<f32>
  return
}

// -----

func.func @softmax_axis(%y: tensor<2x8xf32>) {
  // expected-error @+1 {{'llmc.log_softmax_grad' op axis 2 is out of range for rank 2}}
  %0 = llmc.log_softmax_grad %y, %y {axis = 2 : i64} : tensor<2x8xf32>
  return
}

// -----

func.func @lse_rank(%q: tensor<2x8x16xf32>) {
  // expected-error @+2 {{'llmc.attention_lse' op query must be [batch, heads, seq, head_dim], got [2, 8, 16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = llmc.attention_lse %q, %q, %q : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @attn_grad_heads(%q: tensor<1x3x4x8xf32>, %k: tensor<1x2x4x8xf32>, %o: tensor<1x3x4x8xf32>, %lse: tensor<1x3x4xf32>) {
  // expected-error @+2 {{'llmc.attention_grad' op query heads (3) must be a multiple of key/value heads (2) for grouped-query attention}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = llmc.attention_grad %q, %k, %k, %o, %lse, %o : (tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x3x4x8xf32>, tensor<1x3x4xf32>, tensor<1x3x4x8xf32>) -> (tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attn_grad_out(%q: tensor<1x2x4x8xf32>, %o: tensor<1x2x4x4xf32>, %lse: tensor<1x2x4xf32>) {
  // expected-error @+2 {{'llmc.attention_grad' op grad has type 'tensor<1x2x4x4xf32>' but the attention result has type 'tensor<1x2x4x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = llmc.attention_grad %q, %q, %q, %o, %lse, %o : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attn_grad_lse(%q: tensor<1x2x4x8xf32>, %lse: tensor<1x2x8xf32>) {
  // expected-error @+2 {{'llmc.attention_grad' op lse has type 'tensor<1x2x8xf32>', expected 'tensor<1x2x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = llmc.attention_grad %q, %q, %q, %q, %lse, %q : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @ce_rank(%l: tensor<f32>, %t: tensor<i64>, %d: tensor<f32>) {
  // expected-error @+2 {{'llmc.cross_entropy_grad' op logits must be [..., classes]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.cross_entropy_grad mean %l, %t, %d : (tensor<f32>, tensor<i64>, tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @ce_targets(%l: tensor<2x8x16xf32>, %t: tensor<2x4xi64>, %d: tensor<f32>) {
  // expected-error @+2 {{'llmc.cross_entropy_grad' op targets [2, 4] must have the logits' shape without the class dim, [2, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.cross_entropy_grad mean %l, %t, %d : (tensor<2x8x16xf32>, tensor<2x4xi64>, tensor<f32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @ce_grad(%l: tensor<2x8x16xf32>, %t: tensor<2x8xi64>, %d: tensor<f32>) {
  // expected-error @+2 {{'llmc.cross_entropy_grad' op grad has type 'tensor<f32>' but the loss has type 'tensor<2x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.cross_entropy_grad none %l, %t, %d : (tensor<2x8x16xf32>, tensor<2x8xi64>, tensor<f32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @gather_type(%d: tensor<2x8x64xbf16>, %i: tensor<2x8xi64>) {
  // expected-error @+1 {{'llmc.gather_grad' op grad element type 'bf16' differs from the result's 'f32'}}
  %0 = llmc.gather_grad %d, %i axis 0 : (tensor<2x8x64xbf16>, tensor<2x8xi64>) -> tensor<512x64xf32>
  return
}

// -----

func.func @gather_axis(%d: tensor<2x8x64xf32>, %i: tensor<2x8xi64>) {
  // expected-error @+1 {{'llmc.gather_grad' op axis 2 is out of range for a result of rank 2}}
  %0 = llmc.gather_grad %d, %i axis 2 : (tensor<2x8x64xf32>, tensor<2x8xi64>) -> tensor<512x64xf32>
  return
}

// -----

func.func @gather_shape(%d: tensor<2x8x32xf32>, %i: tensor<2x8xi64>) {
  // expected-error @+1 {{'llmc.gather_grad' op grad has shape [2, 8, 32] but gathering [512, 64] at indices [2, 8] along axis 0 yields [2, 8, 64]}}
  %0 = llmc.gather_grad %d, %i axis 0 : (tensor<2x8x32xf32>, tensor<2x8xi64>) -> tensor<512x64xf32>
  return
}

// -----

func.func @ge_type(%d: tensor<4x1xbf16>, %i: tensor<4x1xi64>) {
  // expected-error @+1 {{'llmc.gather_elements_grad' op grad element type 'bf16' differs from the result's 'f32'}}
  %0 = llmc.gather_elements_grad %d, %i axis 1 : (tensor<4x1xbf16>, tensor<4x1xi64>) -> tensor<4x16xf32>
  return
}

// -----

func.func @ge_shape(%d: tensor<4x2xf32>, %i: tensor<4x1xi64>) {
  // expected-error @+1 {{'llmc.gather_elements_grad' op grad [4, 2] and indices [4, 1] must have one shape}}
  %0 = llmc.gather_elements_grad %d, %i axis 1 : (tensor<4x2xf32>, tensor<4x1xi64>) -> tensor<4x16xf32>
  return
}

// -----

func.func @ge_rank(%d: tensor<4xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{'llmc.gather_elements_grad' op indices have rank 1 but the result has rank 2}}
  %0 = llmc.gather_elements_grad %d, %i axis 0 : (tensor<4xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  return
}

// -----

func.func @ge_axis(%d: tensor<4x1xf32>, %i: tensor<4x1xi64>) {
  // expected-error @+1 {{'llmc.gather_elements_grad' op axis 2 is out of range for rank 2}}
  %0 = llmc.gather_elements_grad %d, %i axis 2 : (tensor<4x1xf32>, tensor<4x1xi64>) -> tensor<4x16xf32>
  return
}

// -----

func.func @ge_exceed(%d: tensor<8x1xf32>, %i: tensor<8x1xi64>) {
  // expected-error @+1 {{'llmc.gather_elements_grad' op indices [8, 1] exceed the result [4, 16] in dim 0}}
  %0 = llmc.gather_elements_grad %d, %i axis 1 : (tensor<8x1xf32>, tensor<8x1xi64>) -> tensor<4x16xf32>
  return
}

// -----

func.func @slice_type(%d: tensor<2x4xbf16>) {
  // expected-error @+1 {{'llmc.slice_grad' op grad element type 'bf16' differs from the result's 'f32'}}
  %0 = llmc.slice_grad %d starts [0, 0] limits [2, 4] strides [1, 1] : (tensor<2x4xbf16>) -> tensor<2x8xf32>
  return
}

// -----

func.func @slice_count(%d: tensor<2x4xf32>) {
  // expected-error @+1 {{'llmc.slice_grad' op needs one start, limit and stride per dim: result rank 2, got 1/2/2}}
  %0 = llmc.slice_grad %d starts [0] limits [2, 4] strides [1, 1] : (tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @slice_stride(%d: tensor<2x4xf32>) {
  // expected-error @+1 {{'llmc.slice_grad' op stride 0 in dim 1 must be at least 1}}
  %0 = llmc.slice_grad %d starts [0, 0] limits [2, 4] strides [1, 0] : (tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @slice_window(%d: tensor<2x4xf32>) {
  // expected-error @+1 {{'llmc.slice_grad' op window [6, 10) in dim 1 is outside the result [2, 8]}}
  %0 = llmc.slice_grad %d starts [0, 6] limits [2, 10] strides [1, 1] : (tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @slice_shape(%d: tensor<2x4xf32>) {
  // expected-error @+1 {{'llmc.slice_grad' op grad has shape [2, 4] but the window has shape [2, 8]}}
  %0 = llmc.slice_grad %d starts [0, 0] limits [2, 8] strides [1, 1] : (tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @adamw_type(%p: tensor<4xf32>, %m: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+2 {{'llmc.adamw_update' op m has type 'tensor<8xf32>' but param has type 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = llmc.adamw_update %p, %p, %m, %p, %lr, %t : (tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_beta(%p: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+2 {{'llmc.adamw_update' op beta2 = 1.000000e+00 must be in [0, 1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = llmc.adamw_update %p, %p, %p, %p, %lr, %t {beta2 = 1.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_eps(%p: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+2 {{'llmc.adamw_update' op epsilon must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = llmc.adamw_update %p, %p, %p, %p, %lr, %t {epsilon = 0.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @multi_adamw_count(%p: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'llmc.multi_adamw_update' op has 2 params but 1 grads}}
  %0:6 = llmc.multi_adamw_update params(%p, %p) grads(%p) m(%p, %p) v(%p, %p) lr(%lr) step(%t) {weight_decays = array<f64: 0.0, 0.0>} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @multi_adamw_decays(%p: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'llmc.multi_adamw_update' op has 1 params but 2 weight_decays}}
  %0:3 = llmc.multi_adamw_update params(%p) grads(%p) m(%p) v(%p) lr(%lr) step(%t) {weight_decays = array<f64: 0.0, 0.1>} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @multi_adamw_results(%p: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'llmc.multi_adamw_update' op has 2 results but needs 3 (new params, m, v)}}
  %0:2 = llmc.multi_adamw_update params(%p) grads(%p) m(%p) v(%p) lr(%lr) step(%t) {weight_decays = array<f64: 0.0>} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @multi_adamw_type(%p: tensor<4xf32>, %m: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'llmc.multi_adamw_update' op tensor 0: m has type 'tensor<8xf32>' but param has type 'tensor<4xf32>'}}
  %0:3 = llmc.multi_adamw_update params(%p) grads(%p) m(%m) v(%p) lr(%lr) step(%t) {weight_decays = array<f64: 0.0>} : (tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>)
  return
}

// -----

func.func @multi_adamw_element(%p: tensor<4xf32>, %q: tensor<4xbf16>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'llmc.multi_adamw_update' op param 1 has element type 'bf16' but param 0 has 'f32'; all tensors of one update share an element type}}
  %0:6 = llmc.multi_adamw_update params(%p, %q) grads(%p, %q) m(%p, %q) v(%p, %q) lr(%lr) step(%t) {weight_decays = array<f64: 0.0, 0.0>} : (tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>)
  return
}

// -----

func.func @multi_adamw_scale(%p: tensor<4xbf16>, %lr: tensor<f32>, %t: tensor<i64>, %c: tensor<f32>) {
  // expected-error @+1 {{'llmc.multi_adamw_update' op scale has element type 'f32' but the params have 'bf16'}}
  %0:3 = llmc.multi_adamw_update params(%p) grads(%p) m(%p) v(%p) lr(%lr) step(%t) scale(%c) {weight_decays = array<f64: 0.0>} : (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>)
  return
}

// -----

func.func @multi_adamw_wide_grad(%p: tensor<4xbf16>, %g: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // A grad may be narrower than its param (read widened), never wider.
  // expected-error @+1 {{'llmc.multi_adamw_update' op tensor 0: grad has type 'tensor<4xf32>' but param has type 'tensor<4xbf16>' (a grad may only be a narrower float of the param's shape)}}
  %0:3 = llmc.multi_adamw_update params(%p) grads(%g) m(%p) v(%p) lr(%lr) step(%t) {weight_decays = array<f64: 0.0>} : (tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>, tensor<4xbf16>, tensor<f32>, tensor<i64>) -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>)
  return
}

// -----

func.func @multi_adamw_narrow_grad_shape(%p: tensor<4xf32>, %g: tensor<8xbf16>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'llmc.multi_adamw_update' op tensor 0: grad has type 'tensor<8xbf16>' but param has type 'tensor<4xf32>' (a grad may only be a narrower float of the param's shape)}}
  %0:3 = llmc.multi_adamw_update params(%p) grads(%g) m(%p) v(%p) lr(%lr) step(%t) {weight_decays = array<f64: 0.0>} : (tensor<4xf32>, tensor<8xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @multi_adamw_beta(%p: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'llmc.multi_adamw_update' op beta1 = 1.000000e+00 must be in [0, 1)}}
  %0:3 = llmc.multi_adamw_update params(%p) grads(%p) m(%p) v(%p) lr(%lr) step(%t) {beta1 = 1.0 : f64, weight_decays = array<f64: 0.0>} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @multi_adamw_eps(%p: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'llmc.multi_adamw_update' op epsilon must be positive}}
  %0:3 = llmc.multi_adamw_update params(%p) grads(%p) m(%p) v(%p) lr(%lr) step(%t) {epsilon = 0.0 : f64, weight_decays = array<f64: 0.0>} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @multi_adamw_empty(%lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'llmc.multi_adamw_update' op needs at least one tensor}}
  llmc.multi_adamw_update params() grads() m() v() lr(%lr) step(%t) {weight_decays = array<f64>} : (tensor<f32>, tensor<i64>) -> ()
  return
}

// -----

func.func @global_norm_empty() {
  // expected-error @+1 {{'llmc.global_norm' op needs at least one input}}
  %0 = llmc.global_norm : () -> tensor<f32>
  return
}

// -----

func.func @global_norm_f64(%a: tensor<4xf64>) {
  // expected-error @+1 {{'llmc.global_norm' op result has element type 'f32' but must be f64 (an input is f64)}}
  %0 = llmc.global_norm %a : (tensor<4xf64>) -> tensor<f32>
  return
}

// -----

func.func @global_norm_f32(%a: tensor<4xbf16>) {
  // expected-error @+1 {{'llmc.global_norm' op result has element type 'f64' but must be f32}}
  %0 = llmc.global_norm %a : (tensor<4xbf16>) -> tensor<f64>
  return
}

// -----

func.func @global_norm_rank(%a: tensor<4xf32>) {
  // expected-error @+1 {{'llmc.global_norm' op result #0 must be 0D tensor of 32-bit float or 64-bit float values, but got 'tensor<1xf32>'}}
  %0 = llmc.global_norm %a : (tensor<4xf32>) -> tensor<1xf32>
  return
}

// -----

func.func @gather_grad_bound_zero(%g: tensor<3x4xf32>, %i: tensor<3xi64>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'llmc.gather_grad' op bound 0 must be in [1, 8] (the table's size along axis 0)}}
  %0 = llmc.gather_grad %g, %i axis 0 {bound = 0 : i64} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @cross_entropy_grad_classes_zero(%l: tensor<4x8xf32>, %t: tensor<4xi64>, %g: tensor<f32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'llmc.cross_entropy_grad' op classes 0 must be in [1, 8] (the logits' last dim)}}
  %0 = llmc.cross_entropy_grad mean %l, %t, %g {classes = 0 : i64} : (tensor<4x8xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// With qkv_heads the output and grad are [B, T, Hq, Dv] (the window of q),
// not the packed operand.
func.func @attn_grad_packed_output(%p: tensor<1x4x6x8xf32>, %lse: tensor<1x2x4xf32>) {
  // expected-error @+2 {{'llmc.attention_grad' op grad has type 'tensor<1x4x6x8xf32>' but the attention result has type 'tensor<1x4x2x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.attention_grad %p, %p, %p, %p, %lse, %p {seq_major, qkv_heads = array<i64: 2, 2>} : (tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x2x4xf32>, tensor<1x4x6x8xf32>) -> tensor<1x4x6x8xf32>
  return
}
