// RUN: llmc-opt %s --llmc-raise-attention --split-input-file | FileCheck %s
// RUN: llmc import %models/hf_gpt2_small_b16_t1024.onnx | FileCheck %s --check-prefix=HF

// HF GPT-2's exported mask: where(broadcast_to(kv <= q) over the batch, 0,
// finfo.min). At batch 16 x 1024 it is too big to evaluate whole (16.7M
// values), so the [1, 1, T, S] compare under the broadcast is classified.
// CHECK-LABEL: func.func @batch_broadcast_causal
// CHECK: llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} {causal, llmc.eager, scale = 1.000000e+00 : f64}
// CHECK-NOT: llmc.compare
func.func @batch_broadcast_causal(%q: tensor<16x1x1024x8xf32>, %k: tensor<16x1x1024x8xf32>, %v: tensor<16x1x1024x8xf32>) -> tensor<16x1x1024x8xf32> {
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %min = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %kv = llmc.iota dim 3 : tensor<1x1x1x1024xi64>
  %qi = llmc.iota dim 2 : tensor<1x1x1024x1xi64>
  %keep = llmc.compare le, %kv, %qi : (tensor<1x1x1x1024xi64>, tensor<1x1x1024x1xi64>) -> tensor<1x1x1024x1024xi1>
  %kb = llmc.broadcast_to %keep : tensor<1x1x1024x1024xi1> -> tensor<16x1x1024x1024xi1>
  %mask = llmc.where %kb, %zero, %min : (tensor<16x1x1024x1024xi1>, tensor<f32>, tensor<f32>) -> tensor<16x1x1024x1024xf32>
  %sc = llmc.matmul %q, %k {transpose_rhs} : (tensor<16x1x1024x8xf32>, tensor<16x1x1024x8xf32>) -> tensor<16x1x1024x1024xf32>
  %m = llmc.add %sc, %mask : (tensor<16x1x1024x1024xf32>, tensor<16x1x1024x1024xf32>) -> tensor<16x1x1024x1024xf32>
  %p = llmc.softmax %m : tensor<16x1x1024x1024xf32>
  %o = llmc.matmul %p, %v : (tensor<16x1x1024x1024xf32>, tensor<16x1x1024x8xf32>) -> tensor<16x1x1024x8xf32>
  return %o : tensor<16x1x1024x8xf32>
}

// -----

// The same with the upper triangle kept: classified, not causal, so the
// mask stays an operand.
// CHECK-LABEL: func.func @batch_broadcast_not_causal
// CHECK: llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} mask %{{[^ ]+}} {llmc.eager, scale = 1.000000e+00 : f64}
func.func @batch_broadcast_not_causal(%q: tensor<16x1x1024x8xf32>, %k: tensor<16x1x1024x8xf32>, %v: tensor<16x1x1024x8xf32>) -> tensor<16x1x1024x8xf32> {
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %min = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %kv = llmc.iota dim 3 : tensor<1x1x1x1024xi64>
  %qi = llmc.iota dim 2 : tensor<1x1x1024x1xi64>
  %keep = llmc.compare ge, %kv, %qi : (tensor<1x1x1x1024xi64>, tensor<1x1x1024x1xi64>) -> tensor<1x1x1024x1024xi1>
  %kb = llmc.broadcast_to %keep : tensor<1x1x1024x1024xi1> -> tensor<16x1x1024x1024xi1>
  %mask = llmc.where %kb, %zero, %min : (tensor<16x1x1024x1024xi1>, tensor<f32>, tensor<f32>) -> tensor<16x1x1024x1024xf32>
  %sc = llmc.matmul %q, %k {transpose_rhs} : (tensor<16x1x1024x8xf32>, tensor<16x1x1024x8xf32>) -> tensor<16x1x1024x1024xf32>
  %m = llmc.add %sc, %mask : (tensor<16x1x1024x1024xf32>, tensor<16x1x1024x1024xf32>) -> tensor<16x1x1024x1024xf32>
  %p = llmc.softmax %m : tensor<16x1x1024x1024xf32>
  %o = llmc.matmul %p, %v : (tensor<16x1x1024x1024xf32>, tensor<16x1x1024x8xf32>) -> tensor<16x1x1024x8xf32>
  return %o : tensor<16x1x1024x8xf32>
}

// The exported model itself (2 layers, d 64, batch 16 x 1024; made by
// bench/export_small_gpt2.py): both attentions come out causal, no mask.
// HF: llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} {causal} : (tensor<16x4x1024x16xf32>
// HF: llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} {causal} : (tensor<16x4x1024x16xf32>
// HF-NOT: mask
