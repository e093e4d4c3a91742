// RUN: llmc-opt %s | llmc-opt | FileCheck %s

// One BERT encoder layer (post-LN, bidirectional attention with a padding
// mask, erf GELU) and the masked-LM loss that ignores unmasked positions.
// Batch 2, seq 16, d 64, 4 heads, ffn 256, vocab 512.

// CHECK-LABEL: func.func @bert_layer
func.func @bert_layer(
    %x: tensor<2x16x64xf32> {llmc.input = "hidden"},
    %keep: tensor<2x1x1x16xi1> {llmc.input = "attention_mask"},
    %labels: tensor<2x16xi64> {llmc.input = "labels"},
    %wqkv: tensor<192x64xf32> {llmc.param = "attention.qkv.weight", llmc.init_rule = "normal(0.02)"},
    %wo: tensor<64x64xf32> {llmc.param = "attention.output.dense.weight", llmc.init_rule = "normal(0.02)"},
    %ln1_w: tensor<64xf32> {llmc.param = "attention.output.LayerNorm.weight", llmc.init_rule = "ones"},
    %ln1_b: tensor<64xf32> {llmc.param = "attention.output.LayerNorm.bias", llmc.init_rule = "zeros"},
    %wi: tensor<256x64xf32> {llmc.param = "intermediate.dense.weight", llmc.init_rule = "normal(0.02)"},
    %wo2: tensor<64x256xf32> {llmc.param = "output.dense.weight", llmc.init_rule = "normal(0.02)"},
    %ln2_w: tensor<64xf32> {llmc.param = "output.LayerNorm.weight", llmc.init_rule = "ones"},
    %ln2_b: tensor<64xf32> {llmc.param = "output.LayerNorm.bias", llmc.init_rule = "zeros"},
    %decoder: tensor<512x64xf32> {llmc.param = "cls.predictions.decoder.weight", llmc.init_rule = "normal(0.02)"})
    -> (tensor<f32> {llmc.output = "loss"}) {
  %qkv = llmc.matmul %x, %wqkv {transpose_rhs} : (tensor<2x16x64xf32>, tensor<192x64xf32>) -> tensor<2x16x192xf32>
  %qkv1 = llmc.reshape %qkv : tensor<2x16x192xf32> -> tensor<2x16x3x4x16xf32>
  %qkv2 = llmc.transpose %qkv1 [2, 0, 3, 1, 4] : (tensor<2x16x3x4x16xf32>) -> tensor<3x2x4x16x16xf32>
  %parts:3 = llmc.split %qkv2 axis 0 sizes [1, 1, 1] : (tensor<3x2x4x16x16xf32>) -> (tensor<1x2x4x16x16xf32>, tensor<1x2x4x16x16xf32>, tensor<1x2x4x16x16xf32>)
  %q = llmc.reshape %parts#0 : tensor<1x2x4x16x16xf32> -> tensor<2x4x16x16xf32>
  %k = llmc.reshape %parts#1 : tensor<1x2x4x16x16xf32> -> tensor<2x4x16x16xf32>
  %v = llmc.reshape %parts#2 : tensor<1x2x4x16x16xf32> -> tensor<2x4x16x16xf32>
  // Bidirectional: no causal flag, an i1 keep-mask over key positions.
  // CHECK: llmc.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x1x1x16xi1>) -> tensor<2x4x16x16xf32>
  %o = llmc.attention %q, %k, %v mask %keep : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x1x1x16xi1>) -> tensor<2x4x16x16xf32>
  %o1 = llmc.transpose %o [0, 2, 1, 3] : (tensor<2x4x16x16xf32>) -> tensor<2x16x4x16xf32>
  %o2 = llmc.reshape %o1 : tensor<2x16x4x16xf32> -> tensor<2x16x64xf32>
  %a = llmc.matmul %o2, %wo {transpose_rhs} : (tensor<2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  %r1 = llmc.add %x, %a : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  // Post-LN: the norm follows the residual add.
  // CHECK: llmc.layer_norm %{{.*}} weight %{{.*}} bias %{{.*}} {epsilon = 9.9999999999999998E-13 : f64}
  %h1 = llmc.layer_norm %r1 weight %ln1_w bias %ln1_b {epsilon = 1.0e-12 : f64} : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %i0 = llmc.matmul %h1, %wi {transpose_rhs} : (tensor<2x16x64xf32>, tensor<256x64xf32>) -> tensor<2x16x256xf32>
  // CHECK: llmc.gelu erf
  %i1 = llmc.gelu erf %i0 : tensor<2x16x256xf32>
  %m = llmc.matmul %i1, %wo2 {transpose_rhs} : (tensor<2x16x256xf32>, tensor<64x256xf32>) -> tensor<2x16x64xf32>
  %r2 = llmc.add %h1, %m : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  %h2 = llmc.layer_norm %r2 weight %ln2_w bias %ln2_b {epsilon = 1.0e-12 : f64} : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %logits = llmc.matmul %h2, %decoder {transpose_rhs} : (tensor<2x16x64xf32>, tensor<512x64xf32>) -> tensor<2x16x512xf32>
  // Masked-LM: labels are -100 where the token was not masked.
  // CHECK: llmc.cross_entropy mean %{{.*}}, %{{.*}} : (tensor<2x16x512xf32>, tensor<2x16xi64>) -> tensor<f32>
  %loss = llmc.cross_entropy mean %logits, %labels {ignore_index = -100 : i64} : (tensor<2x16x512xf32>, tensor<2x16xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
