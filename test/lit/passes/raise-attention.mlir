// RUN: llmc-opt %s --llmc-raise-attention --split-input-file | FileCheck %s

// The dynamo SDPA decomposition (nanoGPT, HF GPT-2): sqrt(scale) on q and
// on k^T, k^T as reshape/transpose/reshape, a constant causal mask and the
// isnan guard. B 1, H 2, T = S = 4, D 8: the scale is the default.
// CHECK-LABEL: func.func @dynamo_sdpa_causal
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x4x8xf32>, %[[K:.+]]: tensor<1x2x4x8xf32>, %[[V:.+]]: tensor<1x2x4x8xf32>)
// CHECK: %[[O:.+]] = llmc.attention %[[Q]], %[[K]], %[[V]] {causal} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NOT: llmc.softmax
// CHECK: return %[[O]]
func.func @dynamo_sdpa_causal(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %s = llmc.constant dense<0.594603539> : tensor<f32>
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %mask = llmc.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %k3 = llmc.reshape %k : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %kt3 = llmc.transpose %k3 [0, 2, 1] : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %kt = llmc.reshape %kt3 : tensor<2x8x4xf32> -> tensor<1x2x8x4xf32>
  %qs = llmc.mul %q, %s : (tensor<1x2x4x8xf32>, tensor<f32>) -> tensor<1x2x4x8xf32>
  %ks = llmc.mul %kt, %s : (tensor<1x2x8x4xf32>, tensor<f32>) -> tensor<1x2x8x4xf32>
  %sc = llmc.matmul %qs, %ks : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %m = llmc.add %sc, %mask : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %m {axis = -1 : i64} : tensor<1x2x4x4xf32>
  %nan = llmc.isnan %p : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xi1>
  %pg = llmc.where %nan, %zero, %p : (tensor<1x2x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = llmc.matmul %pg, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// The causal mask as the importer emits it when it does not fold:
// where(iota_s - iota_t <= 0, 0, -inf), broadcast over the batch.
// CHECK-LABEL: func.func @causal_from_iota
// CHECK: llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} {causal}
// CHECK-NOT: llmc.iota
func.func @causal_from_iota(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %s = llmc.constant dense<0.594603539> : tensor<f32>
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %ninf = llmc.constant dense<0xFF800000> : tensor<f32>
  %izero = llmc.constant dense<0> : tensor<i64>
  %rows = llmc.iota dim 0 : tensor<4x4xi64>
  %cols = llmc.iota dim 1 : tensor<4x4xi64>
  %diff = llmc.sub %cols, %rows : (tensor<4x4xi64>, tensor<4x4xi64>) -> tensor<4x4xi64>
  %keep = llmc.compare le, %diff, %izero : (tensor<4x4xi64>, tensor<i64>) -> tensor<4x4xi1>
  %mask2 = llmc.where %keep, %zero, %ninf : (tensor<4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<4x4xf32>
  %mask = llmc.broadcast_to %mask2 : tensor<4x4xf32> -> tensor<1x1x4x4xf32>
  %kt = llmc.transpose %k [0, 1, 3, 2] : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %qs = llmc.mul %q, %s : (tensor<1x2x4x8xf32>, tensor<f32>) -> tensor<1x2x4x8xf32>
  %ks = llmc.mul %kt, %s : (tensor<1x2x8x4xf32>, tensor<f32>) -> tensor<1x2x8x4xf32>
  %sc = llmc.matmul %qs, %ks : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %m = llmc.add %mask, %sc : (tensor<1x1x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %m {axis = -1 : i64} : tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// HF BERT (TorchScript): k^T = transpose(k_bshd, [0, 2, 3, 1]), an additive
// padding mask from the inputs, the scale 1/8 on the scores (not the
// default 1/sqrt(8)), no guard.
// CHECK-LABEL: func.func @bert_padding_mask
// CHECK-SAME: (%[[Q:.+]]: tensor<2x2x4x8xf32>, %[[KB:.+]]: tensor<2x4x2x8xf32>, %[[V:.+]]: tensor<2x2x4x8xf32>, %[[MASK:.+]]: tensor<2x1x1x4xf32>)
// CHECK: %[[K:.+]] = llmc.transpose %[[KB]] [0, 2, 1, 3]
// CHECK: llmc.attention %[[Q]], %[[K]], %[[V]] mask %[[MASK]] {llmc.eager, scale = 1.250000e-01 : f64}
// CHECK-NOT: llmc.softmax
func.func @bert_padding_mask(%q: tensor<2x2x4x8xf32>, %kb: tensor<2x4x2x8xf32>, %v: tensor<2x2x4x8xf32>, %mask: tensor<2x1x1x4xf32>) -> tensor<2x2x4x8xf32> {
  %c = llmc.constant dense<8.0> : tensor<f32>
  %kt = llmc.transpose %kb [0, 2, 3, 1] : (tensor<2x4x2x8xf32>) -> tensor<2x2x8x4xf32>
  %sc = llmc.matmul %q, %kt : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %sd = llmc.div %sc, %c : (tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %m = llmc.add %sd, %mask : (tensor<2x2x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x2x4x4xf32>
  %p = llmc.softmax %m {axis = 3 : i64} : tensor<2x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}

// -----

// HF Llama, dynamo: grouped-query attention. k and v have 2 heads and are
// repeated to 4 by repeat_kv (reshape, broadcast_to, reshape); the causal
// mask is [B, 1, T, S]. The raised op reads the un-repeated k and v.
// CHECK-LABEL: func.func @llama_gqa
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x4x8xf32>, %[[K:.+]]: tensor<1x2x4x8xf32>, %[[V:.+]]: tensor<1x2x4x8xf32>)
// CHECK: %[[O:.+]] = llmc.attention %[[Q]], %[[K]], %[[V]] {causal} : (tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NOT: llmc.broadcast_to
// CHECK: return %[[O]]
func.func @llama_gqa(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %s = llmc.constant dense<0.594603539> : tensor<f32>
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %mask = llmc.constant dense<[[[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %k5 = llmc.reshape %k : tensor<1x2x4x8xf32> -> tensor<1x2x1x4x8xf32>
  %kb = llmc.broadcast_to %k5 : tensor<1x2x1x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %kr = llmc.reshape %kb : tensor<1x2x2x4x8xf32> -> tensor<4x4x8xf32>
  %kt3 = llmc.transpose %kr [0, 2, 1] : (tensor<4x4x8xf32>) -> tensor<4x8x4xf32>
  %kt = llmc.reshape %kt3 : tensor<4x8x4xf32> -> tensor<1x4x8x4xf32>
  %v5 = llmc.reshape %v : tensor<1x2x4x8xf32> -> tensor<1x2x1x4x8xf32>
  %vb = llmc.broadcast_to %v5 : tensor<1x2x1x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %vr = llmc.reshape %vb : tensor<1x2x2x4x8xf32> -> tensor<1x4x4x8xf32>
  %qs = llmc.mul %q, %s : (tensor<1x4x4x8xf32>, tensor<f32>) -> tensor<1x4x4x8xf32>
  %ks = llmc.mul %kt, %s : (tensor<1x4x8x4xf32>, tensor<f32>) -> tensor<1x4x8x4xf32>
  %sc = llmc.matmul %qs, %ks : (tensor<1x4x4x8xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x4x4xf32>
  %m = llmc.add %sc, %mask : (tensor<1x4x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x4x4x4xf32>
  %p = llmc.softmax %m {axis = -1 : i64} : tensor<1x4x4x4xf32>
  %nan = llmc.isnan %p : tensor<1x4x4x4xf32> -> tensor<1x4x4x4xi1>
  %pg = llmc.where %nan, %zero, %p : (tensor<1x4x4x4xi1>, tensor<f32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %o = llmc.matmul %pg, %vr : (tensor<1x4x4x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %o : tensor<1x4x4x8xf32>
}

// -----

// HF Llama, TorchScript: repeat_kv then transpose(k, [0, 1, 3, 2]).
// CHECK-LABEL: func.func @llama_gqa_torchscript
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x4x8xf32>, %[[K:.+]]: tensor<1x2x4x8xf32>, %[[V:.+]]: tensor<1x2x4x8xf32>)
// CHECK: llmc.attention %[[Q]], %[[K]], %[[V]] {causal}
func.func @llama_gqa_torchscript(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %s = llmc.constant dense<0.594603539> : tensor<f32>
  %mask = llmc.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %k5 = llmc.reshape %k : tensor<1x2x4x8xf32> -> tensor<1x2x1x4x8xf32>
  %kb = llmc.broadcast_to %k5 : tensor<1x2x1x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %kr = llmc.reshape %kb : tensor<1x2x2x4x8xf32> -> tensor<1x4x4x8xf32>
  %v5 = llmc.reshape %v : tensor<1x2x4x8xf32> -> tensor<1x2x1x4x8xf32>
  %vb = llmc.broadcast_to %v5 : tensor<1x2x1x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %vr = llmc.reshape %vb : tensor<1x2x2x4x8xf32> -> tensor<1x4x4x8xf32>
  %kt = llmc.transpose %kr [0, 1, 3, 2] : (tensor<1x4x4x8xf32>) -> tensor<1x4x8x4xf32>
  %qs = llmc.mul %q, %s : (tensor<1x4x4x8xf32>, tensor<f32>) -> tensor<1x4x4x8xf32>
  %ks = llmc.mul %kt, %s : (tensor<1x4x8x4xf32>, tensor<f32>) -> tensor<1x4x8x4xf32>
  %sc = llmc.matmul %qs, %ks : (tensor<1x4x4x8xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x4x4xf32>
  %m = llmc.add %sc, %mask : (tensor<1x4x4x4xf32>, tensor<4x4xf32>) -> tensor<1x4x4x4xf32>
  %p = llmc.softmax %m {axis = -1 : i64} : tensor<1x4x4x4xf32>
  %o = llmc.matmul %p, %vr : (tensor<1x4x4x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %o : tensor<1x4x4x8xf32>
}

// -----

// A boolean mask applied with where(mask, scores, -inf), k given with
// transpose_rhs, and a zero additive mask elsewhere that drops out.
// CHECK-LABEL: func.func @where_mask_transpose_rhs
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x4x8xf32>, %[[K:.+]]: tensor<1x2x4x8xf32>, %[[V:.+]]: tensor<1x2x4x8xf32>, %[[M:.+]]: tensor<1x1x4x4xi1>)
// CHECK: llmc.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] {llmc.eager} :
func.func @where_mask_transpose_rhs(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %mask: tensor<1x1x4x4xi1>) -> tensor<1x2x4x8xf32> {
  %c = llmc.constant dense<0.353553385> : tensor<f32>
  %ninf = llmc.constant dense<0xFF800000> : tensor<f32>
  %sc = llmc.matmul %q, %k {transpose_rhs} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %ss = llmc.mul %c, %sc : (tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = llmc.where %mask, %ss, %ninf : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %m : tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A constant all-zero mask adds nothing: no mask, not causal.
// CHECK-LABEL: func.func @zero_mask
// CHECK: llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} {llmc.eager} :
func.func @zero_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %mask = llmc.constant dense<0.0> : tensor<4x4xf32>
  %c = llmc.constant dense<0.353553385> : tensor<f32>
  %sc = llmc.matmul %q, %k {transpose_rhs} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %ss = llmc.mul %sc, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m = llmc.add %ss, %mask : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %m : tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// The importer stores constants of more than 16 elements as resource blobs;
// a causal mask there is read from the blob. repeat_kv has one reshape more
// in its chain here.
// CHECK-LABEL: func.func @resource_mask_reshape_chain
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x4x8xf32>, %[[K:.+]]: tensor<1x2x4x8xf32>, %[[V:.+]]: tensor<1x2x4x8xf32>)
// CHECK: llmc.attention %[[Q]], %[[K]], %[[V]] {causal} : (tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
func.func @resource_mask_reshape_chain(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %s = llmc.constant dense<0.594603539> : tensor<f32>
  %mask = llmc.constant dense_resource<causal_mask> : tensor<4x4xf32>
  %k5 = llmc.reshape %k : tensor<1x2x4x8xf32> -> tensor<1x2x1x4x8xf32>
  %kb = llmc.broadcast_to %k5 : tensor<1x2x1x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %kr = llmc.reshape %kb : tensor<1x2x2x4x8xf32> -> tensor<1x4x4x8xf32>
  %kr3 = llmc.reshape %kr : tensor<1x4x4x8xf32> -> tensor<4x4x8xf32>
  %kt3 = llmc.transpose %kr3 [0, 2, 1] : (tensor<4x4x8xf32>) -> tensor<4x8x4xf32>
  %kt = llmc.reshape %kt3 : tensor<4x8x4xf32> -> tensor<1x4x8x4xf32>
  %v5 = llmc.reshape %v : tensor<1x2x4x8xf32> -> tensor<1x2x1x4x8xf32>
  %vb = llmc.broadcast_to %v5 : tensor<1x2x1x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %vr = llmc.reshape %vb : tensor<1x2x2x4x8xf32> -> tensor<1x4x4x8xf32>
  %qs = llmc.mul %q, %s : (tensor<1x4x4x8xf32>, tensor<f32>) -> tensor<1x4x4x8xf32>
  %ks = llmc.mul %kt, %s : (tensor<1x4x8x4xf32>, tensor<f32>) -> tensor<1x4x8x4xf32>
  %sc = llmc.matmul %qs, %ks : (tensor<1x4x4x8xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x4x4xf32>
  %m = llmc.add %sc, %mask : (tensor<1x4x4x4xf32>, tensor<4x4xf32>) -> tensor<1x4x4x4xf32>
  %p = llmc.softmax %m : tensor<1x4x4x4xf32>
  %o = llmc.matmul %p, %vr : (tensor<1x4x4x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %o : tensor<1x4x4x8xf32>
}

{-#
  dialect_resources: {
    builtin: {
      causal_mask: "0x0400000000000000000080FF000080FF000080FF0000000000000000000080FF000080FF000000000000000000000000000080FF00000000000000000000000000000000"
    }
  }
#-}

// -----

// Wrong mask: upper triangular (the future, not the past). It is still
// attention, with the constant as its mask operand, never `causal`.
// CHECK-LABEL: func.func @upper_triangular_mask
// CHECK: %[[MASK:.+]] = llmc.constant
// CHECK: llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} mask %[[MASK]] {llmc.eager, scale = 1.000000e+00 : f64} :
// CHECK-NOT: causal
func.func @upper_triangular_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %mask = llmc.constant dense<[[0.0, 0.0, 0.0, 0.0], [0xFF800000, 0.0, 0.0, 0.0], [0xFF800000, 0xFF800000, 0.0, 0.0], [0xFF800000, 0xFF800000, 0xFF800000, 0.0]]> : tensor<4x4xf32>
  %sc = llmc.matmul %q, %k {transpose_rhs} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %m = llmc.add %sc, %mask : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %m : tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Wrong mask: causal shape but filled with -10000 (old BERT style): the
// masked scores still contribute, so it is a mask operand, not `causal`.
// The scale 1 is explicit.
// CHECK-LABEL: func.func @finite_fill_mask
// CHECK: llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} mask %{{[^ ]+}} {llmc.eager, scale = 1.000000e+00 : f64}
// CHECK-NOT: causal
func.func @finite_fill_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %mask = llmc.constant dense<[[0.0, -1.0e4, -1.0e4, -1.0e4], [0.0, 0.0, -1.0e4, -1.0e4], [0.0, 0.0, 0.0, -1.0e4], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %sc = llmc.matmul %q, %k {transpose_rhs} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %m = llmc.add %sc, %mask : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %m : tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Near miss: softmax over the query axis.
// CHECK-LABEL: func.func @softmax_wrong_axis
// CHECK-NOT: llmc.attention
func.func @softmax_wrong_axis(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %sc = llmc.matmul %q, %k {transpose_rhs} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %sc {axis = 2 : i64} : tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Near miss: the probabilities are also returned (output_attentions).
// CHECK-LABEL: func.func @probabilities_other_use
// CHECK-NOT: llmc.attention
func.func @probabilities_other_use(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %sc = llmc.matmul %q, %k {transpose_rhs} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %sc : tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o, %p : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}

// -----

// Near miss: the masked scores are also returned.
// CHECK-LABEL: func.func @scores_other_use
// CHECK-NOT: llmc.attention
func.func @scores_other_use(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %mask: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %sc = llmc.matmul %q, %k {transpose_rhs} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %m = llmc.add %sc, %mask : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %m : tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o, %m : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}

// -----

// Near miss: the "guard" replaces NaN with 1, which is not a guard.
// CHECK-LABEL: func.func @guard_wrong_constant
// CHECK-NOT: llmc.attention
func.func @guard_wrong_constant(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %one = llmc.constant dense<1.0> : tensor<f32>
  %sc = llmc.matmul %q, %k {transpose_rhs} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %sc : tensor<1x2x4x4xf32>
  %nan = llmc.isnan %p : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xi1>
  %pg = llmc.where %nan, %one, %p : (tensor<1x2x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = llmc.matmul %pg, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Near miss: a negative scale is no attention scale.
// CHECK-LABEL: func.func @negative_scale
// CHECK-NOT: llmc.attention
func.func @negative_scale(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %c = llmc.constant dense<-0.353553385> : tensor<f32>
  %sc = llmc.matmul %q, %k {transpose_rhs} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %ss = llmc.mul %sc, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %ss : tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// CodeGen: the mask is added before the scale, softmax((q @ k^T + m) / s),
// with m = where(causal, 0, finfo.min). The scale is peeled off the sum
// first: causal attention at scale 1/s = 1/4 (D 8: not the default).
// CHECK-LABEL: func.func @mask_before_scale
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x4x8xf32>, %[[K:.+]]: tensor<1x2x4x8xf32>, %[[V:.+]]: tensor<1x2x4x8xf32>)
// CHECK: %[[O:.+]] = llmc.attention %[[Q]], %[[K]], %[[V]] {causal, llmc.eager, scale = 2.500000e-01 : f64}
// CHECK-NOT: llmc.softmax
// CHECK: return %[[O]]
func.func @mask_before_scale(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %four = llmc.constant dense<4.0> : tensor<f32>
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %min = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %keep = llmc.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %mask = llmc.where %keep, %zero, %min : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %kt = llmc.transpose %k [0, 1, 3, 2] : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %sc = llmc.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %m = llmc.add %sc, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %d = llmc.div %m, %four : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %d {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Not raised: a mask from the inputs added before the scale would have to
// be scaled too (the attention op adds its mask to the scaled scores).
// CHECK-LABEL: func.func @operand_mask_before_scale
// CHECK-NOT: llmc.attention
// CHECK: llmc.softmax
func.func @operand_mask_before_scale(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %mask: tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32> {
  %four = llmc.constant dense<4.0> : tensor<f32>
  %kt = llmc.transpose %k [0, 1, 3, 2] : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %sc = llmc.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %m = llmc.add %sc, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %d = llmc.div %m, %four : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %d {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Not raised: the scaled sum is of two score-shaped values neither of which
// is q @ k^T (no mask to split off).
// CHECK-LABEL: func.func @scaled_sum_without_scores
// CHECK-NOT: llmc.attention
func.func @scaled_sum_without_scores(%a: tensor<1x2x4x4xf32>, %b: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %four = llmc.constant dense<4.0> : tensor<f32>
  %m = llmc.add %a, %b : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %d = llmc.div %m, %four : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = llmc.softmax %d {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = llmc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}
