// A one-layer GPT-2 (d 64, 4 heads, vocab 512, batch 2, seq 16) written in
// the composite ops, with embeddings, tied lm_head and the loss, following
// docs/model-ir.md.

func.func @forward(
    %wte: tensor<512x64xf32> {llmc.param = "wte", llmc.init_rule = "normal(0.02)"},
    %wpe: tensor<16x64xf32> {llmc.param = "wpe", llmc.init_rule = "normal(0.02)"},
    %ln1_w: tensor<64xf32> {llmc.param = "h.0.ln_1.weight", llmc.init_rule = "ones"},
    %ln1_b: tensor<64xf32> {llmc.param = "h.0.ln_1.bias", llmc.init_rule = "zeros"},
    %attn_w: tensor<64x192xf32> {llmc.param = "h.0.attn.c_attn.weight", llmc.init_rule = "normal(0.02)"},
    %attn_b: tensor<192xf32> {llmc.param = "h.0.attn.c_attn.bias", llmc.init_rule = "zeros"},
    %proj_w: tensor<64x64xf32> {llmc.param = "h.0.attn.c_proj.weight", llmc.init_rule = "normal(0.02)"},
    %proj_b: tensor<64xf32> {llmc.param = "h.0.attn.c_proj.bias", llmc.init_rule = "zeros"},
    %ln2_w: tensor<64xf32> {llmc.param = "h.0.ln_2.weight", llmc.init_rule = "ones"},
    %ln2_b: tensor<64xf32> {llmc.param = "h.0.ln_2.bias", llmc.init_rule = "zeros"},
    %fc_w: tensor<64x256xf32> {llmc.param = "h.0.mlp.c_fc.weight", llmc.init_rule = "normal(0.02)"},
    %fc_b: tensor<256xf32> {llmc.param = "h.0.mlp.c_fc.bias", llmc.init_rule = "zeros"},
    %fc2_w: tensor<256x64xf32> {llmc.param = "h.0.mlp.c_proj.weight", llmc.init_rule = "normal(0.02)"},
    %fc2_b: tensor<64xf32> {llmc.param = "h.0.mlp.c_proj.bias", llmc.init_rule = "zeros"},
    %lnf_w: tensor<64xf32> {llmc.param = "ln_f.weight", llmc.init_rule = "ones"},
    %lnf_b: tensor<64xf32> {llmc.param = "ln_f.bias", llmc.init_rule = "zeros"},
    %idx: tensor<2x16xi64> {llmc.input = "idx"},
    %tgt: tensor<2x16xi64> {llmc.input = "targets"})
    -> (tensor<f32> {llmc.output = "loss"}) {
  // Embeddings.
  %tok = llmc.gather %wte, %idx axis 0 : (tensor<512x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
  %x0 = llmc.add %tok, %wpe : (tensor<2x16x64xf32>, tensor<16x64xf32>) -> tensor<2x16x64xf32>

  // Attention.
  %h1 = llmc.layer_norm %x0 weight %ln1_w bias %ln1_b : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %qkv0 = llmc.matmul %h1, %attn_w : (tensor<2x16x64xf32>, tensor<64x192xf32>) -> tensor<2x16x192xf32>
  %qkv = llmc.add %qkv0, %attn_b : (tensor<2x16x192xf32>, tensor<192xf32>) -> tensor<2x16x192xf32>
  %q0, %k0, %v0 = llmc.split %qkv axis 2 sizes [64, 64, 64] : (tensor<2x16x192xf32>) -> (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>)
  %q1 = llmc.reshape %q0 : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  %k1 = llmc.reshape %k0 : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  %v1 = llmc.reshape %v0 : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  %q = llmc.transpose %q1 [0, 2, 1, 3] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %k = llmc.transpose %k1 [0, 2, 1, 3] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %v = llmc.transpose %v1 [0, 2, 1, 3] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %o = llmc.attention %q, %k, %v {causal} : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %o1 = llmc.transpose %o [0, 2, 1, 3] : (tensor<2x4x16x16xf32>) -> tensor<2x16x4x16xf32>
  %o2 = llmc.reshape %o1 : tensor<2x16x4x16xf32> -> tensor<2x16x64xf32>
  %p0 = llmc.matmul %o2, %proj_w : (tensor<2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  %p = llmc.add %p0, %proj_b : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %x1 = llmc.add %x0, %p : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>

  // MLP.
  %h2 = llmc.layer_norm %x1 weight %ln2_w bias %ln2_b : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %f0 = llmc.matmul %h2, %fc_w : (tensor<2x16x64xf32>, tensor<64x256xf32>) -> tensor<2x16x256xf32>
  %f1 = llmc.add %f0, %fc_b : (tensor<2x16x256xf32>, tensor<256xf32>) -> tensor<2x16x256xf32>
  %g = llmc.gelu tanh %f1 : tensor<2x16x256xf32>
  %f2 = llmc.matmul %g, %fc2_w : (tensor<2x16x256xf32>, tensor<256x64xf32>) -> tensor<2x16x64xf32>
  %f3 = llmc.add %f2, %fc2_b : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %x2 = llmc.add %x1, %f3 : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>

  // Head: tied lm_head reads wte transposed.
  %hf = llmc.layer_norm %x2 weight %lnf_w bias %lnf_b : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %logits = llmc.matmul %hf, %wte {transpose_rhs} : (tensor<2x16x64xf32>, tensor<512x64xf32>) -> tensor<2x16x512xf32>
  %loss = llmc.cross_entropy mean %logits, %tgt : (tensor<2x16x512xf32>, tensor<2x16xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
