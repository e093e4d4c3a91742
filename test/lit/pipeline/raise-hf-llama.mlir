// HF LlamaForCausalLM (2 layers, 4 query heads, 2 key/value heads, RMSNorm
// eps 1e-5, RoPE, SwiGLU) from both exporters, imported and raised: per
// layer two rms_norms, two rotaries (q and k), one causal grouped-query
// attention on the un-repeated k/v, one silu. Raising must not change what
// the reference evaluator computes, and the raised loss is PyTorch's.
//
// RUN: llmc import %models/hf_llama_dynamo_loss.onnx -o %t.dyn.mlir
// RUN: llmc-opt --llmc-raise %t.dyn.mlir -o %t.dyn.raised.mlir
// RUN: FileCheck %s --check-prefixes=CHECK < %t.dyn.raised.mlir
// RUN: FileCheck %s --check-prefix=NONE < %t.dyn.raised.mlir
// RUN: %python %S/Inputs/outputs.py inputs %models/hf_llama_dynamo_loss.ref.json > %t.dyn.in.json
// RUN: llmc run %t.dyn.mlir --inputs %t.dyn.in.json -o %t.dyn.before.json
// RUN: llmc run %t.dyn.raised.mlir --inputs %t.dyn.in.json -o %t.dyn.after.json
// RUN: %python %S/Inputs/outputs.py compare %t.dyn.before.json %t.dyn.after.json --rtol 1e-6
// RUN: %python %S/Inputs/outputs.py reference %t.dyn.after.json %models/hf_llama_dynamo_loss.ref.json --rtol 1e-5
//
// Dynamic batch and seq, bound at import.
// RUN: llmc import %models/hf_llama_dynamo_loss_dyn.onnx --batch 2 --seq 16 -o %t.dyndyn.mlir
// RUN: llmc-opt --llmc-raise %t.dyndyn.mlir -o %t.dyndyn.raised.mlir
// RUN: FileCheck %s --check-prefixes=CHECK < %t.dyndyn.raised.mlir
// RUN: FileCheck %s --check-prefix=NONE < %t.dyndyn.raised.mlir
// RUN: %python %S/Inputs/outputs.py inputs %models/hf_llama_dynamo_loss.ref.json > %t.dyndyn.in.json
// RUN: llmc run %t.dyndyn.mlir --inputs %t.dyndyn.in.json -o %t.dyndyn.before.json
// RUN: llmc run %t.dyndyn.raised.mlir --inputs %t.dyndyn.in.json -o %t.dyndyn.after.json
// RUN: %python %S/Inputs/outputs.py compare %t.dyndyn.before.json %t.dyndyn.after.json --rtol 1e-6
// RUN: %python %S/Inputs/outputs.py reference %t.dyndyn.after.json %models/hf_llama_dynamo_loss.ref.json --rtol 1e-5
//
// TorchScript: Div(1, Sqrt) in the norm, casts, transpose(k) directly.
// RUN: llmc import %models/hf_llama_torchscript_loss.onnx -o %t.ts.mlir
// RUN: llmc-opt --llmc-raise %t.ts.mlir -o %t.ts.raised.mlir
// RUN: FileCheck %s --check-prefixes=CHECK < %t.ts.raised.mlir
// RUN: FileCheck %s --check-prefix=NONE < %t.ts.raised.mlir
// RUN: %python %S/Inputs/outputs.py inputs %models/hf_llama_torchscript_loss.ref.json > %t.ts.in.json
// RUN: llmc run %t.ts.mlir --inputs %t.ts.in.json -o %t.ts.before.json
// RUN: llmc run %t.ts.raised.mlir --inputs %t.ts.in.json -o %t.ts.after.json
// RUN: %python %S/Inputs/outputs.py compare %t.ts.before.json %t.ts.after.json --rtol 1e-6
// RUN: %python %S/Inputs/outputs.py reference %t.ts.after.json %models/hf_llama_torchscript_loss.ref.json --rtol 1e-5

// CHECK-LABEL: func.func @forward
// CHECK:     llmc.rms_norm %{{[^ ]+}} weight %{{[^ ]+}} {epsilon = 1.000000e-05 : f64}
// CHECK-NOT: llmc.attention
// CHECK:     llmc.rotary
// CHECK-SAME: tensor<2x16x4x16xf32>
// CHECK:     llmc.rotary
// CHECK-SAME: tensor<2x16x2x16xf32>
// CHECK-NOT: llmc.rotary
// CHECK:     llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} {causal} : (tensor<2x4x16x16xf32>, tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>)
// CHECK-NOT: llmc.attention
// CHECK:     llmc.rms_norm %{{[^ ]+}} weight %{{[^ ]+}} {epsilon = 1.000000e-05 : f64}
// CHECK:     llmc.silu
// CHECK-NOT: llmc.{{attention|silu}}
// CHECK:     llmc.rms_norm %{{[^ ]+}} weight %{{[^ ]+}} {epsilon = 1.000000e-05 : f64}
// CHECK:     llmc.rotary
// CHECK:     llmc.rotary
// CHECK-NOT: llmc.rotary
// CHECK:     llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} {causal} : (tensor<2x4x16x16xf32>, tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>)
// CHECK-NOT: llmc.attention
// CHECK:     llmc.rms_norm %{{[^ ]+}} weight %{{[^ ]+}} {epsilon = 1.000000e-05 : f64}
// CHECK:     llmc.silu
// CHECK-NOT: llmc.{{attention|silu|rotary}}
// CHECK:     llmc.rms_norm %{{[^ ]+}} weight %{{[^ ]+}} {epsilon = 1.000000e-05 : f64}
// CHECK:     llmc.cross_entropy mean
// CHECK-NOT: llmc.{{attention|silu|rotary|rms_norm|cross_entropy}}
// CHECK:     return

// Nothing of the decomposed forms or of the shape arithmetic is left (the
// rotary tables stay cos/sin of the position angles; the label shift stays
// a concat and a slice).
// NONE-NOT: llmc.{{softmax|log_softmax|exp|log|pow|sqrt|rsqrt|reciprocal|tanh|erf|sigmoid|neg|isnan|iota|compare|reduce_[a-z]+|where|broadcast_to}}
// NONE-NOT: llmc.{{add|sub|mul|div|max|min}} {{.*}} -> tensor<{{[0-9x]*}}xi{{32|64}}>
