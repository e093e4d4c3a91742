// RUN: llmc-opt %s --llmc-fold-attention-transposes --split-input-file | FileCheck %s

// A training block: q, k, v and the output cotangent transposed to
// [B, H, T, D], the output and dq, dk, dv transposed back. Both ops switch
// together and every transpose goes; lse stays [B, H, T].
// CHECK-LABEL: func.func @block
// CHECK-NOT:   llmc.transpose
// CHECK:       %[[O:.+]], %[[L:.+]] = llmc.attention_lse %arg0, %arg1, %arg2 {causal, seq_major} : (tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>) -> (tensor<2x8x4x16xbf16>, tensor<2x4x8xf32>)
// CHECK-NEXT:  %[[G:.+]]:3 = llmc.attention_grad %arg0, %arg1, %arg2, %[[O]], %[[L]], %arg3 {causal, seq_major} : {{.*}} -> (tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>)
// CHECK-NEXT:  return %[[O]], %[[G]]#0, %[[G]]#1, %[[G]]#2
func.func @block(%q: tensor<2x8x4x16xbf16>, %k: tensor<2x8x4x16xbf16>, %v: tensor<2x8x4x16xbf16>, %dy: tensor<2x8x4x16xbf16>) -> (tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>) {
  %qt = llmc.transpose %q [0, 2, 1, 3] : (tensor<2x8x4x16xbf16>) -> tensor<2x4x8x16xbf16>
  %kt = llmc.transpose %k [0, 2, 1, 3] : (tensor<2x8x4x16xbf16>) -> tensor<2x4x8x16xbf16>
  %vt = llmc.transpose %v [0, 2, 1, 3] : (tensor<2x8x4x16xbf16>) -> tensor<2x4x8x16xbf16>
  %o, %lse = llmc.attention_lse %qt, %kt, %vt {causal} : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) -> (tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>)
  %y = llmc.transpose %o [0, 2, 1, 3] : (tensor<2x4x8x16xbf16>) -> tensor<2x8x4x16xbf16>
  %dyt = llmc.transpose %dy [0, 2, 1, 3] : (tensor<2x8x4x16xbf16>) -> tensor<2x4x8x16xbf16>
  %dq, %dk, %dv = llmc.attention_grad %qt, %kt, %vt, %o, %lse, %dyt {causal} : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>, tensor<2x4x8x16xbf16>) -> (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>)
  %dqt = llmc.transpose %dq [0, 2, 1, 3] : (tensor<2x4x8x16xbf16>) -> tensor<2x8x4x16xbf16>
  %dkt = llmc.transpose %dk [0, 2, 1, 3] : (tensor<2x4x8x16xbf16>) -> tensor<2x8x4x16xbf16>
  %dvt = llmc.transpose %dv [0, 2, 1, 3] : (tensor<2x4x8x16xbf16>) -> tensor<2x8x4x16xbf16>
  return %y, %dqt, %dkt, %dvt : tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>
}

// -----

// Grouped-query attention (k, v with 2 heads of 4) with a mask: the mask is
// indexed by (b, h, t, s) in both layouts, so it stays as it is.
// CHECK-LABEL: func.func @gqa_mask
// CHECK-NOT:   llmc.transpose
// CHECK:       llmc.attention %arg0, %arg1, %arg2 mask %arg3 {seq_major} : (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<1x1x8x8xi1>) -> tensor<2x8x4x16xf32>
func.func @gqa_mask(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x2x16xf32>, %v: tensor<2x8x2x16xf32>, %m: tensor<1x1x8x8xi1>) -> tensor<2x8x4x16xf32> {
  %qt = llmc.transpose %q [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %kt = llmc.transpose %k [0, 2, 1, 3] : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %vt = llmc.transpose %v [0, 2, 1, 3] : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %o = llmc.attention %qt, %kt, %vt mask %m : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<1x1x8x8xi1>) -> tensor<2x4x8x16xf32>
  %y = llmc.transpose %o [0, 2, 1, 3] : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  return %y : tensor<2x8x4x16xf32>
}

// -----

