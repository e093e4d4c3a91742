// RUN: llmc-opt %s --llmc-fold-qkv-slices --split-input-file | FileCheck %s

// A GPT-2 block after llmc-fold-attention-transposes: the split of the packed
// qkv and the concat of dq, dk, dv go; both ops read the packed tensor viewed
// [B, T, 3H, D], and attention_grad writes the packed gradient.
// CHECK-LABEL: func.func @gpt2_block
// CHECK-NOT:   llmc.split
// CHECK:       %[[P:.+]] = llmc.reshape %arg0 : tensor<2x8x192xbf16> -> tensor<2x8x12x16xbf16>
// CHECK:       %[[O:.+]], %[[L:.+]] = llmc.attention_lse %[[P]], %[[P]], %[[P]] {causal, qkv_heads = array<i64: 4, 4>, seq_major} : (tensor<2x8x12x16xbf16>, tensor<2x8x12x16xbf16>, tensor<2x8x12x16xbf16>) -> (tensor<2x8x4x16xbf16>, tensor<2x4x8xf32>)
// CHECK:       %[[G:.+]] = llmc.attention_grad %[[P]], %[[P]], %[[P]], %[[O]], %[[L]], %arg1 {causal, qkv_heads = array<i64: 4, 4>, seq_major} : {{.*}} -> tensor<2x8x12x16xbf16>
// CHECK-NEXT:  %[[D:.+]] = llmc.reshape %[[G]] : tensor<2x8x12x16xbf16> -> tensor<2x8x192xbf16>
// CHECK-NOT:   llmc.concat
// CHECK:       return %{{.+}}, %[[D]]
func.func @gpt2_block(%qkv: tensor<2x8x192xbf16>, %dy: tensor<2x8x4x16xbf16>) -> (tensor<2x8x64xbf16>, tensor<2x8x192xbf16>) {
  %q, %k, %v = llmc.split %qkv axis 2 sizes [64, 64, 64] : (tensor<2x8x192xbf16>) -> (tensor<2x8x64xbf16>, tensor<2x8x64xbf16>, tensor<2x8x64xbf16>)
  %q4 = llmc.reshape %q : tensor<2x8x64xbf16> -> tensor<2x8x4x16xbf16>
  %k4 = llmc.reshape %k : tensor<2x8x64xbf16> -> tensor<2x8x4x16xbf16>
  %v4 = llmc.reshape %v : tensor<2x8x64xbf16> -> tensor<2x8x4x16xbf16>
  %o, %lse = llmc.attention_lse %q4, %k4, %v4 {causal, seq_major} : (tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>) -> (tensor<2x8x4x16xbf16>, tensor<2x4x8xf32>)
  %y = llmc.reshape %o : tensor<2x8x4x16xbf16> -> tensor<2x8x64xbf16>
  %dq, %dk, %dv = llmc.attention_grad %q4, %k4, %v4, %o, %lse, %dy {causal, seq_major} : (tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x4x8xf32>, tensor<2x8x4x16xbf16>) -> (tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>)
  %dq3 = llmc.reshape %dq : tensor<2x8x4x16xbf16> -> tensor<2x8x64xbf16>
  %dk3 = llmc.reshape %dk : tensor<2x8x4x16xbf16> -> tensor<2x8x64xbf16>
  %dv3 = llmc.reshape %dv : tensor<2x8x4x16xbf16> -> tensor<2x8x64xbf16>
  %dqkv = llmc.concat %dq3, %dk3, %dv3 axis 2 : (tensor<2x8x64xbf16>, tensor<2x8x64xbf16>, tensor<2x8x64xbf16>) -> tensor<2x8x192xbf16>
  return %y, %dqkv : tensor<2x8x64xbf16>, tensor<2x8x192xbf16>
}

// -----

// Evaluation: only the forward reads the pieces.
// CHECK-LABEL: func.func @forward_only
// CHECK-NOT:   llmc.split
// CHECK:       llmc.attention_lse %[[P:.+]], %[[P]], %[[P]] {causal, qkv_heads = array<i64: 4, 4>, seq_major}
func.func @forward_only(%qkv: tensor<2x8x192xbf16>, %dy: tensor<2x8x4x16xbf16>) -> (tensor<2x8x64xbf16>) {
  %q, %k, %v = llmc.split %qkv axis 2 sizes [64, 64, 64] : (tensor<2x8x192xbf16>) -> (tensor<2x8x64xbf16>, tensor<2x8x64xbf16>, tensor<2x8x64xbf16>)
  %q4 = llmc.reshape %q : tensor<2x8x64xbf16> -> tensor<2x8x4x16xbf16>
  %k4 = llmc.reshape %k : tensor<2x8x64xbf16> -> tensor<2x8x4x16xbf16>
  %v4 = llmc.reshape %v : tensor<2x8x64xbf16> -> tensor<2x8x4x16xbf16>
  %o, %lse = llmc.attention_lse %q4, %k4, %v4 {causal, seq_major} : (tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>) -> (tensor<2x8x4x16xbf16>, tensor<2x4x8xf32>)
  %y = llmc.reshape %o : tensor<2x8x4x16xbf16> -> tensor<2x8x64xbf16>
  return %y : tensor<2x8x64xbf16>
}

