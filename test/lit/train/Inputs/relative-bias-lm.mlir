// A one-layer byte LM whose attention scores carry an MPNet-style learned
// relative-position bias: an embedding of relative-distance buckets
// ([T, S, H] -> [1, H, T, S], expanded over the batch) added to the scaled
// scores, then a constant causal mask. It raises to llmc.attention with the
// mask operand bias + causal, whose gradient trains the bias table
// (docs/training-ir.md). Batch 2 x seq 16, d 16, 2 heads of 8.
func.func @forward(
    %emb: tensor<256x16xf32> {llmc.param = "emb", llmc.init_rule = "normal(0.02)"},
    %wq: tensor<16x16xf32> {llmc.param = "wq", llmc.init_rule = "normal(0.02)"},
    %wk: tensor<16x16xf32> {llmc.param = "wk", llmc.init_rule = "normal(0.02)"},
    %wv: tensor<16x16xf32> {llmc.param = "wv", llmc.init_rule = "normal(0.02)"},
    %wo: tensor<16x16xf32> {llmc.param = "wo", llmc.init_rule = "normal(0.02)"},
    %rel: tensor<31x2xf32> {llmc.param = "relative_attention_bias", llmc.init_rule = "normal(0.02)"},
    %head: tensor<16x256xf32> {llmc.param = "head", llmc.init_rule = "normal(0.02)"},
    %idx: tensor<2x16xi64> {llmc.input = "idx"},
    %tgt: tensor<2x16xi64> {llmc.input = "targets"})
    -> (tensor<f32> {llmc.output = "loss"}) {
  %buckets = llmc.constant dense<[[15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30], [14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29], [13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28], [12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27], [11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26], [10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25], [9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24], [8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23], [7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22], [6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21], [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20], [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19], [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18], [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]]> : tensor<16x16xi64>
  %causal = llmc.constant dense<[[[[0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x16x16xf32>
  %sqrtd = llmc.constant dense<2.82842708> : tensor<f32>
  %h = llmc.gather %emb, %idx axis 0 : (tensor<256x16xf32>, tensor<2x16xi64>) -> tensor<2x16x16xf32>
  %q2 = llmc.matmul %h, %wq : (tensor<2x16x16xf32>, tensor<16x16xf32>) -> tensor<2x16x16xf32>
  %k2 = llmc.matmul %h, %wk : (tensor<2x16x16xf32>, tensor<16x16xf32>) -> tensor<2x16x16xf32>
  %v2 = llmc.matmul %h, %wv : (tensor<2x16x16xf32>, tensor<16x16xf32>) -> tensor<2x16x16xf32>
  %q3 = llmc.reshape %q2 : tensor<2x16x16xf32> -> tensor<2x16x2x8xf32>
  %k3 = llmc.reshape %k2 : tensor<2x16x16xf32> -> tensor<2x16x2x8xf32>
  %v3 = llmc.reshape %v2 : tensor<2x16x16xf32> -> tensor<2x16x2x8xf32>
  %q = llmc.transpose %q3 [0, 2, 1, 3] : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32>
  %k = llmc.transpose %k3 [0, 2, 1, 3] : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32>
  %v = llmc.transpose %v3 [0, 2, 1, 3] : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32>
  %g = llmc.gather %rel, %buckets axis 0 : (tensor<31x2xf32>, tensor<16x16xi64>) -> tensor<16x16x2xf32>
  %gt = llmc.transpose %g [2, 0, 1] : (tensor<16x16x2xf32>) -> tensor<2x16x16xf32>
  %g4 = llmc.reshape %gt : tensor<2x16x16xf32> -> tensor<1x2x16x16xf32>
  %bias = llmc.broadcast_to %g4 : tensor<1x2x16x16xf32> -> tensor<2x2x16x16xf32>
  %kt = llmc.transpose %k [0, 1, 3, 2] : (tensor<2x2x16x8xf32>) -> tensor<2x2x8x16xf32>
  %qk = llmc.matmul %q, %kt : (tensor<2x2x16x8xf32>, tensor<2x2x8x16xf32>) -> tensor<2x2x16x16xf32>
  %s = llmc.div %qk, %sqrtd : (tensor<2x2x16x16xf32>, tensor<f32>) -> tensor<2x2x16x16xf32>
  %sb = llmc.add %s, %bias : (tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>) -> tensor<2x2x16x16xf32>
  %sm = llmc.add %sb, %causal : (tensor<2x2x16x16xf32>, tensor<1x1x16x16xf32>) -> tensor<2x2x16x16xf32>
  %p = llmc.softmax %sm {axis = -1 : i64} : tensor<2x2x16x16xf32>
  %o = llmc.matmul %p, %v : (tensor<2x2x16x16xf32>, tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  %ot = llmc.transpose %o [0, 2, 1, 3] : (tensor<2x2x16x8xf32>) -> tensor<2x16x2x8xf32>
  %o2 = llmc.reshape %ot : tensor<2x16x2x8xf32> -> tensor<2x16x16xf32>
  %proj = llmc.matmul %o2, %wo : (tensor<2x16x16xf32>, tensor<16x16xf32>) -> tensor<2x16x16xf32>
  %x = llmc.add %h, %proj : (tensor<2x16x16xf32>, tensor<2x16x16xf32>) -> tensor<2x16x16xf32>
  %logits = llmc.matmul %x, %head : (tensor<2x16x16xf32>, tensor<16x256xf32>) -> tensor<2x16x256xf32>
  %loss = llmc.cross_entropy mean %logits, %tgt : (tensor<2x16x256xf32>, tensor<2x16xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
