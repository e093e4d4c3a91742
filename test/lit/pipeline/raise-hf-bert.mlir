// HF BertForMaskedLM (2 layers, 4 heads, erf GELU, bidirectional attention
// with the additive padding mask built from the `mask` input, MLM loss over
// the targets that are not -100) from both exporters, imported and raised:
// per layer one attention whose mask is that additive mask (not causal),
// one gelu erf, two layer_norms (dynamo has Gelu and LayerNormalization
// already; TorchScript writes GELU with Erf). Raising must not change what
// the reference evaluator computes, and the raised loss is PyTorch's.
//
// RUN: llmc import %models/hf_bert_dynamo_loss.onnx -o %t.dyn.mlir
// RUN: llmc-opt --llmc-raise %t.dyn.mlir -o %t.dyn.raised.mlir
// RUN: FileCheck %s --check-prefixes=CHECK < %t.dyn.raised.mlir
// RUN: FileCheck %s --check-prefix=NONE < %t.dyn.raised.mlir
// RUN: %python %S/Inputs/outputs.py inputs %models/hf_bert_dynamo_loss.ref.json > %t.dyn.in.json
// RUN: llmc run %t.dyn.mlir --inputs %t.dyn.in.json -o %t.dyn.before.json
// RUN: llmc run %t.dyn.raised.mlir --inputs %t.dyn.in.json -o %t.dyn.after.json
// RUN: %python %S/Inputs/outputs.py compare %t.dyn.before.json %t.dyn.after.json --rtol 1e-6
// RUN: %python %S/Inputs/outputs.py reference %t.dyn.after.json %models/hf_bert_dynamo_loss.ref.json --rtol 1e-5
//
// RUN: llmc import %models/hf_bert_torchscript_loss.onnx -o %t.ts.mlir
// RUN: llmc-opt --llmc-raise %t.ts.mlir -o %t.ts.raised.mlir
// RUN: FileCheck %s --check-prefixes=CHECK < %t.ts.raised.mlir
// RUN: FileCheck %s --check-prefix=NONE < %t.ts.raised.mlir
// RUN: %python %S/Inputs/outputs.py inputs %models/hf_bert_torchscript_loss.ref.json > %t.ts.in.json
// RUN: llmc run %t.ts.mlir --inputs %t.ts.in.json -o %t.ts.before.json
// RUN: llmc run %t.ts.raised.mlir --inputs %t.ts.in.json -o %t.ts.after.json
// RUN: %python %S/Inputs/outputs.py compare %t.ts.before.json %t.ts.after.json --rtol 1e-6
// RUN: %python %S/Inputs/outputs.py reference %t.ts.after.json %models/hf_bert_torchscript_loss.ref.json --rtol 1e-5
//
// Dynamic batch and seq, bound at import.
// RUN: llmc import %models/hf_bert_torchscript_loss_dyn.onnx --batch 2 --seq 16 -o %t.tsdyn.mlir
// RUN: llmc-opt --llmc-raise %t.tsdyn.mlir -o %t.tsdyn.raised.mlir
// RUN: FileCheck %s --check-prefixes=CHECK < %t.tsdyn.raised.mlir
// RUN: FileCheck %s --check-prefix=NONE < %t.tsdyn.raised.mlir
// RUN: %python %S/Inputs/outputs.py inputs %models/hf_bert_torchscript_loss.ref.json > %t.tsdyn.in.json
// RUN: llmc run %t.tsdyn.mlir --inputs %t.tsdyn.in.json -o %t.tsdyn.before.json
// RUN: llmc run %t.tsdyn.raised.mlir --inputs %t.tsdyn.in.json -o %t.tsdyn.after.json
// RUN: %python %S/Inputs/outputs.py compare %t.tsdyn.before.json %t.tsdyn.after.json --rtol 1e-6
// RUN: %python %S/Inputs/outputs.py reference %t.tsdyn.after.json %models/hf_bert_torchscript_loss.ref.json --rtol 1e-5

// CHECK-LABEL: func.func @forward
// CHECK:     llmc.layer_norm
// CHECK:     %[[MASK:.+]] = llmc.where %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} : (tensor<2x1x16x16xi1>, {{.*}}) -> tensor<2x1x16x16xf32>
// CHECK-NOT: llmc.attention
// CHECK:     llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} mask %[[MASK]] : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x1x16x16xf32>)
// CHECK-NOT: llmc.attention
// CHECK:     llmc.layer_norm
// CHECK:     llmc.gelu erf
// CHECK:     llmc.layer_norm
// CHECK-NOT: llmc.gelu
// CHECK:     llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} mask %[[MASK]] :
// CHECK-NOT: llmc.attention
// CHECK:     llmc.layer_norm
// CHECK:     llmc.gelu erf
// CHECK:     llmc.layer_norm
// The MLM head's transform: dense, gelu, layer_norm.
// CHECK:     llmc.gelu erf
// CHECK:     llmc.layer_norm
// CHECK:     llmc.cross_entropy mean
// CHECK-NOT: llmc.{{attention|gelu|layer_norm|cross_entropy}}
// CHECK:     return

// Nothing of the decomposed forms or of the shape arithmetic is left; the
// mask construction (cast, gather, where) stays: it computes on the input.
// NONE-NOT: llmc.{{softmax|log_softmax|exp|log|pow|sqrt|rsqrt|reciprocal|tanh|erf|sigmoid|neg|isnan|iota|compare|reduce_[a-z]+|gather_elements|broadcast_to|slice}}
// NONE-NOT: llmc.{{add|sub|mul|div|max|min}} {{.*}} -> tensor<{{[0-9x]*}}xi{{32|64}}>
