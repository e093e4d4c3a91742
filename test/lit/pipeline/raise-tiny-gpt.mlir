// nanoGPT (2 layers, 4 heads, head_dim 16, tanh GELU, SDPA causal) as the
// dynamo exporter writes it, imported and raised: per layer one layer_norm
// pair, one causal attention and one gelu; the loss is one cross_entropy.
// Raising must not change what the reference evaluator computes.
//
// RUN: llmc import %models/tiny_gpt_dynamo_loss.onnx -o %t.loss.mlir
// RUN: llmc-opt --llmc-raise %t.loss.mlir -o %t.loss.raised.mlir
// RUN: FileCheck %s --check-prefixes=CHECK,LOSS < %t.loss.raised.mlir
// RUN: FileCheck %s --check-prefix=NONE < %t.loss.raised.mlir
// RUN: %python %S/Inputs/outputs.py inputs %models/tiny_gpt_dynamo_loss.ref.json > %t.loss.in.json
// RUN: llmc run %t.loss.mlir --inputs %t.loss.in.json -o %t.loss.before.json
// RUN: llmc run %t.loss.raised.mlir --inputs %t.loss.in.json -o %t.loss.after.json
// RUN: %python %S/Inputs/outputs.py compare %t.loss.before.json %t.loss.after.json --rtol 1e-6
// RUN: %python %S/Inputs/outputs.py reference %t.loss.after.json %models/tiny_gpt_dynamo_loss.ref.json --rtol 1e-5
//
// Dynamic batch and seq, bound at import.
// RUN: llmc import %models/tiny_gpt_dynamo_loss_dyn.onnx --batch 2 --seq 16 -o %t.dyn.mlir
// RUN: llmc-opt --llmc-raise %t.dyn.mlir -o %t.dyn.raised.mlir
// RUN: FileCheck %s --check-prefixes=CHECK,LOSS < %t.dyn.raised.mlir
// RUN: FileCheck %s --check-prefix=NONE < %t.dyn.raised.mlir
// RUN: llmc run %t.dyn.mlir --inputs %t.loss.in.json -o %t.dyn.before.json
// RUN: llmc run %t.dyn.raised.mlir --inputs %t.loss.in.json -o %t.dyn.after.json
// RUN: %python %S/Inputs/outputs.py compare %t.dyn.before.json %t.dyn.after.json --rtol 1e-6
//
// The logits variant: every logit must agree.
// RUN: llmc import %models/tiny_gpt_dynamo_logits.onnx -o %t.logits.mlir
// RUN: llmc-opt --llmc-raise %t.logits.mlir -o %t.logits.raised.mlir
// RUN: FileCheck %s --check-prefixes=CHECK,LOGITS < %t.logits.raised.mlir
// RUN: FileCheck %s --check-prefix=NONE < %t.logits.raised.mlir
// RUN: %python %S/Inputs/outputs.py inputs %models/tiny_gpt_dynamo_logits.ref.json > %t.logits.in.json
// RUN: llmc run %t.logits.mlir --inputs %t.logits.in.json -o %t.logits.before.json
// RUN: llmc run %t.logits.raised.mlir --inputs %t.logits.in.json -o %t.logits.after.json
// RUN: %python %S/Inputs/outputs.py compare %t.logits.before.json %t.logits.after.json --rtol 1e-6
//
// With the exporter's optimizer on, every float constant (the GELU
// coefficients, sqrt(scale), the causal mask) became an initializer. The
// one-element ones are not in torch.export's signature, so llmc imports them
// as constants: GELU raises, and attention gets its default scale. The
// [16, 16] causal mask is an initializer too, but the optimizer recorded
// that it was folded from no parameter (folded_from), so it imports as a
// constant and attention is causal, as in the plain export.
// RUN: llmc import %models/tiny_gpt_dynamo_loss_opt.onnx -o %t.opt.mlir 2>/dev/null
// RUN: llmc-opt --llmc-raise %t.opt.mlir -o %t.opt.raised.mlir
// RUN: FileCheck %s --check-prefix=OPT < %t.opt.raised.mlir
// RUN: llmc run %t.opt.mlir --inputs %t.loss.in.json -o %t.opt.before.json
// RUN: llmc run %t.opt.raised.mlir --inputs %t.loss.in.json -o %t.opt.after.json
// RUN: %python %S/Inputs/outputs.py compare %t.opt.before.json %t.opt.after.json --rtol 1e-6

// OPT-LABEL: func.func @forward
// OPT-NOT: llmc.param = "val_56"
// OPT:     llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} {causal} :
// OPT:     llmc.gelu tanh
// OPT:     llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} {causal} :
// OPT:     llmc.gelu tanh
// OPT-NOT: llmc.tanh

// CHECK-LABEL: func.func @forward
// CHECK:     llmc.layer_norm
// CHECK-NOT: llmc.attention
// CHECK:     llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} {causal} : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>)
// CHECK-NOT: llmc.attention
// CHECK:     llmc.layer_norm
// CHECK-NOT: llmc.attention
// CHECK:     llmc.gelu tanh
// CHECK-NOT: llmc.attention
// CHECK:     llmc.layer_norm
// CHECK-NOT: llmc.gelu
// CHECK:     llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} {causal}
// CHECK-NOT: llmc.attention
// CHECK:     llmc.layer_norm
// CHECK-NOT: llmc.attention
// CHECK:     llmc.gelu tanh
// CHECK-NOT: llmc.{{attention|gelu}}
// CHECK:     llmc.layer_norm
// LOSS:      llmc.cross_entropy mean
// CHECK-NOT: llmc.{{attention|gelu|layer_norm|cross_entropy}}
// CHECK:     return
// LOSS-SAME:   : tensor<f32>
// LOGITS-SAME: : tensor<2x16x512xf32>

// Nothing of the decomposed forms or of the shape arithmetic is left.
// NONE-NOT: llmc.{{softmax|log_softmax|exp|log|pow|sqrt|rsqrt|reciprocal|tanh|erf|sigmoid|neg|isnan|iota|compare|where|reduce_[a-z]+|broadcast_to|slice}}
// NONE-NOT: llmc.{{add|sub|mul|div|max|min}} {{.*}} -> tensor<{{[0-9x]*}}xi{{32|64}}>
