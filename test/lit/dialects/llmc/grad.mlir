// RUN: llmc-opt %s | llmc-opt | FileCheck %s
// RUN: llmc-opt %s --mlir-print-op-generic | llmc-opt | FileCheck %s

// Round trip of the backward and optimizer ops (LlmcGradOps.td).

// CHECK-LABEL: func.func @norms
func.func @norms(%x: tensor<2x8x64xf32>, %dy: tensor<2x8x64xf32>, %w: tensor<64xf32>) {
  // CHECK: llmc.layer_norm_grad %{{.*}}, %{{.*}} weight %{{.*}} {bias_grad} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<64xf32>) -> (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>)
  %0:3 = llmc.layer_norm_grad %x, %dy weight %w {bias_grad} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<64xf32>) -> (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>)
  // Without weight, the bias gradient still has the normalized dims' shape.
  // CHECK: llmc.layer_norm_grad %{{.*}}, %{{.*}} {axis = 1 : i64, bias_grad} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<8x64xf32>)
  %1:2 = llmc.layer_norm_grad %x, %dy {axis = 1 : i64, bias_grad} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<8x64xf32>)
  // CHECK: llmc.layer_norm_grad %{{.*}}, %{{.*}} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %2 = llmc.layer_norm_grad %x, %dy : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  // CHECK: llmc.rms_norm_grad %{{.*}}, %{{.*}} weight %{{.*}} {epsilon = 1.000000e-05 : f64} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<64xf32>) -> (tensor<2x8x64xf32>, tensor<64xf32>)
  %3:2 = llmc.rms_norm_grad %x, %dy weight %w {epsilon = 1.0e-05 : f64} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<64xf32>) -> (tensor<2x8x64xf32>, tensor<64xf32>)
  return
}

// CHECK-LABEL: func.func @activations
func.func @activations(%x: tensor<4x16xbf16>, %dy: tensor<4x16xbf16>) {
  // CHECK: llmc.softmax_grad %{{.*}}, %{{.*}} {axis = 0 : i64} : tensor<4x16xbf16>
  %0 = llmc.softmax_grad %x, %dy {axis = 0 : i64} : tensor<4x16xbf16>
  // CHECK: llmc.log_softmax_grad %{{.*}}, %{{.*}} : tensor<4x16xbf16>
  %1 = llmc.log_softmax_grad %x, %dy : tensor<4x16xbf16>
  // CHECK: llmc.gelu_grad tanh %{{.*}}, %{{.*}} : tensor<4x16xbf16>
  %2 = llmc.gelu_grad tanh %x, %dy : tensor<4x16xbf16>
  // CHECK: llmc.gelu_grad erf %{{.*}}, %{{.*}} : tensor<4x16xbf16>
  %3 = llmc.gelu_grad erf %x, %dy : tensor<4x16xbf16>
  // CHECK: llmc.silu_grad %{{.*}}, %{{.*}} : tensor<4x16xbf16>
  %4 = llmc.silu_grad %x, %dy : tensor<4x16xbf16>
  return
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x8x16x32xbf16>, %k: tensor<2x2x16x32xbf16>, %v: tensor<2x2x16x32xbf16>,
                     %m: tensor<16x16xi1>) {
  // GQA: 8 query heads over 2 key/value heads; lse is f32 whatever q's type.
  // CHECK: llmc.attention_lse %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} {causal} : (tensor<2x8x16x32xbf16>, tensor<2x2x16x32xbf16>, tensor<2x2x16x32xbf16>, tensor<16x16xi1>) -> (tensor<2x8x16x32xbf16>, tensor<2x8x16xf32>)
  %o, %lse = llmc.attention_lse %q, %k, %v mask %m {causal} : (tensor<2x8x16x32xbf16>, tensor<2x2x16x32xbf16>, tensor<2x2x16x32xbf16>, tensor<16x16xi1>) -> (tensor<2x8x16x32xbf16>, tensor<2x8x16xf32>)
  // dk and dv have the key/value shapes (summed over each group).
  // CHECK: llmc.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} {causal, scale = 1.250000e-01 : f64} : (tensor<2x8x16x32xbf16>, tensor<2x2x16x32xbf16>, tensor<2x2x16x32xbf16>, tensor<2x8x16x32xbf16>, tensor<2x8x16xf32>, tensor<2x8x16x32xbf16>, tensor<16x16xi1>) -> (tensor<2x8x16x32xbf16>, tensor<2x2x16x32xbf16>, tensor<2x2x16x32xbf16>)
  %dq, %dk, %dv = llmc.attention_grad %q, %k, %v, %o, %lse, %o mask %m {causal, scale = 0.125 : f64} : (tensor<2x8x16x32xbf16>, tensor<2x2x16x32xbf16>, tensor<2x2x16x32xbf16>, tensor<2x8x16x32xbf16>, tensor<2x8x16xf32>, tensor<2x8x16x32xbf16>, tensor<16x16xi1>) -> (tensor<2x8x16x32xbf16>, tensor<2x2x16x32xbf16>, tensor<2x2x16x32xbf16>)
  return
}

