// RUN: llmc-opt %s | llmc-opt | FileCheck %s
// RUN: llmc-opt %s --mlir-print-op-generic | llmc-opt | FileCheck %s

// Round trip of matmul and the composite transformer ops.

// CHECK-LABEL: func.func @matmul
func.func @matmul(%x: tensor<8x16x64xf32>, %w: tensor<192x64xf32>, %a: tensor<2x4x8x16xbf16>,
                  %b: tensor<4x16x32xbf16>, %t: tensor<64x8x16xf32>) -> tensor<8x16x192xf32> {
  // CHECK: llmc.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<8x16x64xf32>, tensor<192x64xf32>) -> tensor<8x16x192xf32>
  %0 = llmc.matmul %x, %w {transpose_rhs} : (tensor<8x16x64xf32>, tensor<192x64xf32>) -> tensor<8x16x192xf32>
  // Batch dims broadcast: [2, 4] with [4].
  // CHECK: llmc.matmul %{{.*}}, %{{.*}} : (tensor<2x4x8x16xbf16>, tensor<4x16x32xbf16>) -> tensor<2x4x8x32xbf16>
  %1 = llmc.matmul %a, %b : (tensor<2x4x8x16xbf16>, tensor<4x16x32xbf16>) -> tensor<2x4x8x32xbf16>
  // CHECK: llmc.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<64x8x16xf32>, tensor<64x8x16xf32>) -> tensor<64x16x16xf32>
  %2 = llmc.matmul %t, %t {transpose_lhs} : (tensor<64x8x16xf32>, tensor<64x8x16xf32>) -> tensor<64x16x16xf32>
  return %0 : tensor<8x16x192xf32>
}

// CHECK-LABEL: func.func @activations
func.func @activations(%x: tensor<8x16x256xf32>) -> tensor<8x16x256xf32> {
  // CHECK: llmc.gelu tanh %{{.*}} : tensor<8x16x256xf32>
  %0 = llmc.gelu tanh %x : tensor<8x16x256xf32>
  // CHECK: llmc.gelu erf %{{.*}} : tensor<8x16x256xf32>
  %1 = llmc.gelu erf %0 : tensor<8x16x256xf32>
  // CHECK: llmc.silu %{{.*}} : tensor<8x16x256xf32>
  %2 = llmc.silu %1 : tensor<8x16x256xf32>
  return %2 : tensor<8x16x256xf32>
}