// -----

// A piece has another reader (k is also returned): everything stays.
// CHECK-LABEL: func.func @other_reader
// CHECK:       llmc.split
// CHECK:       llmc.attention_lse %{{.+}} {causal, seq_major}
// CHECK-NOT:   qkv_heads
func.func @other_reader(%qkv: tensor<2x8x192xbf16>, %dy: tensor<2x8x4x16xbf16>) -> (tensor<2x8x64xbf16>, tensor<2x8x64xbf16>) {
  %q, %k, %v = llmc.split %qkv axis 2 sizes [64, 64, 64] : (tensor<2x8x192xbf16>) -> (tensor<2x8x64xbf16>, tensor<2x8x64xbf16>, tensor<2x8x64xbf16>)
  %q4 = llmc.reshape %q : tensor<2x8x64xbf16> -> tensor<2x8x4x16xbf16>
  %k4 = llmc.reshape %k : tensor<2x8x64xbf16> -> tensor<2x8x4x16xbf16>
  %v4 = llmc.reshape %v : tensor<2x8x64xbf16> -> tensor<2x8x4x16xbf16>
  %o, %lse = llmc.attention_lse %q4, %k4, %v4 {causal, seq_major} : (tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>) -> (tensor<2x8x4x16xbf16>, tensor<2x4x8xf32>)
  %y = llmc.reshape %o : tensor<2x8x4x16xbf16> -> tensor<2x8x64xbf16>
  return %y, %k : tensor<2x8x64xbf16>, tensor<2x8x64xbf16>
}

// -----

// The gradients are concatenated in another order than the split's: the
// packed gradient could not replace the concat, so nothing changes.
// CHECK-LABEL: func.func @concat_reordered
// CHECK:       llmc.split
// CHECK:       llmc.attention_lse %{{.+}} {causal, seq_major}
// CHECK:       llmc.attention_grad %{{.+}} {causal, seq_major}
// CHECK:       llmc.concat
// CHECK-NOT:   qkv_heads
func.func @concat_reordered(%qkv: tensor<2x8x192xbf16>, %dy: tensor<2x8x4x16xbf16>) -> (tensor<2x8x64xbf16>, tensor<2x8x192xbf16>) {
  %q, %k, %v = llmc.split %qkv axis 2 sizes [64, 64, 64] : (tensor<2x8x192xbf16>) -> (tensor<2x8x64xbf16>, tensor<2x8x64xbf16>, tensor<2x8x64xbf16>)
  %q4 = llmc.reshape %q : tensor<2x8x64xbf16> -> tensor<2x8x4x16xbf16>
  %k4 = llmc.reshape %k : tensor<2x8x64xbf16> -> tensor<2x8x4x16xbf16>
  %v4 = llmc.reshape %v : tensor<2x8x64xbf16> -> tensor<2x8x4x16xbf16>
  %o, %lse = llmc.attention_lse %q4, %k4, %v4 {causal, seq_major} : (tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>) -> (tensor<2x8x4x16xbf16>, tensor<2x4x8xf32>)
  %y = llmc.reshape %o : tensor<2x8x4x16xbf16> -> tensor<2x8x64xbf16>
  %dq, %dk, %dv = llmc.attention_grad %q4, %k4, %v4, %o, %lse, %dy {causal, seq_major} : (tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x4x8xf32>, tensor<2x8x4x16xbf16>) -> (tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>)
  %dq3 = llmc.reshape %dq : tensor<2x8x4x16xbf16> -> tensor<2x8x64xbf16>
  %dk3 = llmc.reshape %dk : tensor<2x8x4x16xbf16> -> tensor<2x8x64xbf16>
  %dv3 = llmc.reshape %dv : tensor<2x8x4x16xbf16> -> tensor<2x8x64xbf16>
  %dqkv = llmc.concat %dk3, %dq3, %dv3 axis 2 : (tensor<2x8x64xbf16>, tensor<2x8x64xbf16>, tensor<2x8x64xbf16>) -> tensor<2x8x192xbf16>
  return %y, %dqkv : tensor<2x8x64xbf16>, tensor<2x8x192xbf16>
}

// -----