// CHECK-LABEL: func.func @loss_and_indexing
func.func @loss_and_indexing(%logits: tensor<2x8x512xf32>, %t: tensor<2x8xi64>, %d: tensor<f32>,
                             %dn: tensor<2x8xf32>, %dy: tensor<2x8x64xf32>, %de: tensor<2x8x1xf32>,
                             %ti: tensor<2x8x1xi32>) {
  // CHECK: llmc.cross_entropy_grad mean %{{.*}}, %{{.*}}, %{{.*}} {ignore_index = 0 : i64} : (tensor<2x8x512xf32>, tensor<2x8xi64>, tensor<f32>) -> tensor<2x8x512xf32>
  %0 = llmc.cross_entropy_grad mean %logits, %t, %d {ignore_index = 0 : i64} : (tensor<2x8x512xf32>, tensor<2x8xi64>, tensor<f32>) -> tensor<2x8x512xf32>
  // CHECK: llmc.cross_entropy_grad none %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x8x512xf32>, tensor<2x8xi64>, tensor<2x8xf32>) -> tensor<2x8x512xf32>
  %1 = llmc.cross_entropy_grad none %logits, %t, %dn : (tensor<2x8x512xf32>, tensor<2x8xi64>, tensor<2x8xf32>) -> tensor<2x8x512xf32>
  // CHECK: llmc.gather_grad %{{.*}}, %{{.*}} axis 0 : (tensor<2x8x64xf32>, tensor<2x8xi64>) -> tensor<512x64xf32>
  %2 = llmc.gather_grad %dy, %t axis 0 : (tensor<2x8x64xf32>, tensor<2x8xi64>) -> tensor<512x64xf32>
  // CHECK: llmc.gather_elements_grad %{{.*}}, %{{.*}} axis 2 : (tensor<2x8x1xf32>, tensor<2x8x1xi32>) -> tensor<2x8x512xf32>
  %3 = llmc.gather_elements_grad %de, %ti axis 2 : (tensor<2x8x1xf32>, tensor<2x8x1xi32>) -> tensor<2x8x512xf32>
  // CHECK: llmc.slice_grad %{{.*}} starts [0, 0, 64] limits [2, 8, 192] strides [1, 1, 2] : (tensor<2x8x64xf32>) -> tensor<2x8x192xf32>
  %4 = llmc.slice_grad %dy starts [0, 0, 64] limits [2, 8, 192] strides [1, 1, 2] : (tensor<2x8x64xf32>) -> tensor<2x8x192xf32>
  return
}

// CHECK-LABEL: func.func @adamw
func.func @adamw(%p: tensor<64x32xbf16>, %g: tensor<64x32xbf16>, %m: tensor<64x32xbf16>, %v: tensor<64x32xbf16>,
                 %lr: tensor<f32>, %t: tensor<i64>) {
  // CHECK: llmc.adamw_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {beta2 = 0.94999999999999996 : f64, weight_decay = 1.000000e-01 : f64} : (tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<f32>, tensor<i64>) -> (tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>)
  %0:3 = llmc.adamw_update %p, %g, %m, %v, %lr, %t {beta2 = 0.95 : f64, weight_decay = 0.1 : f64} : (tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<f32>, tensor<i64>) -> (tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>)
  return
}

