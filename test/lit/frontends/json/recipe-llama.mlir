// RUN: llmc recipe llama --size tiny | llmc import --no-raise - | FileCheck %s
// RUN: llmc recipe llama --size tiny | llmc import --no-raise - -o %t.mlir
// RUN: llmc check %t.mlir | FileCheck %s --check-prefix=COUNTS
// RUN: llmc recipe llama --size 1B --summary | FileCheck %s --check-prefix=S1B
// RUN: llmc recipe llama --size 1B | llmc import --no-raise - --shape batch=1 --shape seq=8 | FileCheck %s --check-prefix=ROPE1B
// RUN: llmc recipe llama --size 8B --summary | FileCheck %s --check-prefix=S8B

// Tiny Llama: 4 query heads over 2 kv heads (GQA), RMSNorm eps 1e-5, RoPE
// tables computed from iota positions and inverse frequencies (theta 1e4),
// SwiGLU, tied lm_head.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[EMB:[^:]+]]: tensor<512x64xf32> {llmc.init_rule = "normal(0.02)", llmc.param = "model.embed_tokens.weight"}
// CHECK-SAME: tensor<64xf32> {llmc.init_rule = "ones", llmc.param = "model.layers.0.input_layernorm.weight"}
// CHECK-SAME: tensor<64x64xf32> {llmc.init_rule = "normal(0.02)", llmc.param = "model.layers.0.self_attn.q_proj.weight"}
// CHECK-SAME: tensor<32x64xf32> {llmc.init_rule = "normal(0.02)", llmc.param = "model.layers.0.self_attn.k_proj.weight"}
// CHECK-SAME: tensor<192x64xf32> {llmc.init_rule = "normal(0.02)", llmc.param = "model.layers.0.mlp.gate_proj.weight"}
// CHECK-SAME: tensor<64x192xf32> {llmc.init_rule = "normal(0.02)", llmc.param = "model.layers.0.mlp.down_proj.weight"}
// CHECK-SAME: tensor<64xf32> {llmc.init_rule = "ones", llmc.param = "model.norm.weight"}
// CHECK-SAME: tensor<8x64xi64> {llmc.input = "idx"}
// CHECK: %[[INV:.+]] = llmc.constant dense<[1.000000e+00, 0.316227764, 1.000000e-01, {{.*}}]> : tensor<8xf32>
// CHECK: %[[POS:.+]] = llmc.iota dim 0 : tensor<64x1xf32>
// CHECK: %[[FREQS:.+]] = llmc.mul %[[POS]], %[[INV]] : (tensor<64x1xf32>, tensor<8xf32>) -> tensor<64x8xf32>
// CHECK: %[[ANG:.+]] = llmc.concat %[[FREQS]], %[[FREQS]] axis 1 : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x16xf32>
// CHECK: %[[COS:.+]] = llmc.cos %[[ANG]]
// CHECK: %[[SIN:.+]] = llmc.sin %[[ANG]]
// CHECK: llmc.rms_norm {{.*}} {epsilon = 1.000000e-05 : f64}
// CHECK: %[[Q:.+]] = llmc.rotary %{{.+}}, %[[COS]], %[[SIN]] : (tensor<8x4x64x16xf32>, tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<8x4x64x16xf32>
// CHECK: %[[K:.+]] = llmc.rotary %{{.+}}, %[[COS]], %[[SIN]] : (tensor<8x2x64x16xf32>
// CHECK: llmc.attention %[[Q]], %[[K]], %{{.+}} {causal} : (tensor<8x4x64x16xf32>, tensor<8x2x64x16xf32>, tensor<8x2x64x16xf32>) -> tensor<8x4x64x16xf32>
// CHECK: %[[GATE:.+]] = llmc.matmul {{.*}} -> tensor<8x64x192xf32>
// CHECK: %[[UP:.+]] = llmc.matmul {{.*}} -> tensor<8x64x192xf32>
// CHECK: %[[ACT:.+]] = llmc.silu %[[GATE]]
// CHECK: llmc.mul %[[ACT]], %[[UP]]
// CHECK: llmc.matmul %{{.+}}, %[[EMB]] {transpose_rhs} {{.*}} -> tensor<8x64x512xf32>
// CHECK: llmc.cross_entropy mean

// COUNTS: llmc.attention 2
// COUNTS: llmc.rms_norm 5
// COUNTS: llmc.rotary 4
// COUNTS: llmc.silu 2

// Llama 3.2 1B: 1,235,814,400 parameters with the tied embedding.
// S1B: parameters: 1,235,814,400 in 146 tensors
// S1B: dims: batch=8 seq=1024
// S1B: attention 16
// S1B: rms_norm 33
// The llama3 frequency scaling (factor 32) divides the low frequencies:
// theta 5e5 gives 3.01e-6 for the last pair, 9.42e-8 after scaling.
// ROPE1B: llmc.constant dense<[1.000000e+00, 0.663601219, {{.*}}, 9.41830649E-8]> : tensor<32xf32>
// ROPE1B: llmc.attention {{.*}} : (tensor<1x32x8x64xf32>, tensor<1x8x8x64xf32>, tensor<1x8x8x64xf32>) -> tensor<1x32x8x64xf32>
// S8B: parameters: 8,030,261,248 in 291 tensors
