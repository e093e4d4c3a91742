// Every raising pattern on one model, evaluated before and after raising by
// the reference evaluator: the raised composite ops must compute what the
// decomposed forms compute (within 1e-6 of each output's magnitude; the
// decomposed forms round each step to f32, the composites only once).
//
// RUN: llmc-opt %s --llmc-raise -o %t.raised.mlir
// RUN: FileCheck %s < %t.raised.mlir
// RUN: llmc run %s --inputs %S/Inputs/raise-numerics.json -o %t.before.json
// RUN: llmc run %t.raised.mlir --inputs %S/Inputs/raise-numerics.json -o %t.after.json
// RUN: %python %S/../pipeline/Inputs/outputs.py compare %t.before.json %t.after.json --rtol 1e-6

// CHECK-LABEL: func.func @forward
// CHECK-DAG: llmc.gelu tanh
// CHECK-DAG: llmc.gelu erf
// CHECK-DAG: llmc.silu
// CHECK-DAG: llmc.layer_norm %{{[^ ]+}} weight %{{[^ ]+}} bias
// CHECK-DAG: llmc.rms_norm %{{[^ ]+}} weight
// CHECK-DAG: llmc.softmax %{{[^ ]+}} : tensor<2x4x8xf32>
// CHECK-DAG: llmc.cross_entropy mean %{{[^ ]+}}, %{{[^ ]+}} :
// CHECK-DAG: llmc.cross_entropy mean %{{[^ ]+}}, %{{[^ ]+}} :
// CHECK-DAG: llmc.cross_entropy sum
// CHECK-DAG: llmc.rotary
// CHECK-DAG: llmc.attention %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} {causal} : (tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
// CHECK-NOT: llmc.{{exp|log|pow|sqrt|rsqrt|reciprocal|tanh|erf|sigmoid|neg|isnan|reduce_[a-z]+|gather_elements}}
func.func @forward(
    %x: tensor<2x4x8xf32> {llmc.input = "x"},
    %w: tensor<8xf32> {llmc.input = "w"},
    %b: tensor<8xf32> {llmc.input = "b"},
    %logits: tensor<6x10xf32> {llmc.input = "logits"},
    %t: tensor<6xi64> {llmc.input = "targets"},
    %ta: tensor<6xi64> {llmc.input = "targets_all"},
    %q: tensor<1x4x4x8xf32> {llmc.input = "q"},
    %k: tensor<1x2x4x8xf32> {llmc.input = "k"},
    %v: tensor<1x2x4x8xf32> {llmc.input = "v"},
    %cos: tensor<4x8xf32> {llmc.input = "cos"},
    %sin: tensor<4x8xf32> {llmc.input = "sin"})
    -> (tensor<2x4x8xf32> {llmc.output = "gelu_tanh"},
        tensor<2x4x8xf32> {llmc.output = "gelu_erf"},
        tensor<2x4x8xf32> {llmc.output = "silu"},
        tensor<2x4x8xf32> {llmc.output = "layer_norm"},
        tensor<2x4x8xf32> {llmc.output = "rms_norm"},
        tensor<2x4x8xf32> {llmc.output = "softmax"},
        tensor<f32> {llmc.output = "ce_masked_mean"},
        tensor<f32> {llmc.output = "ce_mean"},
        tensor<f32> {llmc.output = "ce_masked_sum"},
        tensor<1x4x4x8xf32> {llmc.output = "rotary"},
        tensor<1x4x4x8xf32> {llmc.output = "attention"}) {
  %half = llmc.constant dense<0.5> : tensor<f32>
  %one = llmc.constant dense<1.0> : tensor<f32>
  %two = llmc.constant dense<2.0> : tensor<f32>
  %three = llmc.constant dense<3.0> : tensor<f32>
  %zero = llmc.constant dense<0.0> : tensor<f32>

  // gelu tanh, dynamo nanoGPT form
  %k3 = llmc.constant dense<0.044715> : tensor<f32>
  %c = llmc.constant dense<0.797884583> : tensor<f32>
  %p3 = llmc.pow %x, %three : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %kp = llmc.mul %k3, %p3 : (tensor<f32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s0 = llmc.add %x, %kp : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %cs = llmc.mul %c, %s0 : (tensor<f32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %th = llmc.tanh %cs : tensor<2x4x8xf32>
  %u = llmc.add %th, %one : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %hu = llmc.mul %half, %u : (tensor<f32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %gelu_tanh = llmc.mul %x, %hu : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>

  // gelu erf, TorchScript form
  %sqrt2 = llmc.constant dense<1.41421354> : tensor<f32>
  %z = llmc.div %x, %sqrt2 : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %e = llmc.erf %z : tensor<2x4x8xf32>
  %ue = llmc.add %e, %one : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %xu = llmc.mul %x, %ue : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %gelu_erf = llmc.mul %xu, %half : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>

  // silu
  %sg = llmc.sigmoid %x : tensor<2x4x8xf32>
  %silu = llmc.mul %sg, %x : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>

  // layer norm (TorchScript form) with weight and bias, eps 1e-5
  %eps5 = llmc.constant dense<1.0E-5> : tensor<f32>
  %m = llmc.reduce_mean %x axes [2] keepdims : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32>
  %d = llmc.sub %x, %m : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %dsq = llmc.pow %d, %two : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %var = llmc.reduce_mean %dsq axes [2] keepdims : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32>
  %ve = llmc.add %var, %eps5 : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
  %sd = llmc.sqrt %ve : tensor<2x4x1xf32>
  %nd = llmc.div %d, %sd : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %ndw = llmc.mul %nd, %w : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %layer_norm = llmc.add %ndw, %b : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>

  // rms norm (dynamo form), eps 1e-6
  %eps6 = llmc.constant dense<1.0E-6> : tensor<f32>
  %xsq = llmc.pow %x, %two : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %ms = llmc.reduce_mean %xsq axes [2] keepdims : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32>
  %mse = llmc.add %ms, %eps6 : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
  %rt = llmc.sqrt %mse : tensor<2x4x1xf32>
  %inv = llmc.reciprocal %rt : tensor<2x4x1xf32>
  %xn = llmc.mul %x, %inv : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %rms_norm = llmc.mul %w, %xn : (tensor<8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>

  // softmax over the last axis
  %mx = llmc.reduce_max %x axes [2] keepdims : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32>
  %zx = llmc.sub %x, %mx : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %ex = llmc.exp %zx : tensor<2x4x8xf32>
  %sx = llmc.reduce_sum %ex axes [2] keepdims : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32>
  %softmax = llmc.div %ex, %sx : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>

  // cross-entropy, masked mean over a decomposed log_softmax
  %ii = llmc.constant dense<-100> : tensor<i64>
  %izero = llmc.constant dense<0> : tensor<i64>
  %lmx = llmc.reduce_max %logits axes [1] keepdims : (tensor<6x10xf32>) -> tensor<6x1xf32>
  %lz = llmc.sub %logits, %lmx : (tensor<6x10xf32>, tensor<6x1xf32>) -> tensor<6x10xf32>
  %lez = llmc.exp %lz : tensor<6x10xf32>
  %lse = llmc.reduce_sum %lez axes [1] keepdims : (tensor<6x10xf32>) -> tensor<6x1xf32>
  %llse = llmc.log %lse : tensor<6x1xf32>
  %lp = llmc.sub %lz, %llse : (tensor<6x10xf32>, tensor<6x1xf32>) -> tensor<6x10xf32>
  %valid = llmc.compare ne, %t, %ii : (tensor<6xi64>, tensor<i64>) -> tensor<6xi1>
  %ts = llmc.where %valid, %t, %izero : (tensor<6xi1>, tensor<6xi64>, tensor<i64>) -> tensor<6xi64>
  %ti = llmc.reshape %ts : tensor<6xi64> -> tensor<6x1xi64>
  %g = llmc.gather_elements %lp, %ti axis 1 : (tensor<6x10xf32>, tensor<6x1xi64>) -> tensor<6x1xf32>
  %g1 = llmc.reshape %g : tensor<6x1xf32> -> tensor<6xf32>
  %ng = llmc.neg %g1 : tensor<6xf32>
  %l = llmc.where %valid, %ng, %zero : (tensor<6xi1>, tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
  %lsum = llmc.reduce_sum %l axes [0] : (tensor<6xf32>) -> tensor<f32>
  %vf = llmc.cast %valid : tensor<6xi1> -> tensor<6xf32>
  %cnt = llmc.reduce_sum %vf axes [0] : (tensor<6xf32>) -> tensor<f32>
  %ce_masked_mean = llmc.div %lsum, %cnt : (tensor<f32>, tensor<f32>) -> tensor<f32>

  // cross-entropy, unmasked mean
  %lp2 = llmc.log_softmax %logits : tensor<6x10xf32>
  %tai = llmc.reshape %ta : tensor<6xi64> -> tensor<6x1xi64>
  %g2 = llmc.gather_elements %lp2, %tai axis 1 : (tensor<6x10xf32>, tensor<6x1xi64>) -> tensor<6x1xf32>
  %g21 = llmc.reshape %g2 : tensor<6x1xf32> -> tensor<6xf32>
  %ng2 = llmc.neg %g21 : tensor<6xf32>
  %ce_mean = llmc.reduce_mean %ng2 axes [0] : (tensor<6xf32>) -> tensor<f32>

  // cross-entropy, masked sum
  %lp3 = llmc.log_softmax %logits : tensor<6x10xf32>
  %valid3 = llmc.compare ne, %ii, %t : (tensor<i64>, tensor<6xi64>) -> tensor<6xi1>
  %ts3 = llmc.where %valid3, %t, %izero : (tensor<6xi1>, tensor<6xi64>, tensor<i64>) -> tensor<6xi64>
  %ti3 = llmc.reshape %ts3 : tensor<6xi64> -> tensor<6x1xi64>
  %g3 = llmc.gather_elements %lp3, %ti3 axis 1 : (tensor<6x10xf32>, tensor<6x1xi64>) -> tensor<6x1xf32>
  %g31 = llmc.reshape %g3 : tensor<6x1xf32> -> tensor<6xf32>
  %ng3 = llmc.neg %g31 : tensor<6xf32>
  %l3 = llmc.where %valid3, %ng3, %zero : (tensor<6xi1>, tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
  %ce_masked_sum = llmc.reduce_sum %l3 axes [0] : (tensor<6xf32>) -> tensor<f32>

  // rotary on q with [T, D] tables
  %qc = llmc.mul %q, %cos : (tensor<1x4x4x8xf32>, tensor<4x8xf32>) -> tensor<1x4x4x8xf32>
  %lo = llmc.slice %q starts [0, 0, 0, 0] limits [1, 4, 4, 4] strides [1, 1, 1, 1] : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x4xf32>
  %hi = llmc.slice %q starts [0, 0, 0, 4] limits [1, 4, 4, 8] strides [1, 1, 1, 1] : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x4xf32>
  %nhi = llmc.neg %hi : tensor<1x4x4x4xf32>
  %rh = llmc.concat %nhi, %lo axis 3 : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x8xf32>
  %rs = llmc.mul %rh, %sin : (tensor<1x4x4x8xf32>, tensor<4x8xf32>) -> tensor<1x4x4x8xf32>
  %rotary = llmc.add %qc, %rs : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>

  // grouped-query causal attention, dynamo form with repeat_kv and the guard
  %ss = llmc.constant dense<0.594603539> : tensor<f32>
  %mask = llmc.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %k5 = llmc.reshape %k : tensor<1x2x4x8xf32> -> tensor<1x2x1x4x8xf32>
  %kb = llmc.broadcast_to %k5 : tensor<1x2x1x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %kr = llmc.reshape %kb : tensor<1x2x2x4x8xf32> -> tensor<1x4x4x8xf32>
  %kr3 = llmc.reshape %kr : tensor<1x4x4x8xf32> -> tensor<4x4x8xf32>
  %kt3 = llmc.transpose %kr3 [0, 2, 1] : (tensor<4x4x8xf32>) -> tensor<4x8x4xf32>
  %kt = llmc.reshape %kt3 : tensor<4x8x4xf32> -> tensor<1x4x8x4xf32>
  %v5 = llmc.reshape %v : tensor<1x2x4x8xf32> -> tensor<1x2x1x4x8xf32>
  %vb = llmc.broadcast_to %v5 : tensor<1x2x1x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %vr = llmc.reshape %vb : tensor<1x2x2x4x8xf32> -> tensor<1x4x4x8xf32>
  %qs = llmc.mul %q, %ss : (tensor<1x4x4x8xf32>, tensor<f32>) -> tensor<1x4x4x8xf32>
  %ks = llmc.mul %kt, %ss : (tensor<1x4x8x4xf32>, tensor<f32>) -> tensor<1x4x8x4xf32>
  %sc = llmc.matmul %qs, %ks : (tensor<1x4x4x8xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x4x4xf32>
  %scm = llmc.add %sc, %mask : (tensor<1x4x4x4xf32>, tensor<4x4xf32>) -> tensor<1x4x4x4xf32>
  %pr = llmc.softmax %scm : tensor<1x4x4x4xf32>
  %nan = llmc.isnan %pr : tensor<1x4x4x4xf32> -> tensor<1x4x4x4xi1>
  %pg = llmc.where %nan, %zero, %pr : (tensor<1x4x4x4xi1>, tensor<f32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %attention = llmc.matmul %pg, %vr : (tensor<1x4x4x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>

  return %gelu_tanh, %gelu_erf, %silu, %layer_norm, %rms_norm, %softmax,
         %ce_masked_mean, %ce_mean, %ce_masked_sum, %rotary, %attention
      : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>,
        tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>,
        tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>
}