// CHECK-LABEL: func.func @multi_adamw
// CHECK-SAME: (%[[W:.+]]: tensor<8x4xf32>, %[[B:.+]]: tensor<4xf32>, %[[GW:.+]]: tensor<8x4xf32>, %[[GB:.+]]: tensor<4xf32>, %[[LR:.+]]: tensor<f32>, %[[T:.+]]: tensor<i64>, %[[C:.+]]: tensor<f32>)
func.func @multi_adamw(%w: tensor<8x4xf32>, %b: tensor<4xf32>, %gw: tensor<8x4xf32>, %gb: tensor<4xf32>,
                       %lr: tensor<f32>, %t: tensor<i64>, %c: tensor<f32>) {
  // CHECK: llmc.multi_adamw_update params(%[[W]], %[[B]]) grads(%[[GW]], %[[GB]]) m(%[[GW]], %[[GB]]) v(%[[W]], %[[B]]) lr(%[[LR]]) step(%[[T]]) scale(%[[C]])
  // CHECK-SAME: weight_decays = array<f64: 1.000000e-01, 0.000000e+00>
  %0:6 = llmc.multi_adamw_update params(%w, %b) grads(%gw, %gb) m(%gw, %gb) v(%w, %b) lr(%lr) step(%t) scale(%c) {beta2 = 0.95 : f64, weight_decays = array<f64: 0.1, 0.0>} : (tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32>, tensor<4xf32>)
  return
}

// Without a scale.
// CHECK-LABEL: func.func @multi_adamw_unscaled
func.func @multi_adamw_unscaled(%p: tensor<3xbf16>, %lr: tensor<f32>, %t: tensor<i64>) {
  // CHECK: llmc.multi_adamw_update params(%{{.*}}) grads(%{{.*}}) m(%{{.*}}) v(%{{.*}}) lr(%{{.*}}) step(%{{.*}}) {weight_decays = array<f64: 0.000000e+00>}
  %0:3 = llmc.multi_adamw_update params(%p) grads(%p) m(%p) v(%p) lr(%lr) step(%t) {weight_decays = array<f64: 0.0>} : (tensor<3xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<f32>, tensor<i64>) -> (tensor<3xbf16>, tensor<3xbf16>, tensor<3xbf16>)
  return
}

// CHECK-LABEL: func.func @global_norm
func.func @global_norm(%a: tensor<8x4xbf16>, %b: tensor<f32>, %c: tensor<2xf64>) {
  // CHECK: llmc.global_norm %{{.*}}, %{{.*}} : (tensor<8x4xbf16>, tensor<f32>) -> tensor<f32>
  %0 = llmc.global_norm %a, %b : (tensor<8x4xbf16>, tensor<f32>) -> tensor<f32>
  // CHECK: llmc.global_norm %{{.*}}, %{{.*}} : (tensor<f32>, tensor<2xf64>) -> tensor<f64>
  %1 = llmc.global_norm %b, %c : (tensor<f32>, tensor<2xf64>) -> tensor<f64>
  return
}

// Packed q, k, v (llmc-fold-qkv-slices): 2 query and 2 key/value heads of a
// [1, 4, 6, 8] packed tensor; lse and the output are the query window's, and
// attention_grad has one result, the packed gradient.
// CHECK-LABEL: func.func @attention_packed
// CHECK: llmc.attention_lse %arg0, %arg0, %arg0 {causal, qkv_heads = array<i64: 2, 2>, seq_major} : (tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x4xf32>)
// CHECK: llmc.attention_grad {{.*}} {causal, qkv_heads = array<i64: 2, 2>, seq_major} : {{.*}} -> tensor<1x4x6x8xf32>
func.func @attention_packed(%p: tensor<1x4x6x8xf32>, %dy: tensor<1x4x2x8xf32>) -> tensor<1x4x6x8xf32> {
  %o, %lse = llmc.attention_lse %p, %p, %p {causal, seq_major, qkv_heads = array<i64: 2, 2>} : (tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x4xf32>)
  %g = llmc.attention_grad %p, %p, %p, %o, %lse, %dy {causal, seq_major, qkv_heads = array<i64: 2, 2>} : (tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x4xf32>, tensor<1x4x2x8xf32>) -> tensor<1x4x6x8xf32>
  return %g : tensor<1x4x6x8xf32>
}
