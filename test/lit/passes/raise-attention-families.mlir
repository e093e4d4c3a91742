// RUN: llmc-opt %s --llmc-raise-attention --split-input-file | FileCheck %s

// GPT-Neo's global layer: unscaled scores (scale 1), a where mask from its
// causal `bias` buffer, then the additive [B, 1, T, S] causal mask of HF's
// mask utilities. The two are one causal mask. Eager code (no SDPA
// decomposition): marked `llmc.eager`.
// CHECK-LABEL: func.func @gpt_neo_global
// CHECK-SAME: (%[[Q:.+]]: tensor<2x2x4x8xf32>, %[[K:.+]]: tensor<2x2x4x8xf32>, %[[V:.+]]: tensor<2x2x4x8xf32>)
// CHECK: %[[O:.+]] = llmc.attention %[[Q]], %[[K]], %[[V]] {causal, llmc.eager, scale = 1.000000e+00 : f64}
// CHECK-NOT: llmc.softmax
// CHECK-NOT: llmc.where
// CHECK: return %[[O]]
func.func @gpt_neo_global(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32> {
  %min = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %keep = llmc.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %mask = llmc.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0]]], [[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<2x1x4x4xf32>
  %kt = llmc.transpose %k [0, 1, 3, 2] : (tensor<2x2x4x8xf32>) -> tensor<2x2x8x4xf32>
  %sc = llmc.matmul %q, %kt : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %w = llmc.where %keep, %sc, %min : (tensor<1x1x4x4xi1>, tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %m = llmc.add %w, %mask : (tensor<2x2x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = llmc.softmax %m {axis = 3 : i64} : tensor<2x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}

// -----

// GPT-Neo's local layer: the where mask is a band (window 2: key s kept
// for t - 2 < s <= t), the additive one causal. Their combination is no
// causal mask, so the op takes where(band, mask, fill) as its operand.
// CHECK-LABEL: func.func @gpt_neo_local_window
// CHECK-DAG: %[[MIN:.+]] = llmc.constant dense<-3.40282347E+38> : tensor<f32>
// CHECK-DAG: %[[BAND:.+]] = llmc.constant dense<{{.*}}> : tensor<1x1x4x4xi1>
// CHECK-DAG: %[[CAUSAL:.+]] = llmc.constant dense<{{.*}}> : tensor<1x1x4x4xf32>
// CHECK: %[[M:.+]] = llmc.where %[[BAND]], %[[CAUSAL]], %[[MIN]]
// CHECK: llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} mask %[[M]] {llmc.eager, scale = 1.000000e+00 : f64}
// CHECK-NOT: llmc.softmax
func.func @gpt_neo_local_window(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %min = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %band = llmc.constant dense<[[[[true, false, false, false], [true, true, false, false], [false, true, true, false], [false, false, true, true]]]]> : tensor<1x1x4x4xi1>
  %mask = llmc.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %kt = llmc.transpose %k [0, 1, 3, 2] : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %sc = llmc.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %w = llmc.where %band, %sc, %min : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m = llmc.add %w, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A where mask and a padding mask from the inputs: not constant, so the
// operand is where(c, mask, fill), computed in the step.
// CHECK-LABEL: func.func @where_then_input_mask
// CHECK-SAME: %[[PAD:[^:]+]]: tensor<2x1x1x4xf32>
// CHECK: %[[M:.+]] = llmc.where %{{[^ ]+}}, %[[PAD]], %{{[^ ]+}} : (tensor<1x1x4x4xi1>, tensor<2x1x1x4xf32>, tensor<f32>) -> tensor<2x1x4x4xf32>
// CHECK: llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} mask %[[M]] {llmc.eager, scale = 1.000000e+00 : f64}
func.func @where_then_input_mask(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>, %pad: tensor<2x1x1x4xf32>) -> tensor<2x2x4x8xf32> {
  %min = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %keep = llmc.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %kt = llmc.transpose %k [0, 1, 3, 2] : (tensor<2x2x4x8xf32>) -> tensor<2x2x8x4xf32>
  %sc = llmc.matmul %q, %kt : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %w = llmc.where %keep, %sc, %min : (tensor<1x1x4x4xi1>, tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %m = llmc.add %w, %pad : (tensor<2x2x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x2x4x4xf32>
  %p = llmc.softmax %m {axis = 3 : i64} : tensor<2x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}

// -----

// Not raised: the where fills with a finite score (-10000), which is not a
// mask but a value the softmax sees.
// CHECK-LABEL: func.func @where_finite_fill_then_mask
// CHECK-NOT: llmc.attention
// CHECK: llmc.softmax
func.func @where_finite_fill_then_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %pad: tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xf32> {
  %fill = llmc.constant dense<-10000.0> : tensor<f32>
  %keep = llmc.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %kt = llmc.transpose %k [0, 1, 3, 2] : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %sc = llmc.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %w = llmc.where %keep, %sc, %fill : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m = llmc.add %w, %pad : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Falcon, multi-query: k and v have one head, which the batched matmuls
// broadcast over the 4 query heads; SDPA's decomposition (sqrt(scale) on q
// and on k^T, dynamo's reshape/transpose/reshape k^T): Hkv = 1, not eager.
// CHECK-LABEL: func.func @falcon_multi_query
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x4x8xf32>, %[[K:.+]]: tensor<2x1x4x8xf32>, %[[V:.+]]: tensor<2x1x4x8xf32>)
// CHECK: %[[O:.+]] = llmc.attention %[[Q]], %[[K]], %[[V]] {causal} : (tensor<2x4x4x8xf32>, tensor<2x1x4x8xf32>, tensor<2x1x4x8xf32>) -> tensor<2x4x4x8xf32>
// CHECK-NOT: llmc.softmax
// CHECK: return %[[O]]
func.func @falcon_multi_query(%q: tensor<2x4x4x8xf32>, %k: tensor<2x1x4x8xf32>, %v: tensor<2x1x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %s = llmc.constant dense<0.594603539> : tensor<1xf32>
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %mask = llmc.constant dense<[[[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %k3 = llmc.reshape %k : tensor<2x1x4x8xf32> -> tensor<2x4x8xf32>
  %kt3 = llmc.transpose %k3 [0, 2, 1] : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %kt = llmc.reshape %kt3 : tensor<2x8x4xf32> -> tensor<2x1x8x4xf32>
  %qs = llmc.mul %q, %s : (tensor<2x4x4x8xf32>, tensor<1xf32>) -> tensor<2x4x4x8xf32>
  %ks = llmc.mul %kt, %s : (tensor<2x1x8x4xf32>, tensor<1xf32>) -> tensor<2x1x8x4xf32>
  %sc = llmc.matmul %qs, %ks : (tensor<2x4x4x8xf32>, tensor<2x1x8x4xf32>) -> tensor<2x4x4x4xf32>
  %m = llmc.add %sc, %mask : (tensor<2x4x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<2x4x4x4xf32>
  %p = llmc.softmax %m {axis = -1 : i64} : tensor<2x4x4x4xf32>
  %nan = llmc.isnan %p : tensor<2x4x4x4xf32> -> tensor<2x4x4x4xi1>
  %pg = llmc.where %nan, %zero, %p : (tensor<2x4x4x4xi1>, tensor<f32>, tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %o = llmc.matmul %pg, %v : (tensor<2x4x4x4xf32>, tensor<2x1x4x8xf32>) -> tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// -----

// Not raised: k with one head but v with all four (no attention form).
// CHECK-LABEL: func.func @one_kv_head_k_only
// CHECK-NOT: llmc.attention
func.func @one_kv_head_k_only(%q: tensor<1x4x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %kt = llmc.transpose %k [0, 1, 3, 2] : (tensor<1x1x4x8xf32>) -> tensor<1x1x8x4xf32>
  %sc = llmc.matmul %q, %kt : (tensor<1x4x4x8xf32>, tensor<1x1x8x4xf32>) -> tensor<1x4x4x4xf32>
  %p = llmc.softmax %sc {axis = -1 : i64} : tensor<1x4x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<1x4x4x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %o : tensor<1x4x4x8xf32>
}

// -----

// Bloom: heads flattened into the batch ([B·H, T, D]), ALiBi added on that
// side ([B·H, 1, S]) with baddbmm's alpha as the scale, the causal mask on
// the [B, H] side. The op takes the [B, H] tensors and the float mask
// reshape(alibi) + mask; one scale on the scores: eager.
// CHECK-LABEL: func.func @bloom_alibi
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x4x8xf32>, %[[K:.+]]: tensor<1x2x4x8xf32>, %[[V:.+]]: tensor<1x2x4x8xf32>, %[[ALIBI:.+]]: tensor<2x1x4xf32>)
// CHECK: %[[A4:.+]] = llmc.reshape %[[ALIBI]] : tensor<2x1x4xf32> -> tensor<1x2x1x4xf32>
// CHECK: %[[M:.+]] = llmc.add %[[A4]], %{{[^ ]+}} : (tensor<1x2x1x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK: %[[O:.+]] = llmc.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] {llmc.eager, scale = 2.500000e-01 : f64}
// CHECK-NOT: llmc.softmax
// CHECK-NOT: llmc.matmul
// CHECK: return %[[O]]
func.func @bloom_alibi(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %alibi: tensor<2x1x4xf32>) -> tensor<1x2x4x8xf32> {
  %alpha = llmc.constant dense<0.25> : tensor<f32>
  %mask = llmc.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %q3 = llmc.reshape %q : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %k3 = llmc.reshape %k : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %v3 = llmc.reshape %v : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %qk = llmc.matmul %q3, %k3 {transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %s = llmc.mul %qk, %alpha : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %b = llmc.add %s, %alibi : (tensor<2x4x4xf32>, tensor<2x1x4xf32>) -> tensor<2x4x4xf32>
  %s4 = llmc.reshape %b : tensor<2x4x4xf32> -> tensor<1x2x4x4xf32>
  %m = llmc.add %s4, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %p3 = llmc.reshape %p : tensor<1x2x4x4xf32> -> tensor<2x4x4xf32>
  %o3 = llmc.matmul %p3, %v3 : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = llmc.reshape %o3 : tensor<2x4x8xf32> -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// The flattened form without a bias and with a causal mask: causal.
// CHECK-LABEL: func.func @flat_heads_causal
// CHECK: llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} {causal, llmc.eager}
func.func @flat_heads_causal(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %c = llmc.constant dense<0.353553385> : tensor<f32>
  %mask = llmc.constant dense<[[[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %q3 = llmc.reshape %q : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %k3 = llmc.reshape %k : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %v3 = llmc.reshape %v : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %kt = llmc.transpose %k3 [0, 2, 1] : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %qk = llmc.matmul %q3, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %s = llmc.mul %qk, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %s4 = llmc.reshape %s : tensor<2x4x4xf32> -> tensor<1x2x4x4xf32>
  %m = llmc.add %s4, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %m {axis = -1 : i64} : tensor<1x2x4x4xf32>
  %p3 = llmc.reshape %p : tensor<1x2x4x4xf32> -> tensor<2x4x4xf32>
  %o3 = llmc.matmul %p3, %v3 : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = llmc.reshape %o3 : tensor<2x4x8xf32> -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Not raised: the probabilities are also returned (the chain has other
// uses), so the flattened form stays decomposed.
// CHECK-LABEL: func.func @flat_heads_probabilities_used
// CHECK-NOT: llmc.attention
func.func @flat_heads_probabilities_used(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %q3 = llmc.reshape %q : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %k3 = llmc.reshape %k : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %v3 = llmc.reshape %v : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %qk = llmc.matmul %q3, %k3 {transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %s4 = llmc.reshape %qk : tensor<2x4x4xf32> -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %s4 {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %p3 = llmc.reshape %p : tensor<1x2x4x4xf32> -> tensor<2x4x4xf32>
  %o3 = llmc.matmul %p3, %v3 : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = llmc.reshape %o3 : tensor<2x4x8xf32> -> tensor<1x2x4x8xf32>
  return %o, %p : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}
