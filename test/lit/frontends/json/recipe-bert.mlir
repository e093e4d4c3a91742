// RUN: llmc recipe bert --size tiny | llmc import --no-raise - | FileCheck %s
// RUN: llmc recipe bert --size tiny | llmc import --no-raise - -o %t.mlir
// RUN: llmc check %t.mlir | FileCheck %s --check-prefix=COUNTS
// RUN: llmc recipe bert --size base --summary | FileCheck %s --check-prefix=BASE
// RUN: llmc recipe bert --size large --summary | FileCheck %s --check-prefix=LARGE

// Tiny BERT masked LM: bidirectional attention (no causal flag), post-LN
// with eps 1e-12, erf GELU, decoder tied to the word embeddings plus a bias,
// cross-entropy over the targets that are not -100 (the op's default).
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[WORD:[^:]+]]: tensor<512x64xf32> {llmc.init_rule = "normal(0.02)", llmc.param = "bert.embeddings.word_embeddings.weight"}
// CHECK-SAME: tensor<2x64xf32> {llmc.init_rule = "normal(0.02)", llmc.param = "bert.embeddings.token_type_embeddings.weight"}
// CHECK-SAME: tensor<64xf32> {llmc.init_rule = "ones", llmc.param = "bert.embeddings.LayerNorm.weight"}
// CHECK-SAME: tensor<64x64xf32> {llmc.init_rule = "normal(0.02)", llmc.param = "bert.encoder.layer.0.attention.self.query.weight"}
// CHECK-SAME: tensor<256xf32> {llmc.init_rule = "zeros", llmc.param = "bert.encoder.layer.0.intermediate.dense.bias"}
// CHECK-SAME: tensor<512xf32> {llmc.init_rule = "zeros", llmc.param = "cls.predictions.bias"}
// CHECK: llmc.layer_norm {{.*}} {epsilon = 9.9999999999999998E-13 : f64}
// CHECK: %[[ATT:.+]] = llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} : (tensor<8x4x64x16xf32>
// CHECK: llmc.gelu erf
// CHECK: %[[DEC:.+]] = llmc.matmul %{{.+}}, %[[WORD]] {transpose_rhs}
// CHECK: %[[LOGITS:.+]] = llmc.add %[[DEC]], %{{.+}} : (tensor<8x64x512xf32>, tensor<512xf32>)
// CHECK: llmc.cross_entropy mean %[[LOGITS]], %{{[^ ]+}} :

// Post-LN: two norms per layer, one after the embeddings, one in the head.
// COUNTS: llmc.attention 2
// COUNTS: llmc.gelu 3
// COUNTS: llmc.layer_norm 6

// BertForMaskedLM base: 109,514,298 parameters (no pooler).
// BASE: parameters: 109,514,298 in 202 tensors
// BASE: dims: batch=8 seq=512
// LARGE: parameters: 335,174,458 in 394 tensors
