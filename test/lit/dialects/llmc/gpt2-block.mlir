// RUN: llmc-opt %models/gpt2-tiny.mlir | llmc-opt | FileCheck %s

// The bundled one-layer GPT-2 (test/models/gpt2-tiny.mlir) round-trips with
// its parameter/input/output attributes and the composite ops intact.

// CHECK-LABEL: func.func @forward
// CHECK-SAME: llmc.param = "wte"
// CHECK-SAME: llmc.init_rule = "normal(0.02)"
// CHECK-SAME: llmc.input = "idx"
// CHECK-SAME: llmc.output = "loss"
// CHECK: llmc.gather
// CHECK: llmc.layer_norm
// CHECK: llmc.attention %{{.*}}, %{{.*}}, %{{.*}} {causal}
// CHECK: llmc.layer_norm
// CHECK: llmc.gelu tanh
// CHECK: llmc.layer_norm
// CHECK: llmc.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<2x16x64xf32>, tensor<512x64xf32>) -> tensor<2x16x512xf32>
// CHECK: llmc.cross_entropy mean