// Llama-style: q, k, v from separate projections, RoPE on q and k before
// attention. There is no split to fold and the ops keep their operands.
// CHECK-LABEL: func.func @llama_rope
// CHECK-NOT:   qkv_heads
// CHECK:       llmc.rotary
// CHECK:       llmc.attention_lse %{{.+}} {causal, seq_major}
func.func @llama_rope(%q: tensor<2x8x4x16xbf16>, %k: tensor<2x8x4x16xbf16>, %v: tensor<2x8x4x16xbf16>, %cos: tensor<4x16xbf16>, %sin: tensor<4x16xbf16>) -> tensor<2x8x4x16xbf16> {
  %qr = llmc.rotary %q, %cos, %sin : (tensor<2x8x4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<2x8x4x16xbf16>
  %kr = llmc.rotary %k, %cos, %sin : (tensor<2x8x4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<2x8x4x16xbf16>
  %o, %lse = llmc.attention_lse %qr, %kr, %v {causal, seq_major} : (tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>) -> (tensor<2x8x4x16xbf16>, tensor<2x4x8xf32>)
  return %o : tensor<2x8x4x16xbf16>
}

// -----

// A packed projection with RoPE between the split and attention: the views
// of q and k are read by rotary, so the split stays.
// CHECK-LABEL: func.func @fused_qkv_rope
// CHECK:       llmc.split
// CHECK:       llmc.attention_lse %{{.+}} {causal, seq_major}
// CHECK-NOT:   qkv_heads
func.func @fused_qkv_rope(%qkv: tensor<2x8x192xbf16>, %cos: tensor<4x16xbf16>, %sin: tensor<4x16xbf16>) -> tensor<2x8x4x16xbf16> {
  %q, %k, %v = llmc.split %qkv axis 2 sizes [64, 64, 64] : (tensor<2x8x192xbf16>) -> (tensor<2x8x64xbf16>, tensor<2x8x64xbf16>, tensor<2x8x64xbf16>)
  %q4 = llmc.reshape %q : tensor<2x8x64xbf16> -> tensor<2x8x4x16xbf16>
  %k4 = llmc.reshape %k : tensor<2x8x64xbf16> -> tensor<2x8x4x16xbf16>
  %v4 = llmc.reshape %v : tensor<2x8x64xbf16> -> tensor<2x8x4x16xbf16>
  %qr = llmc.rotary %q4, %cos, %sin : (tensor<2x8x4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<2x8x4x16xbf16>
  %kr = llmc.rotary %k4, %cos, %sin : (tensor<2x8x4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<2x8x4x16xbf16>
  %o, %lse = llmc.attention_lse %qr, %kr, %v4 {causal, seq_major} : (tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>) -> (tensor<2x8x4x16xbf16>, tensor<2x4x8xf32>)
  return %o : tensor<2x8x4x16xbf16>
}

// -----

// Grouped-query attention from one packed projection (8 query heads, 2
// key/value heads of 16): the windows are [0, 8), [8, 10), [10, 12).
// CHECK-LABEL: func.func @gqa_packed
// CHECK:       %[[P:.+]] = llmc.reshape %arg0 : tensor<2x8x192xf32> -> tensor<2x8x12x16xf32>
// CHECK:       llmc.attention %[[P]], %[[P]], %[[P]] {causal, qkv_heads = array<i64: 8, 2>, seq_major} : (tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>, tensor<2x8x12x16xf32>) -> tensor<2x8x8x16xf32>
func.func @gqa_packed(%qkv: tensor<2x8x192xf32>) -> tensor<2x8x8x16xf32> {
  %q, %k, %v = llmc.split %qkv axis 2 sizes [128, 32, 32] : (tensor<2x8x192xf32>) -> (tensor<2x8x128xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  %q4 = llmc.reshape %q : tensor<2x8x128xf32> -> tensor<2x8x8x16xf32>
  %k4 = llmc.reshape %k : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %v4 = llmc.reshape %v : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %o = llmc.attention %q4, %k4, %v4 {causal, seq_major} : (tensor<2x8x8x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>) -> tensor<2x8x8x16xf32>
  return %o : tensor<2x8x8x16xf32>
}

// -----

// Attention that is not seq_major (its transposes did not fold): the split
// stays.
// CHECK-LABEL: func.func @not_seq_major
// CHECK:       llmc.split
// CHECK-NOT:   qkv_heads
func.func @not_seq_major(%qkv: tensor<2x8x192xf32>) -> tensor<2x8x4x16xf32> {
  %q, %k, %v = llmc.split %qkv axis 2 sizes [64, 64, 64] : (tensor<2x8x192xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
  %q4 = llmc.reshape %q : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %k4 = llmc.reshape %k : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %v4 = llmc.reshape %v : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %o = llmc.attention %q4, %k4, %v4 {causal} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  return %o : tensor<2x8x4x16xf32>
}

// -----

// q and k swapped: the view of piece 1 is read as q. Not the packed layout.
// CHECK-LABEL: func.func @swapped_operands
// CHECK:       llmc.split
// CHECK-NOT:   qkv_heads
func.func @swapped_operands(%qkv: tensor<2x8x192xf32>) -> tensor<2x8x4x16xf32> {
  %q, %k, %v = llmc.split %qkv axis 2 sizes [64, 64, 64] : (tensor<2x8x192xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
  %q4 = llmc.reshape %q : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %k4 = llmc.reshape %k : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %v4 = llmc.reshape %v : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %o = llmc.attention %k4, %q4, %v4 {causal, seq_major} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  return %o : tensor<2x8x4x16xf32>
}
