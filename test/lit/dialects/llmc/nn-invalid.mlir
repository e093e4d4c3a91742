// RUN: llmc-opt %s --split-input-file --verify-diagnostics

// Every verifier error of matmul and the composite ops. Type inference
// failures are followed by MLIR's generic "failed to infer returned types".

func.func @matmul_types(%a: tensor<4x8xf32>, %b: tensor<8x4xbf16>) {
  // expected-error @+2 {{'llmc.matmul' op operand element types differ: 'f32' vs 'bf16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.matmul %a, %b : (tensor<4x8xf32>, tensor<8x4xbf16>) -> tensor<4x4xf32>
  return
}

// -----

func.func @matmul_rank(%a: tensor<8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+2 {{'llmc.matmul' op operands need rank 2 or more, got [8] and [8, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.matmul %a, %b : (tensor<8xf32>, tensor<8x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_k(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+2 {{'llmc.matmul' op contraction dims differ: lhs [4, 8] has K = 8, rhs [4, 8] has K = 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.matmul %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @matmul_k_transposed(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) {
  // expected-error @+2 {{'llmc.matmul' op contraction dims differ: lhs [4, 8] has K = 8, rhs [8, 6] (transposed) has K = 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.matmul %a, %b {transpose_rhs} : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<3x4x8xf32>, %b: tensor<2x8x4xf32>) {
  // expected-error @+2 {{'llmc.matmul' op batch dims [3] and [2] are not broadcast-compatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.matmul %a, %b : (tensor<3x4x8xf32>, tensor<2x8x4xf32>) -> tensor<3x4x4xf32>
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'llmc.layer_norm' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.layer_norm %x {axis = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_weight(%x: tensor<4x8xf32>, %w: tensor<4xf32>) {
  // expected-error @+2 {{'llmc.layer_norm' op weight has shape [4] but the normalized dims are [8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.layer_norm %x weight %w : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_bias(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<1x8xf32>) {
  // expected-error @+2 {{'llmc.layer_norm' op bias has shape [1, 8] but the normalized dims are [8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.layer_norm %x weight %w bias %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_weight_type(%x: tensor<4x8xbf16>, %w: tensor<8xf32>) {
  // expected-error @+2 {{'llmc.layer_norm' op weight has element type 'f32' but the input has 'bf16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.layer_norm %x weight %w : (tensor<4x8xbf16>, tensor<8xf32>) -> tensor<4x8xbf16>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'llmc.layer_norm' op epsilon must not be negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.layer_norm %x {epsilon = -1.0 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_weight(%x: tensor<4x8xf32>, %w: tensor<16xf32>) {
  // expected-error @+2 {{'llmc.rms_norm' op weight has shape [16] but the normalized dims are [8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.rms_norm %x weight %w : (tensor<4x8xf32>, tensor<16xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_axis(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'llmc.rms_norm' op axis -3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.rms_norm %x {axis = -3 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_epsilon(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'llmc.rms_norm' op epsilon must not be negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.rms_norm %x {epsilon = -1.0e-6 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @softmax_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'llmc.softmax' op axis 2 is out of range for rank 2}}
  %0 = llmc.softmax %x {axis = 2 : i64} : tensor<4x8xf32>
  return
}

// -----

func.func @log_softmax_scalar(%x: tensor<f32>) {
  // expected-error @+1 {{'llmc.log_softmax' op needs an operand of rank 1 or more}}
  %0 = llmc.log_softmax %x : tensor<f32>
  return
}

// -----

func.func @gelu_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{'llmc.gelu' op operand #0 must be ranked tensor of}}
  %0 = llmc.gelu tanh %x : tensor<4xi32>
  return
}

// -----

func.func @attention_rank(%q: tensor<8x16x64xf32>) {
  // expected-error @+2 {{'llmc.attention' op query must be [batch, heads, seq, head_dim], got [8, 16, 64]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.attention %q, %q, %q : (tensor<8x16x64xf32>, tensor<8x16x64xf32>, tensor<8x16x64xf32>) -> tensor<8x16x64xf32>
  return
}

// -----

func.func @attention_types(%q: tensor<2x8x16x64xf32>, %k: tensor<2x8x16x64xbf16>) {
  // expected-error @+2 {{'llmc.attention' op key has element type 'bf16' but query has 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.attention %q, %k, %k : (tensor<2x8x16x64xf32>, tensor<2x8x16x64xbf16>, tensor<2x8x16x64xbf16>) -> tensor<2x8x16x64xf32>
  return
}

// -----

func.func @attention_batch(%q: tensor<2x8x16x64xf32>, %k: tensor<3x8x16x64xf32>) {
  // expected-error @+2 {{'llmc.attention' op batch sizes differ: query [2, 8, 16, 64], key [3, 8, 16, 64], value [3, 8, 16, 64]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.attention %q, %k, %k : (tensor<2x8x16x64xf32>, tensor<3x8x16x64xf32>, tensor<3x8x16x64xf32>) -> tensor<2x8x16x64xf32>
  return
}

// -----

func.func @attention_head_dim(%q: tensor<2x8x16x64xf32>, %k: tensor<2x8x16x32xf32>) {
  // expected-error @+2 {{'llmc.attention' op query head_dim 64 differs from key head_dim 32}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.attention %q, %k, %k : (tensor<2x8x16x64xf32>, tensor<2x8x16x32xf32>, tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32>
  return
}

// -----

func.func @attention_kv(%q: tensor<2x8x16x64xf32>, %v: tensor<2x8x12x64xf32>) {
  // expected-error @+2 {{'llmc.attention' op key [2, 8, 16, 64] and value [2, 8, 12, 64] differ in heads or seq}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.attention %q, %q, %v : (tensor<2x8x16x64xf32>, tensor<2x8x16x64xf32>, tensor<2x8x12x64xf32>) -> tensor<2x8x16x64xf32>
  return
}

// -----

func.func @attention_gqa(%q: tensor<2x8x16x64xf32>, %k: tensor<2x3x16x64xf32>) {
  // expected-error @+2 {{'llmc.attention' op query heads (8) must be a multiple of key/value heads (3) for grouped-query attention}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.attention %q, %k, %k : (tensor<2x8x16x64xf32>, tensor<2x3x16x64xf32>, tensor<2x3x16x64xf32>) -> tensor<2x8x16x64xf32>
  return
}

// -----

func.func @attention_scale(%q: tensor<2x8x16x64xf32>) {
  // expected-error @+2 {{'llmc.attention' op scale must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.attention %q, %q, %q {scale = 0.0 : f64} : (tensor<2x8x16x64xf32>, tensor<2x8x16x64xf32>, tensor<2x8x16x64xf32>) -> tensor<2x8x16x64xf32>
  return
}

// -----

func.func @attention_mask_type(%q: tensor<2x8x16x64xf32>, %m: tensor<16x16xi64>) {
  // expected-error @+2 {{'llmc.attention' op mask must be i1 or 'f32', got 'i64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.attention %q, %q, %q mask %m : (tensor<2x8x16x64xf32>, tensor<2x8x16x64xf32>, tensor<2x8x16x64xf32>, tensor<16x16xi64>) -> tensor<2x8x16x64xf32>
  return
}

// -----

func.func @attention_mask_shape(%q: tensor<2x8x16x64xf32>, %m: tensor<16x8xf32>) {
  // expected-error @+2 {{'llmc.attention' op mask [16, 8] does not broadcast to the scores [batch, heads, T, S] = [2, 8, 16, 16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.attention %q, %q, %q mask %m : (tensor<2x8x16x64xf32>, tensor<2x8x16x64xf32>, tensor<2x8x16x64xf32>, tensor<16x8xf32>) -> tensor<2x8x16x64xf32>
  return
}

// -----

func.func @rotary_rank(%x: tensor<64xf32>, %c: tensor<16x64xf32>) {
  // expected-error @+2 {{'llmc.rotary' op input must be [..., seq, dim], got [64]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.rotary %x, %c, %c : (tensor<64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<64xf32>
  return
}

// -----

func.func @rotary_tables_differ(%x: tensor<2x8x16x64xf32>, %c: tensor<16x64xf32>, %s: tensor<16x32xf32>) {
  // expected-error @+2 {{'llmc.rotary' op cos 'tensor<16x64xf32>' and sin 'tensor<16x32xf32>' must have the same type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.rotary %x, %c, %s : (tensor<2x8x16x64xf32>, tensor<16x64xf32>, tensor<16x32xf32>) -> tensor<2x8x16x64xf32>
  return
}

// -----

func.func @rotary_element(%x: tensor<2x8x16x64xf32>, %c: tensor<16x64xbf16>) {
  // expected-error @+2 {{'llmc.rotary' op tables have element type 'bf16' but the input has 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.rotary %x, %c, %c : (tensor<2x8x16x64xf32>, tensor<16x64xbf16>, tensor<16x64xbf16>) -> tensor<2x8x16x64xf32>
  return
}

// -----

func.func @rotary_table_rank(%x: tensor<2x8x16x64xf32>, %c: tensor<64xf32>) {
  // expected-error @+2 {{'llmc.rotary' op tables must be [..., seq, rotary_dim] with rank 2 to 4, got [64]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.rotary %x, %c, %c : (tensor<2x8x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x8x16x64xf32>
  return
}

// -----

func.func @rotary_odd(%x: tensor<2x8x16x64xf32>, %c: tensor<16x33xf32>) {
  // expected-error @+2 {{'llmc.rotary' op rotary_dim (last dim of the tables) must be static and even, got [16, 33]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.rotary %x, %c, %c : (tensor<2x8x16x64xf32>, tensor<16x33xf32>, tensor<16x33xf32>) -> tensor<2x8x16x64xf32>
  return
}

// -----

func.func @rotary_too_wide(%x: tensor<2x8x16x64xf32>, %c: tensor<16x128xf32>) {
  // expected-error @+2 {{'llmc.rotary' op rotary_dim 128 exceeds the input's last dim 64}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.rotary %x, %c, %c : (tensor<2x8x16x64xf32>, tensor<16x128xf32>, tensor<16x128xf32>) -> tensor<2x8x16x64xf32>
  return
}

// -----

func.func @rotary_seq(%x: tensor<2x8x16x64xf32>, %c: tensor<32x64xf32>) {
  // expected-error @+2 {{'llmc.rotary' op tables [32, 64] do not broadcast to the input's [2, 8, 16, 64]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.rotary %x, %c, %c : (tensor<2x8x16x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<2x8x16x64xf32>
  return
}

// -----

func.func @cross_entropy_scalar(%l: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+2 {{'llmc.cross_entropy' op logits must be [..., classes]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.cross_entropy mean %l, %t : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_targets(%l: tensor<2x16x512xf32>, %t: tensor<2x8xi64>) {
  // expected-error @+2 {{'llmc.cross_entropy' op targets [2, 8] must have the logits' shape without the class dim, [2, 16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.cross_entropy mean %l, %t : (tensor<2x16x512xf32>, tensor<2x8xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_none_type(%l: tensor<2x16x512xf32>, %t: tensor<2x16xi64>) {
  // expected-error @+2 {{'llmc.cross_entropy' op inferred type(s) 'tensor<2x16xf32>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.cross_entropy none %l, %t : (tensor<2x16x512xf32>, tensor<2x16xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_float_targets(%l: tensor<16x512xf32>, %t: tensor<16xf32>) {
  // expected-error @+1 {{'llmc.cross_entropy' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = llmc.cross_entropy mean %l, %t : (tensor<16x512xf32>, tensor<16xf32>) -> tensor<f32>
  return
}

// -----

func.func @dropout_mask_ratio() {
  // expected-error @+1 {{'llmc.dropout_mask' op ratio 1.000000e+00 is not in [0, 1)}}
  %0 = llmc.dropout_mask {ratio = 1.0 : f64, seed = 0 : i64, offset = 0 : i64} : () -> tensor<4xf32>
  return
}

// -----

func.func @dropout_mask_offset() {
  // expected-error @+1 {{'llmc.dropout_mask' op offset -1 is not in [0, 2^32)}}
  %0 = llmc.dropout_mask {ratio = 0.5 : f64, seed = 0 : i64, offset = -1 : i64} : () -> tensor<4xf32>
  return
}

// -----

func.func @dropout_mask_size() {
  // expected-error @+1 {{'llmc.dropout_mask' op needs a static shape of fewer than 2^32 elements}}
  %0 = llmc.dropout_mask {ratio = 0.5 : f64, seed = 0 : i64, offset = 0 : i64} : () -> tensor<65536x65536xf32>
  return
}

// -----

func.func @cross_entropy_classes_past_logits(%l: tensor<4x8xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{'llmc.cross_entropy' op classes 9 must be in [1, 8] (the logits' last dim)}}
  %0 = llmc.cross_entropy mean %l, %t {classes = 9 : i64} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// qkv_heads: windows of packed [B, T, Hq + 2 Hkv, D] operands, seq_major only.
func.func @attention_qkv_heads_layout(%p: tensor<2x8x12x16xf32>) {
  // expected-error @+2 {{'llmc.attention' op qkv_heads needs seq_major ([batch, seq, heads, head_dim] operands)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.attention %p, %p, %p {qkv_heads = array<i64: 4, 4>} : (tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>) -> tensor<2x8x4x16xf32>
  return
}

// -----

func.func @attention_qkv_heads_count(%p: tensor<2x8x12x16xf32>) {
  // expected-error @+2 {{'llmc.attention' op query has 12 heads but qkv_heads [4, 2] packs 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.attention %p, %p, %p {seq_major, qkv_heads = array<i64: 4, 2>} : (tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>) -> tensor<2x8x4x16xf32>
  return
}

// -----

func.func @attention_qkv_heads_size(%p: tensor<2x8x12x16xf32>) {
  // expected-error @+2 {{'llmc.attention' op qkv_heads must be [query heads, key/value heads], both positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.attention %p, %p, %p {seq_major, qkv_heads = array<i64: 4, 4, 4>} : (tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>) -> tensor<2x8x4x16xf32>
  return
}