// CHECK-LABEL: func.func @norms
func.func @norms(%x: tensor<8x16x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>,
                 %w2: tensor<16x64xf32>) -> tensor<8x16x64xf32> {
  // CHECK: llmc.layer_norm %{{.*}} weight %{{.*}} bias %{{.*}} : (tensor<8x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<8x16x64xf32>
  %0 = llmc.layer_norm %x weight %w bias %b : (tensor<8x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<8x16x64xf32>
  // CHECK: llmc.layer_norm %{{.*}} {epsilon = 9.9999999999999998E-13 : f64} : (tensor<8x16x64xf32>) -> tensor<8x16x64xf32>
  %1 = llmc.layer_norm %0 {epsilon = 1.0e-12 : f64} : (tensor<8x16x64xf32>) -> tensor<8x16x64xf32>
  // Normalizing over the last two dims takes a [16, 64] weight.
  // CHECK: llmc.layer_norm %{{.*}} weight %{{.*}} {axis = 1 : i64} : (tensor<8x16x64xf32>, tensor<16x64xf32>) -> tensor<8x16x64xf32>
  %2 = llmc.layer_norm %1 weight %w2 {axis = 1 : i64} : (tensor<8x16x64xf32>, tensor<16x64xf32>) -> tensor<8x16x64xf32>
  // CHECK: llmc.rms_norm %{{.*}} weight %{{.*}} {epsilon = 1.000000e-05 : f64} : (tensor<8x16x64xf32>, tensor<64xf32>) -> tensor<8x16x64xf32>
  %3 = llmc.rms_norm %2 weight %w {epsilon = 1.0e-5 : f64} : (tensor<8x16x64xf32>, tensor<64xf32>) -> tensor<8x16x64xf32>
  // CHECK: llmc.rms_norm %{{.*}} : (tensor<8x16x64xf32>) -> tensor<8x16x64xf32>
  %4 = llmc.rms_norm %3 : (tensor<8x16x64xf32>) -> tensor<8x16x64xf32>
  return %4 : tensor<8x16x64xf32>
}

// CHECK-LABEL: func.func @softmaxes
func.func @softmaxes(%x: tensor<8x4x16x16xf32>) -> tensor<8x4x16x16xf32> {
  // CHECK: llmc.softmax %{{.*}} : tensor<8x4x16x16xf32>
  %0 = llmc.softmax %x : tensor<8x4x16x16xf32>
  // CHECK: llmc.log_softmax %{{.*}} {axis = 1 : i64} : tensor<8x4x16x16xf32>
  %1 = llmc.log_softmax %0 {axis = 1 : i64} : tensor<8x4x16x16xf32>
  return %1 : tensor<8x4x16x16xf32>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x32xf32>,
                     %fmask: tensor<16x16xf32>, %bmask: tensor<2x1x1x16xi1>) -> tensor<2x8x16x32xf32> {
  // Grouped-query: 8 query heads read 2 key/value heads.
  // CHECK: llmc.attention %{{.*}}, %{{.*}}, %{{.*}} {causal} : (tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>) -> tensor<2x8x16x32xf32>
  %0 = llmc.attention %q, %k, %v {causal} : (tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>) -> tensor<2x8x16x32xf32>
  // CHECK: llmc.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} {scale = 1.250000e-01 : f64} : (tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>, tensor<16x16xf32>) -> tensor<2x8x16x32xf32>
  %1 = llmc.attention %q, %k, %v mask %fmask {scale = 0.125 : f64} : (tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>, tensor<16x16xf32>) -> tensor<2x8x16x32xf32>
  // A BERT padding mask: i1, true where a key position is kept.
  // CHECK: llmc.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} : (tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>, tensor<2x1x1x16xi1>) -> tensor<2x8x16x32xf32>
  %2 = llmc.attention %q, %k, %v mask %bmask : (tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>, tensor<2x1x1x16xi1>) -> tensor<2x8x16x32xf32>
  return %0 : tensor<2x8x16x32xf32>
}

// CHECK-LABEL: func.func @rotary
func.func @rotary(%q: tensor<2x8x16x64xf32>, %cos: tensor<16x64xf32>, %sin: tensor<16x64xf32>,
                  %cp: tensor<2x1x16x32xf32>, %sp: tensor<2x1x16x32xf32>) -> tensor<2x8x16x64xf32> {
  // CHECK: llmc.rotary %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x8x16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<2x8x16x64xf32>
  %0 = llmc.rotary %q, %cos, %sin : (tensor<2x8x16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<2x8x16x64xf32>
  // Partial rotary (32 of 64 features) with per-batch tables, GPT-J pairing.
  // CHECK: llmc.rotary %{{.*}}, %{{.*}}, %{{.*}} {interleaved} : (tensor<2x8x16x64xf32>, tensor<2x1x16x32xf32>, tensor<2x1x16x32xf32>) -> tensor<2x8x16x64xf32>
  %1 = llmc.rotary %0, %cp, %sp {interleaved} : (tensor<2x8x16x64xf32>, tensor<2x1x16x32xf32>, tensor<2x1x16x32xf32>) -> tensor<2x8x16x64xf32>
  return %1 : tensor<2x8x16x64xf32>
}

// CHECK-LABEL: func.func @cross_entropy
func.func @cross_entropy(%logits: tensor<2x16x512xf32>, %tgt: tensor<2x16xi64>,
                         %tgt32: tensor<2x16xi32>) -> tensor<f32> {
  // CHECK: llmc.cross_entropy mean %{{.*}}, %{{.*}} : (tensor<2x16x512xf32>, tensor<2x16xi64>) -> tensor<f32>
  %0 = llmc.cross_entropy mean %logits, %tgt : (tensor<2x16x512xf32>, tensor<2x16xi64>) -> tensor<f32>
  // CHECK: llmc.cross_entropy sum %{{.*}}, %{{.*}} {ignore_index = 0 : i64} : (tensor<2x16x512xf32>, tensor<2x16xi32>) -> tensor<f32>
  %1 = llmc.cross_entropy sum %logits, %tgt32 {ignore_index = 0 : i64} : (tensor<2x16x512xf32>, tensor<2x16xi32>) -> tensor<f32>
  // CHECK: llmc.cross_entropy none %{{.*}}, %{{.*}} : (tensor<2x16x512xf32>, tensor<2x16xi64>) -> tensor<2x16xf32>
  %2 = llmc.cross_entropy none %logits, %tgt : (tensor<2x16x512xf32>, tensor<2x16xi64>) -> tensor<2x16xf32>
  return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @dropout_mask
func.func @dropout_mask(%step: tensor<i64>) -> (tensor<8x16xf32>, tensor<4xbf16>) {
  // CHECK: llmc.dropout_mask %{{.*}} {offset = 3 : i64, ratio = 1.000000e-01 : f64, seed = 42 : i64} : (tensor<i64>) -> tensor<8x16xf32>
  %0 = llmc.dropout_mask %step {ratio = 0.1 : f64, seed = 42 : i64, offset = 3 : i64} : (tensor<i64>) -> tensor<8x16xf32>
  // Without a step (a @forward before llmc-append-optimizer): step 0.
  // CHECK: llmc.dropout_mask {offset = 0 : i64, ratio = 5.000000e-01 : f64, seed = 0 : i64} : () -> tensor<4xbf16>
  %1 = llmc.dropout_mask {ratio = 0.5 : f64, seed = 0 : i64, offset = 0 : i64} : () -> tensor<4xbf16>
  return %0, %1 : tensor<8x16xf32>, tensor<4xbf16>
}
