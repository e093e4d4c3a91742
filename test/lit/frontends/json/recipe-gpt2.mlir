// RUN: llmc recipe gpt2 --size tiny | llmc import --no-raise - | FileCheck %s
// RUN: llmc recipe gpt2 --size tiny -o %t.json
// RUN: llmc import --no-raise %t.json -o %t.mlir
// RUN: llmc check %t.mlir | FileCheck %s --check-prefix=COUNTS
// RUN: llmc import --no-raise %t.json --shape batch=2 --shape seq=16 | FileCheck %s --check-prefix=SHAPE
// RUN: llmc recipe gpt2 --size tiny --summary | FileCheck %s --check-prefix=TINY
// RUN: llmc recipe gpt2 --size 124M --summary | FileCheck %s --check-prefix=S124M
// RUN: llmc recipe gpt2 --size 124M | llmc import --no-raise - -o %t.124m.mlir
// RUN: llmc check %t.124m.mlir | FileCheck %s --check-prefix=C124M
// RUN: llmc recipe gpt2 --size 350M --summary | FileCheck %s --check-prefix=S350M
// RUN: llmc recipe gpt2 --size 774M --summary | FileCheck %s --check-prefix=S774M
// RUN: llmc recipe gpt2 --size 1.5B --summary | FileCheck %s --check-prefix=S1558M

// The tiny GPT-2: nanoGPT's parameter names and init, the c_proj residual
// init N(0, 0.02 / sqrt(2 * 2 layers)), a causal attention per layer in
// [B, H, T, D] layout, tanh GELU, lm_head tied to wte.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[WTE:[^:]+]]: tensor<512x64xf32> {llmc.init_rule = "normal(0.02)", llmc.param = "transformer.wte.weight"}
// CHECK-SAME: tensor<64x64xf32> {llmc.init_rule = "normal(0.02)", llmc.param = "transformer.wpe.weight"}
// CHECK-SAME: tensor<64xf32> {llmc.init_rule = "ones", llmc.param = "transformer.h.0.ln_1.weight"}
// CHECK-SAME: tensor<64xf32> {llmc.init_rule = "zeros", llmc.param = "transformer.h.0.ln_1.bias"}
// CHECK-SAME: tensor<192x64xf32> {llmc.init_rule = "normal(0.02)", llmc.param = "transformer.h.0.attn.c_attn.weight"}
// CHECK-SAME: tensor<64x64xf32> {llmc.init_rule = "normal(0.01)", llmc.param = "transformer.h.0.attn.c_proj.weight"}
// CHECK-SAME: tensor<64x256xf32> {llmc.init_rule = "normal(0.01)", llmc.param = "transformer.h.0.mlp.c_proj.weight"}
// CHECK-SAME: %[[IDX:[^:]+]]: tensor<8x64xi64> {llmc.input = "idx"}
// CHECK-SAME: %[[TGT:[^:]+]]: tensor<8x64xi64> {llmc.input = "targets"}
// CHECK-SAME: -> (tensor<f32> {llmc.output = "loss"})
// CHECK: llmc.gather %[[WTE]], %[[IDX]] axis 0
// CHECK: llmc.layer_norm %{{.+}} weight %{{.+}} bias %{{.+}} : (tensor<8x64x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<8x64x64xf32>
// CHECK: llmc.attention {{.*}} {causal} : (tensor<8x4x64x16xf32>, tensor<8x4x64x16xf32>, tensor<8x4x64x16xf32>) -> tensor<8x4x64x16xf32>
// CHECK: llmc.gelu tanh {{.*}} : tensor<8x64x256xf32>
// CHECK: %[[LOGITS:.+]] = llmc.matmul %{{.+}}, %[[WTE]] {transpose_rhs} : (tensor<8x64x64xf32>, tensor<512x64xf32>) -> tensor<8x64x512xf32>
// CHECK: %[[LOSS:.+]] = llmc.cross_entropy mean %[[LOGITS]], %[[TGT]]
// CHECK: return %[[LOSS]]

// One attention and gelu per layer, one layer_norm per norm (2 per layer +
// ln_f), one embedding gather and one loss.
// COUNTS: llmc.attention 2
// COUNTS: llmc.cross_entropy 1
// COUNTS: llmc.gather 1
// COUNTS: llmc.gelu 2
// COUNTS: llmc.layer_norm 5
// COUNTS: llmc.matmul 9

// SHAPE: llmc.dims = {batch = 2 : i64, seq = 16 : i64}
// SHAPE: llmc.attention {{.*}} -> tensor<2x4x16x16xf32>

// 136,960 is also the parameter count of test/models' hf_gpt2 tiny export.
// TINY: parameters: 136,960 in 28 tensors
// TINY: dims: batch=8 seq=64
// S124M: gpt2-124M: GPT-2 124M: 12 layers, d_model 768, 12 heads, vocab 50257, n_ctx 1024
// S124M: parameters: 124,439,808 in 148 tensors
// S124M: dims: batch=8 seq=1024
// S124M: attention 12
// S124M: layer_norm 25
// C124M: llmc.attention 12
// C124M: llmc.layer_norm 25
// S350M: parameters: 354,823,168 in 292 tensors
// S774M: parameters: 774,030,080 in 436 tensors
// S1558M: parameters: 1,557,611,200 in 580 tensors
