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

// -----

// MPNet: a learned relative-attention bias (an embedding of position
// buckets, [T, S, H] -> [1, H, T, S], expanded over the batch) added to the
// scaled scores, then HF's additive padding mask: the two terms sum to one
// mask operand, which has a gradient (the embedding is trained).
// CHECK-LABEL: func.func @mpnet_relative_bias
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x2x4x8xf32>, %[[K:[^:]+]]: tensor<2x2x4x8xf32>, %[[V:[^:]+]]: tensor<2x2x4x8xf32>
// CHECK-SAME: %[[PAD:[^:]+]]: tensor<2x1x1x4xf32>)
// CHECK: %[[BIAS:.+]] = llmc.broadcast_to %{{[^ ]+}} : tensor<1x2x4x4xf32> -> tensor<2x2x4x4xf32>
// CHECK: %[[M:.+]] = llmc.add %[[BIAS]], %[[PAD]] : (tensor<2x2x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x2x4x4xf32>
// CHECK: %[[O:.+]] = llmc.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] {llmc.eager}
// CHECK-NOT: llmc.softmax
// CHECK: return %[[O]]
func.func @mpnet_relative_bias(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>, %emb: tensor<32x2xf32> {llmc.param = "relative_attention_bias.weight"}, %pad: tensor<2x1x1x4xf32>) -> tensor<2x2x4x8xf32> {
  %buckets = llmc.constant dense<[[0, 17, 18, 19], [1, 0, 17, 18], [2, 1, 0, 17], [3, 2, 1, 0]]> : tensor<4x4xi64>
  %c = llmc.constant dense<2.82842708> : tensor<f32>
  %g = llmc.gather %emb, %buckets axis 0 : (tensor<32x2xf32>, tensor<4x4xi64>) -> tensor<4x4x2xf32>
  %gt = llmc.transpose %g [2, 0, 1] : (tensor<4x4x2xf32>) -> tensor<2x4x4xf32>
  %g4 = llmc.reshape %gt : tensor<2x4x4xf32> -> tensor<1x2x4x4xf32>
  %bias = llmc.broadcast_to %g4 : tensor<1x2x4x4xf32> -> tensor<2x2x4x4xf32>
  %kt = llmc.transpose %k [0, 1, 3, 2] : (tensor<2x2x4x8xf32>) -> tensor<2x2x8x4xf32>
  %qk = llmc.matmul %q, %kt : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %s = llmc.div %qk, %c : (tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %sb = llmc.add %s, %bias : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %sm = llmc.add %sb, %pad : (tensor<2x2x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x2x4x4xf32>
  %p = llmc.softmax %sm {axis = -1 : i64} : tensor<2x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}

// -----

// Not raised: the scores plus bias are also returned, so the sum of terms
// is not a chain the op could replace.
// CHECK-LABEL: func.func @mpnet_biased_scores_used
// CHECK-NOT: llmc.attention
func.func @mpnet_biased_scores_used(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>, %bias: tensor<2x2x4x4xf32>, %pad: tensor<2x1x1x4xf32>) -> (tensor<2x2x4x8xf32>, tensor<2x2x4x4xf32>) {
  %qk = llmc.matmul %q, %k {transpose_rhs} : (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x4xf32>
  %sb = llmc.add %qk, %bias : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %sm = llmc.add %sb, %pad : (tensor<2x2x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x2x4x4xf32>
  %p = llmc.softmax %sm {axis = -1 : i64} : tensor<2x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %o, %sb : tensor<2x2x4x8xf32>, tensor<2x2x4x4xf32>
}

// -----

// Not raised: two products of the scores' shape among the terms (which one
// is q @ k^T is ambiguous).
// CHECK-LABEL: func.func @two_products_in_the_sum
// CHECK-NOT: llmc.attention
func.func @two_products_in_the_sum(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>, %r: tensor<2x2x4x8xf32>, %pad: tensor<2x1x1x4xf32>) -> tensor<2x2x4x8xf32> {
  %qk = llmc.matmul %q, %k {transpose_rhs} : (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x4xf32>
  %qr = llmc.matmul %q, %r {transpose_rhs} : (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x4xf32>
  %sb = llmc.add %qk, %qr : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %sm = llmc.add %sb, %pad : (tensor<2x2x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x2x4x4xf32>
  %p = llmc.softmax %sm {axis = -1 : i64} : tensor<2x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}

// -----

// DeBERTa-v2's disentangled attention: heads flattened into the batch,
// k3^T divided by sqrt(D * 3), the content-to-position term (q3 times the
// projected relative embeddings, gathered by relative distance, divided by
// the same scale) added on the [B·H] side, then masked_fill(~m, finfo.min)
// on the [B, H] side with m from the inputs. The bias depends on q3 and a
// parameter, so the mask operand has a gradient. The filled keys are -inf:
// a row with every key filled (a padded query) gets 0 from the op, and
// PyTorch's uniform softmax of equal fills, mean(v), is added there.
// CHECK-LABEL: func.func @deberta_disentangled
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x2x4x8xf32>, %[[K:[^:]+]]: tensor<1x2x4x8xf32>, %[[V:[^:]+]]: tensor<1x2x4x8xf32>
// CHECK-SAME: %[[M:[^:]+]]: tensor<1x1x4x4xi1>)
// CHECK-DAG: %[[NINF:.+]] = llmc.constant dense<0xFF800000> : tensor<f32>
// CHECK-DAG: %[[NKEYS:.+]] = llmc.constant dense<4.000000e+00> : tensor<f32>
// CHECK: %[[NM:.+]] = llmc.compare eq, %[[M]]
// CHECK: %[[REL:.+]] = llmc.div
// CHECK: %[[R4:.+]] = llmc.reshape %[[REL]] : tensor<2x4x4xf32> -> tensor<1x2x4x4xf32>
// CHECK: %[[W:.+]] = llmc.where %[[NM]], %[[NINF]], %[[R4]] : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK: %[[NMF:.+]] = llmc.cast %[[NM]] : tensor<1x1x4x4xi1> -> tensor<1x1x4x4xf32>
// CHECK: %[[CNT:.+]] = llmc.reduce_sum %[[NMF]] axes [3] keepdims
// CHECK: %[[EMPTY:.+]] = llmc.compare eq, %[[CNT]], %[[NKEYS]]
// CHECK: %[[O:.+]] = llmc.attention %[[Q]], %[[K]], %[[V]] mask %[[W]] {llmc.eager, scale = 0.204124{{[0-9]+}} : f64}
// CHECK: %[[MEAN:.+]] = llmc.reduce_mean %[[V]] axes [2] keepdims : (tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
// CHECK: %[[U:.+]] = llmc.where %[[EMPTY]], %[[MEAN]], %{{[^ ]+}} : (tensor<1x1x4x1xi1>, tensor<1x2x1x8xf32>, tensor<f32>) -> tensor<1x2x4x8xf32>
// CHECK: %[[R:.+]] = llmc.add %[[O]], %[[U]]
// CHECK-NOT: llmc.softmax
// CHECK: return %[[R]]
func.func @deberta_disentangled(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %pos: tensor<2x8x8xf32> {llmc.param = "rel_embeddings"}, %m: tensor<1x1x4x4xi1>) -> tensor<1x2x4x8xf32> {
  %scale = llmc.constant dense<4.89897966> : tensor<f32>
  %min = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %false = llmc.constant dense<false> : tensor<i1>
  %idx = llmc.constant dense<[[[3, 4, 5, 6], [2, 3, 4, 5], [1, 2, 3, 4], [0, 1, 2, 3]]]> : tensor<1x4x4xi64>
  %nm = llmc.compare eq, %m, %false : (tensor<1x1x4x4xi1>, tensor<i1>) -> tensor<1x1x4x4xi1>
  %q3 = llmc.reshape %q : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %k3 = llmc.reshape %k : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %v3 = llmc.reshape %v : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %kt = llmc.transpose %k3 [0, 2, 1] : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %kts = llmc.div %kt, %scale : (tensor<2x8x4xf32>, tensor<f32>) -> tensor<2x8x4xf32>
  %qk = llmc.matmul %q3, %kts : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %c2p = llmc.matmul %q3, %pos {transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8xf32>
  %idxb = llmc.broadcast_to %idx : tensor<1x4x4xi64> -> tensor<2x4x4xi64>
  %c2pg = llmc.gather_elements %c2p, %idxb axis 2 : (tensor<2x4x8xf32>, tensor<2x4x4xi64>) -> tensor<2x4x4xf32>
  %rel = llmc.div %c2pg, %scale : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %s3 = llmc.add %qk, %rel : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s4 = llmc.reshape %s3 : tensor<2x4x4xf32> -> tensor<1x2x4x4xf32>
  %sf = llmc.where %nm, %min, %s4 : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %sf {axis = -1 : i64} : tensor<1x2x4x4xf32>
  %p3 = llmc.reshape %p : tensor<1x2x4x4xf32> -> tensor<2x4x4xf32>
  %o3 = llmc.matmul %p3, %v3 : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = llmc.reshape %o3 : tensor<2x4x8xf32> -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// DeBERTa-v2 without padding: the fill's condition is a constant that
// drops nothing, so the where goes and the bias alone is the mask.
// CHECK-LABEL: func.func @deberta_no_padding
// CHECK: %[[R4:.+]] = llmc.reshape %{{[^ ]+}} : tensor<2x4x4xf32> -> tensor<1x2x4x4xf32>
// CHECK: llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} mask %[[R4]] {llmc.eager, scale = 0.204124{{[0-9]+}} : f64}
// CHECK-NOT: llmc.where
func.func @deberta_no_padding(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %rel: tensor<2x4x4xf32>) -> tensor<1x2x4x8xf32> {
  %scale = llmc.constant dense<4.89897966> : tensor<f32>
  %min = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %nm = llmc.constant dense<false> : tensor<1x1x4x4xi1>
  %q3 = llmc.reshape %q : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %k3 = llmc.reshape %k : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %v3 = llmc.reshape %v : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %kt = llmc.transpose %k3 [0, 2, 1] : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %kts = llmc.div %kt, %scale : (tensor<2x8x4xf32>, tensor<f32>) -> tensor<2x8x4xf32>
  %qk = llmc.matmul %q3, %kts : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %s3 = llmc.add %qk, %rel : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s4 = llmc.reshape %s3 : tensor<2x4x4xf32> -> tensor<1x2x4x4xf32>
  %sf = llmc.where %nm, %min, %s4 : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %sf {axis = -1 : i64} : tensor<1x2x4x4xf32>
  %p3 = llmc.reshape %p : tensor<1x2x4x4xf32> -> tensor<2x4x4xf32>
  %o3 = llmc.matmul %p3, %v3 : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = llmc.reshape %o3 : tensor<2x4x8xf32> -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Not raised: masked_fill with a finite score (-10000) is not a mask that
// drops keys.
// CHECK-LABEL: func.func @deberta_finite_fill
// CHECK-NOT: llmc.attention
// CHECK: llmc.softmax
func.func @deberta_finite_fill(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %rel: tensor<2x4x4xf32>, %nm: tensor<1x1x4x4xi1>) -> tensor<1x2x4x8xf32> {
  %fill = llmc.constant dense<-10000.0> : tensor<f32>
  %q3 = llmc.reshape %q : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %k3 = llmc.reshape %k : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %v3 = llmc.reshape %v : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %qk = llmc.matmul %q3, %k3 {transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %s3 = llmc.add %qk, %rel : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s4 = llmc.reshape %s3 : tensor<2x4x4xf32> -> tensor<1x2x4x4xf32>
  %sf = llmc.where %nm, %fill, %s4 : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %sf {axis = -1 : i64} : tensor<1x2x4x4xf32>
  %p3 = llmc.reshape %p : tensor<1x2x4x4xf32> -> tensor<2x4x4xf32>
  %o3 = llmc.matmul %p3, %v3 : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = llmc.reshape %o3 : tensor<2x4x8xf32> -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A constant padding fill (key 3 of every row): an operand, and no row has
// every key filled, so nothing is added after the op.
// CHECK-LABEL: func.func @deberta_constant_key_padding
// CHECK: %[[W:.+]] = llmc.where %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} : (tensor<1x1x1x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x1x4xf32>
// CHECK: %[[O:.+]] = llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} mask %[[W]] {llmc.eager}
// CHECK-NOT: llmc.reduce_mean
// CHECK: return %[[O]]
func.func @deberta_constant_key_padding(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %scale = llmc.constant dense<2.82842708> : tensor<f32>
  %min = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %nm = llmc.constant dense<[[[[false, false, false, true]]]]> : tensor<1x1x1x4xi1>
  %q3 = llmc.reshape %q : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %k3 = llmc.reshape %k : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %v3 = llmc.reshape %v : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %kt = llmc.transpose %k3 [0, 2, 1] : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %kts = llmc.div %kt, %scale : (tensor<2x8x4xf32>, tensor<f32>) -> tensor<2x8x4xf32>
  %qk = llmc.matmul %q3, %kts : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %s4 = llmc.reshape %qk : tensor<2x4x4xf32> -> tensor<1x2x4x4xf32>
  %sf = llmc.where %nm, %min, %s4 : (tensor<1x1x1x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %sf {axis = -1 : i64} : tensor<1x2x4x4xf32>
  %p3 = llmc.reshape %p : tensor<1x2x4x4xf32> -> tensor<2x4x4xf32>
  %o3 = llmc.matmul %p3, %v3 : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = llmc.reshape %o3 : tensor<2x4x8xf32> -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}
