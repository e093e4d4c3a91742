// HF GPT2LMHeadModel (2 layers, 4 heads, tied embeddings, NewGELU, SDPA
// causal with the isnan guard) as the dynamo exporter writes it, imported
// and raised. Raising must not change what the reference evaluator computes,
// and the raised model's loss is PyTorch's.
//
// RUN: llmc import %models/hf_gpt2_dynamo_loss.onnx -o %t.gpt2.mlir
// RUN: llmc-opt --llmc-raise %t.gpt2.mlir -o %t.gpt2.raised.mlir
// RUN: FileCheck %s --check-prefixes=CHECK < %t.gpt2.raised.mlir
// RUN: FileCheck %s --check-prefix=NONE < %t.gpt2.raised.mlir
// RUN: %python %S/Inputs/outputs.py inputs %models/hf_gpt2_dynamo_loss.ref.json > %t.gpt2.in.json
// RUN: llmc run %t.gpt2.mlir --inputs %t.gpt2.in.json -o %t.gpt2.before.json
// RUN: llmc run %t.gpt2.raised.mlir --inputs %t.gpt2.in.json -o %t.gpt2.after.json
// RUN: %python %S/Inputs/outputs.py compare %t.gpt2.before.json %t.gpt2.after.json --rtol 1e-6
// RUN: %python %S/Inputs/outputs.py reference %t.gpt2.after.json %models/hf_gpt2_dynamo_loss.ref.json --rtol 1e-5

// CHECK-LABEL: func.func @forward
// CHECK:     llmc.layer_norm
// CHECK-NOT: llmc.attention
// CHECK:     llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} {causal} : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>)
// CHECK-NOT: llmc.attention
// CHECK:     llmc.layer_norm
// CHECK:     llmc.gelu tanh
// CHECK-NOT: llmc.attention
// CHECK:     llmc.layer_norm
// CHECK-NOT: llmc.gelu
// CHECK:     llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} {causal}
// CHECK-NOT: llmc.attention
// CHECK:     llmc.layer_norm
// CHECK:     llmc.gelu tanh
// CHECK-NOT: llmc.{{attention|gelu}}
// CHECK:     llmc.layer_norm
// CHECK:     llmc.cross_entropy mean
// CHECK-NOT: llmc.{{attention|gelu|layer_norm|cross_entropy}}
// CHECK:     return

// Nothing of the decomposed forms or of the shape arithmetic is left.
// NONE-NOT: llmc.{{softmax|log_softmax|exp|log|pow|sqrt|rsqrt|reciprocal|tanh|erf|sigmoid|neg|isnan|iota|compare|reduce_[a-z]+|where|broadcast_to|slice}}
// NONE-NOT: llmc.{{add|sub|mul|div|max|min}} {{.*}} -> tensor<{{[0-9x]*}}xi{{32|64}}>