// The transposed q has another reader: the op and all its transposes stay.
// CHECK-LABEL: func.func @other_reader
// CHECK-COUNT-3: llmc.transpose
// CHECK:       llmc.attention %{{.+}} {causal} :
// CHECK-NEXT:  llmc.transpose
// CHECK-NOT:   seq_major
func.func @other_reader(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xf32>, %v: tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8x16xf32>) {
  %qt = llmc.transpose %q [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %kt = llmc.transpose %k [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %vt = llmc.transpose %v [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %o = llmc.attention %qt, %kt, %vt {causal} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %y = llmc.transpose %o [0, 2, 1, 3] : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  %n = llmc.neg %qt : tensor<2x4x8x16xf32>
  return %y, %n : tensor<2x8x4x16xf32>, tensor<2x4x8x16xf32>
}

// -----

// A permutation other than [0, 2, 1, 3] (q arrives as [B, T, D, H]): the
// op and its other transposes stay.
// CHECK-LABEL: func.func @other_permutation
// CHECK:       llmc.transpose %arg0 [0, 3, 1, 2]
// CHECK-COUNT-2: llmc.transpose
// CHECK:       llmc.attention
// CHECK-NEXT:  llmc.transpose
// CHECK-NOT:   seq_major
func.func @other_permutation(%q: tensor<2x8x16x4xf32>, %k: tensor<2x8x4x16xf32>, %v: tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32> {
  %qt = llmc.transpose %q [0, 3, 1, 2] : (tensor<2x8x16x4xf32>) -> tensor<2x4x8x16xf32>
  %kt = llmc.transpose %k [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %vt = llmc.transpose %v [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %o = llmc.attention %qt, %kt, %vt : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %y = llmc.transpose %o [0, 2, 1, 3] : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  return %y : tensor<2x8x4x16xf32>
}

// -----

// RoPE between the transposes and attention (Llama): q and k are rotary
// results, so nothing switches and v's transpose stays too.
// CHECK-LABEL: func.func @rope
// CHECK-COUNT-3: llmc.transpose
// CHECK:       llmc.attention
// CHECK-NEXT:  llmc.transpose
// CHECK-NOT:   seq_major
func.func @rope(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xf32>, %v: tensor<2x8x4x16xf32>, %cos: tensor<8x16xf32>, %sin: tensor<8x16xf32>) -> tensor<2x8x4x16xf32> {
  %qt = llmc.transpose %q [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %kt = llmc.transpose %k [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %vt = llmc.transpose %v [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %qr = llmc.rotary %qt, %cos, %sin : (tensor<2x4x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8x16xf32>
  %kr = llmc.rotary %kt, %cos, %sin : (tensor<2x4x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8x16xf32>
  %o = llmc.attention %qr, %kr, %vt {causal} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %y = llmc.transpose %o [0, 2, 1, 3] : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  return %y : tensor<2x8x4x16xf32>
}

// -----

// The output has a reader besides its transpose back: the op stays.
// CHECK-LABEL: func.func @result_reader
// CHECK-COUNT-3: llmc.transpose
// CHECK:       llmc.attention %{{[^{]+}} :
// CHECK-NEXT:  llmc.transpose
// CHECK-NOT:   seq_major
func.func @result_reader(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xf32>, %v: tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8x16xf32>) {
  %qt = llmc.transpose %q [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %kt = llmc.transpose %k [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %vt = llmc.transpose %v [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %o = llmc.attention %qt, %kt, %vt : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %y = llmc.transpose %o [0, 2, 1, 3] : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  %n = llmc.neg %o : tensor<2x4x8x16xf32>
  return %y, %n : tensor<2x8x4x16xf32>, tensor<2x4x8x16xf32>
}

// -----

// The forward could switch alone, but attention_grad shares its q, k, v and
// output and its cotangent arrives as [B, H, T, D]: neither switches.
// CHECK-LABEL: func.func @shared_blocked
// CHECK-COUNT-3: llmc.transpose
// CHECK:       llmc.attention_lse %{{.+}} {causal} :
// CHECK-NEXT:  llmc.transpose
// CHECK-NEXT:  llmc.attention_grad %{{.+}} {causal} :
// CHECK-NOT:   seq_major
func.func @shared_blocked(%q: tensor<2x8x4x16xbf16>, %k: tensor<2x8x4x16xbf16>, %v: tensor<2x8x4x16xbf16>, %dyt: tensor<2x4x8x16xbf16>) -> (tensor<2x8x4x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) {
  %qt = llmc.transpose %q [0, 2, 1, 3] : (tensor<2x8x4x16xbf16>) -> tensor<2x4x8x16xbf16>
  %kt = llmc.transpose %k [0, 2, 1, 3] : (tensor<2x8x4x16xbf16>) -> tensor<2x4x8x16xbf16>
  %vt = llmc.transpose %v [0, 2, 1, 3] : (tensor<2x8x4x16xbf16>) -> tensor<2x4x8x16xbf16>
  %o, %lse = llmc.attention_lse %qt, %kt, %vt {causal} : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) -> (tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>)
  %y = llmc.transpose %o [0, 2, 1, 3] : (tensor<2x4x8x16xbf16>) -> tensor<2x8x4x16xbf16>
  %dq, %dk, %dv = llmc.attention_grad %qt, %kt, %vt, %o, %lse, %dyt {causal} : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>, tensor<2x4x8x16xbf16>) -> (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>)
  return %y, %dq, %dk, %dv : tensor<2x8x4x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>
}

// -----

// Llama in bf16: q and k are rotated in f32 in [B, T, H, D], transposed, and
// narrowed to bf16 just before attention. The narrowing cast moves before
// the transpose, which then folds into seq_major like any other.
// CHECK-LABEL: func.func @cast_after_transpose
// CHECK: %[[Q:.*]] = llmc.cast %arg0 : tensor<2x8x4x16xf32> -> tensor<2x8x4x16xbf16>
// CHECK-NOT: llmc.transpose
// CHECK: llmc.attention %[[Q]], %arg1, %arg2 {causal, seq_major}
// CHECK-NOT: llmc.transpose
func.func @cast_after_transpose(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xbf16>, %v: tensor<2x8x4x16xbf16>) -> tensor<2x8x4x16xbf16> {
  %qt = llmc.transpose %q [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %qb = llmc.cast %qt : tensor<2x4x8x16xf32> -> tensor<2x4x8x16xbf16>
  %kt = llmc.transpose %k [0, 2, 1, 3] : (tensor<2x8x4x16xbf16>) -> tensor<2x4x8x16xbf16>
  %vt = llmc.transpose %v [0, 2, 1, 3] : (tensor<2x8x4x16xbf16>) -> tensor<2x4x8x16xbf16>
  %o = llmc.attention %qb, %kt, %vt {causal} : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) -> tensor<2x4x8x16xbf16>
  %y = llmc.transpose %o [0, 2, 1, 3] : (tensor<2x4x8x16xbf16>) -> tensor<2x8x4x16xbf16>
  return %y : tensor<2x8x4x16xbf16>
}

// -----

// The backward of the same: dq is widened to f32 for RoPE's gradient before
// it is transposed back. The transpose moves before the cast and folds.
// CHECK-LABEL: func.func @cast_before_transpose_back
// CHECK: %[[DQ:.*]]:3 = llmc.attention_grad %arg0, %arg1, %arg2, %arg3, %arg4, %arg5 {causal, seq_major}
// CHECK-NOT: llmc.transpose
// CHECK: %[[W:.*]] = llmc.cast %[[DQ]]#0 : tensor<2x8x4x16xbf16> -> tensor<2x8x4x16xf32>
// CHECK: return %[[W]]
func.func @cast_before_transpose_back(%q: tensor<2x8x4x16xbf16>, %k: tensor<2x8x4x16xbf16>, %v: tensor<2x8x4x16xbf16>, %o: tensor<2x8x4x16xbf16>, %lse: tensor<2x4x8xf32>, %g: tensor<2x8x4x16xbf16>) -> tensor<2x8x4x16xf32> {
  %qt = llmc.transpose %q [0, 2, 1, 3] : (tensor<2x8x4x16xbf16>) -> tensor<2x4x8x16xbf16>
  %kt = llmc.transpose %k [0, 2, 1, 3] : (tensor<2x8x4x16xbf16>) -> tensor<2x4x8x16xbf16>
  %vt = llmc.transpose %v [0, 2, 1, 3] : (tensor<2x8x4x16xbf16>) -> tensor<2x4x8x16xbf16>
  %ot = llmc.transpose %o [0, 2, 1, 3] : (tensor<2x8x4x16xbf16>) -> tensor<2x4x8x16xbf16>
  %gt = llmc.transpose %g [0, 2, 1, 3] : (tensor<2x8x4x16xbf16>) -> tensor<2x4x8x16xbf16>
  %dq, %dk, %dv = llmc.attention_grad %qt, %kt, %vt, %ot, %lse, %gt {causal} : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>, tensor<2x4x8x16xbf16>) -> (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>)
  %w = llmc.cast %dq : tensor<2x4x8x16xbf16> -> tensor<2x4x8x16xf32>
  %back = llmc.transpose %w [0, 2, 1, 3] : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  %dkb = llmc.transpose %dk [0, 2, 1, 3] : (tensor<2x4x8x16xbf16>) -> tensor<2x8x4x16xbf16>
  %dvb = llmc.transpose %dv [0, 2, 1, 3] : (tensor<2x4x8x16xbf16>) -> tensor<2x8x4x16xbf16>
  return %back : tensor<2x8x4x16xf32>
}
