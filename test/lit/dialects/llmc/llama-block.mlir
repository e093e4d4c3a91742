// RUN: llmc-opt %s | llmc-opt | FileCheck %s

// One Llama/Qwen decoder layer: RMSNorm, grouped-query attention (8 query
// heads, 2 key/value heads, head_dim 16) with rotary embeddings, and a
// SwiGLU MLP. Batch 2, seq 16, d 128, ffn 256.

// CHECK-LABEL: func.func @llama_layer
func.func @llama_layer(
    %x: tensor<2x16x128xf32> {llmc.input = "hidden"},
    %cos: tensor<16x16xf32> {llmc.input = "cos"},
    %sin: tensor<16x16xf32> {llmc.input = "sin"},
    %in_norm: tensor<128xf32> {llmc.param = "input_layernorm.weight", llmc.init_rule = "ones"},
    %wq: tensor<128x128xf32> {llmc.param = "self_attn.q_proj.weight", llmc.init_rule = "normal(0.02)"},
    %wk: tensor<32x128xf32> {llmc.param = "self_attn.k_proj.weight", llmc.init_rule = "normal(0.02)"},
    %wv: tensor<32x128xf32> {llmc.param = "self_attn.v_proj.weight", llmc.init_rule = "normal(0.02)"},
    %wo: tensor<128x128xf32> {llmc.param = "self_attn.o_proj.weight", llmc.init_rule = "normal(0.02)"},
    %post_norm: tensor<128xf32> {llmc.param = "post_attention_layernorm.weight", llmc.init_rule = "ones"},
    %wgate: tensor<256x128xf32> {llmc.param = "mlp.gate_proj.weight", llmc.init_rule = "normal(0.02)"},
    %wup: tensor<256x128xf32> {llmc.param = "mlp.up_proj.weight", llmc.init_rule = "normal(0.02)"},
    %wdown: tensor<128x256xf32> {llmc.param = "mlp.down_proj.weight", llmc.init_rule = "normal(0.02)"})
    -> (tensor<2x16x128xf32> {llmc.output = "hidden_out"}) {
  // CHECK: llmc.rms_norm %{{.*}} weight %{{.*}} {epsilon = 1.000000e-05 : f64}
  %h = llmc.rms_norm %x weight %in_norm {epsilon = 1.0e-5 : f64} : (tensor<2x16x128xf32>, tensor<128xf32>) -> tensor<2x16x128xf32>
  // nn.Linear weights are [out, in]: x W^T.
  %q0 = llmc.matmul %h, %wq {transpose_rhs} : (tensor<2x16x128xf32>, tensor<128x128xf32>) -> tensor<2x16x128xf32>
  %k0 = llmc.matmul %h, %wk {transpose_rhs} : (tensor<2x16x128xf32>, tensor<32x128xf32>) -> tensor<2x16x32xf32>
  %v0 = llmc.matmul %h, %wv {transpose_rhs} : (tensor<2x16x128xf32>, tensor<32x128xf32>) -> tensor<2x16x32xf32>
  %q1 = llmc.reshape %q0 : tensor<2x16x128xf32> -> tensor<2x16x8x16xf32>
  %k1 = llmc.reshape %k0 : tensor<2x16x32xf32> -> tensor<2x16x2x16xf32>
  %v1 = llmc.reshape %v0 : tensor<2x16x32xf32> -> tensor<2x16x2x16xf32>
  %q2 = llmc.transpose %q1 [0, 2, 1, 3] : (tensor<2x16x8x16xf32>) -> tensor<2x8x16x16xf32>
  %k2 = llmc.transpose %k1 [0, 2, 1, 3] : (tensor<2x16x2x16xf32>) -> tensor<2x2x16x16xf32>
  %v = llmc.transpose %v1 [0, 2, 1, 3] : (tensor<2x16x2x16xf32>) -> tensor<2x2x16x16xf32>
  // CHECK: llmc.rotary
  // CHECK: llmc.rotary
  %q = llmc.rotary %q2, %cos, %sin : (tensor<2x8x16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16x16xf32>
  %k = llmc.rotary %k2, %cos, %sin : (tensor<2x2x16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<2x2x16x16xf32>
  // CHECK: llmc.attention %{{.*}}, %{{.*}}, %{{.*}} {causal} : (tensor<2x8x16x16xf32>, tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>) -> tensor<2x8x16x16xf32>
  %o = llmc.attention %q, %k, %v {causal} : (tensor<2x8x16x16xf32>, tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>) -> tensor<2x8x16x16xf32>
  %o1 = llmc.transpose %o [0, 2, 1, 3] : (tensor<2x8x16x16xf32>) -> tensor<2x16x8x16xf32>
  %o2 = llmc.reshape %o1 : tensor<2x16x8x16xf32> -> tensor<2x16x128xf32>
  %a = llmc.matmul %o2, %wo {transpose_rhs} : (tensor<2x16x128xf32>, tensor<128x128xf32>) -> tensor<2x16x128xf32>
  %x1 = llmc.add %x, %a : (tensor<2x16x128xf32>, tensor<2x16x128xf32>) -> tensor<2x16x128xf32>

  // SwiGLU: down(silu(gate(x)) * up(x)).
  %h2 = llmc.rms_norm %x1 weight %post_norm {epsilon = 1.0e-5 : f64} : (tensor<2x16x128xf32>, tensor<128xf32>) -> tensor<2x16x128xf32>
  %g0 = llmc.matmul %h2, %wgate {transpose_rhs} : (tensor<2x16x128xf32>, tensor<256x128xf32>) -> tensor<2x16x256xf32>
  %u = llmc.matmul %h2, %wup {transpose_rhs} : (tensor<2x16x128xf32>, tensor<256x128xf32>) -> tensor<2x16x256xf32>
  // CHECK: llmc.silu
  %g = llmc.silu %g0 : tensor<2x16x256xf32>
  %gu = llmc.mul %g, %u : (tensor<2x16x256xf32>, tensor<2x16x256xf32>) -> tensor<2x16x256xf32>
  %d = llmc.matmul %gu, %wdown {transpose_rhs} : (tensor<2x16x256xf32>, tensor<128x256xf32>) -> tensor<2x16x128xf32>
  %x2 = llmc.add %x1, %d : (tensor<2x16x128xf32>, tensor<2x16x128xf32>) -> tensor<2x16x128xf32>
  return %x2 : tensor<2x16x128xf32>
}
