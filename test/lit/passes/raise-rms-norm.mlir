// RUN: llmc-opt %s --llmc-raise-rms-norm --split-input-file | FileCheck %s

// HF Llama, dynamo: w * (x * reciprocal(sqrt(mean(x^2) + eps))).
// CHECK-LABEL: func.func @llama_dynamo
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x64xf32>, %[[W:.+]]: tensor<64xf32>)
// CHECK: %[[Y:.+]] = llmc.rms_norm %[[X]] weight %[[W]] {epsilon = 1.000000e-05 : f64}
// CHECK-NOT: llmc.reduce_mean
// CHECK: return %[[Y]]
func.func @llama_dynamo(%x: tensor<2x16x64xf32>, %w: tensor<64xf32>) -> tensor<2x16x64xf32> {
  %two = llmc.constant dense<2.0> : tensor<f32>
  %eps = llmc.constant dense<9.99999974E-6> : tensor<f32>
  %sq = llmc.pow %x, %two : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  %ms = llmc.reduce_mean %sq axes [2] keepdims : (tensor<2x16x64xf32>) -> tensor<2x16x1xf32>
  %s = llmc.add %ms, %eps : (tensor<2x16x1xf32>, tensor<f32>) -> tensor<2x16x1xf32>
  %r = llmc.sqrt %s : tensor<2x16x1xf32>
  %inv = llmc.reciprocal %r : tensor<2x16x1xf32>
  %n = llmc.mul %x, %inv : (tensor<2x16x64xf32>, tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
  %y = llmc.mul %w, %n : (tensor<64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

// HF Llama, TorchScript: div(1, sqrt(...)) and a cast up/down around the
// normalization (here bf16 -> f32 -> bf16), then the weight.
// CHECK-LABEL: func.func @llama_torchscript_casts
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x64xbf16>, %[[W:.+]]: tensor<64xbf16>)
// The epsilon is the default 1e-6, so it does not print.
// CHECK: %[[Y:.+]] = llmc.rms_norm %[[X]] weight %[[W]] : (tensor<2x16x64xbf16>, tensor<64xbf16>)
// CHECK-NOT: llmc.cast
// CHECK: return %[[Y]]
func.func @llama_torchscript_casts(%x: tensor<2x16x64xbf16>, %w: tensor<64xbf16>) -> tensor<2x16x64xbf16> {
  %two = llmc.constant dense<2.0> : tensor<f32>
  %eps = llmc.constant dense<9.99999997E-7> : tensor<f32>
  %one = llmc.constant dense<1.0> : tensor<f32>
  %xf = llmc.cast %x : tensor<2x16x64xbf16> -> tensor<2x16x64xf32>
  %sq = llmc.pow %xf, %two : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  %ms = llmc.reduce_mean %sq axes [2] keepdims : (tensor<2x16x64xf32>) -> tensor<2x16x1xf32>
  %s = llmc.add %ms, %eps : (tensor<2x16x1xf32>, tensor<f32>) -> tensor<2x16x1xf32>
  %r = llmc.sqrt %s : tensor<2x16x1xf32>
  %inv = llmc.div %one, %r : (tensor<f32>, tensor<2x16x1xf32>) -> tensor<2x16x1xf32>
  %n = llmc.mul %xf, %inv : (tensor<2x16x64xf32>, tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
  %nb = llmc.cast %n : tensor<2x16x64xf32> -> tensor<2x16x64xbf16>
  %y = llmc.mul %w, %nb : (tensor<64xbf16>, tensor<2x16x64xbf16>) -> tensor<2x16x64xbf16>
  return %y : tensor<2x16x64xbf16>
}

// -----

// rsqrt form, x * x square, eps first, no weight.
// CHECK-LABEL: func.func @rsqrt_no_weight
// CHECK: llmc.rms_norm %{{[^ ]+}} : (tensor<4x32xf32>) -> tensor<4x32xf32>
func.func @rsqrt_no_weight(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %eps = llmc.constant dense<1.0E-6> : tensor<1xf32>
  %sq = llmc.mul %x, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %ms = llmc.reduce_mean %sq axes [1] keepdims : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %s = llmc.add %eps, %ms : (tensor<1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %inv = llmc.rsqrt %s : tensor<4x1xf32>
  %y = llmc.mul %inv, %x : (tensor<4x1xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// x / sqrt(...) over the last two dims.
// CHECK-LABEL: func.func @div_two_axes
// CHECK: llmc.rms_norm %{{[^ ]+}} {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : (tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
func.func @div_two_axes(%x: tensor<4x8x32xf32>) -> tensor<4x8x32xf32> {
  %two = llmc.constant dense<2.0> : tensor<f32>
  %eps = llmc.constant dense<1.0E-5> : tensor<f32>
  %sq = llmc.pow %x, %two : (tensor<4x8x32xf32>, tensor<f32>) -> tensor<4x8x32xf32>
  %ms = llmc.reduce_mean %sq axes [2, 1] keepdims : (tensor<4x8x32xf32>) -> tensor<4x1x1xf32>
  %s = llmc.add %ms, %eps : (tensor<4x1x1xf32>, tensor<f32>) -> tensor<4x1x1xf32>
  %r = llmc.sqrt %s : tensor<4x1x1xf32>
  %y = llmc.div %x, %r : (tensor<4x8x32xf32>, tensor<4x1x1xf32>) -> tensor<4x8x32xf32>
  return %y : tensor<4x8x32xf32>
}

// -----

// Near miss: mean over a leading axis.
// CHECK-LABEL: func.func @wrong_axis
// CHECK-NOT: llmc.rms_norm
func.func @wrong_axis(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %two = llmc.constant dense<2.0> : tensor<f32>
  %eps = llmc.constant dense<1.0E-5> : tensor<f32>
  %sq = llmc.pow %x, %two : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %ms = llmc.reduce_mean %sq axes [0] keepdims : (tensor<4x32xf32>) -> tensor<1x32xf32>
  %s = llmc.add %ms, %eps : (tensor<1x32xf32>, tensor<f32>) -> tensor<1x32xf32>
  %inv = llmc.rsqrt %s : tensor<1x32xf32>
  %y = llmc.mul %x, %inv : (tensor<4x32xf32>, tensor<1x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Near miss: pow 3 is not a square.
// CHECK-LABEL: func.func @wrong_exponent
// CHECK-NOT: llmc.rms_norm
func.func @wrong_exponent(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %three = llmc.constant dense<3.0> : tensor<f32>
  %eps = llmc.constant dense<1.0E-5> : tensor<f32>
  %sq = llmc.pow %x, %three : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %ms = llmc.reduce_mean %sq axes [1] keepdims : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %s = llmc.add %ms, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %inv = llmc.rsqrt %s : tensor<4x1xf32>
  %y = llmc.mul %x, %inv : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Near miss: the mean of squares is also returned.
// CHECK-LABEL: func.func @mean_other_use
// CHECK-NOT: llmc.rms_norm
func.func @mean_other_use(%x: tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<4x1xf32>) {
  %two = llmc.constant dense<2.0> : tensor<f32>
  %eps = llmc.constant dense<1.0E-5> : tensor<f32>
  %sq = llmc.pow %x, %two : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %ms = llmc.reduce_mean %sq axes [1] keepdims : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %s = llmc.add %ms, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %inv = llmc.rsqrt %s : tensor<4x1xf32>
  %y = llmc.mul %x, %inv : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  return %y, %ms : tensor<4x32xf32>, tensor<4x1xf32>
}

// -----

// Near miss: the normalized x is not the squared x.
// CHECK-LABEL: func.func @different_x
// CHECK-NOT: llmc.rms_norm
func.func @different_x(%x: tensor<4x32xf32>, %z: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %two = llmc.constant dense<2.0> : tensor<f32>
  %eps = llmc.constant dense<1.0E-5> : tensor<f32>
  %sq = llmc.pow %z, %two : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %ms = llmc.reduce_mean %sq axes [1] keepdims : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %s = llmc.add %ms, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %inv = llmc.rsqrt %s : tensor<4x1xf32>
  %y = llmc.mul %x, %inv : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// The weight is not absorbed when the unweighted norm has another use, or
// when the factor is not shaped like the normalized dims.
// CHECK-LABEL: func.func @weight_not_absorbed
// CHECK: %[[N:.+]] = llmc.rms_norm %{{[^ ]+}} {epsilon
// CHECK: llmc.mul %[[N]], %{{.*}} : (tensor<4x32xf32>, tensor<4x32xf32>)
// CHECK: %[[N2:.+]] = llmc.rms_norm %{{[^ ]+}} {epsilon
// CHECK: llmc.mul %[[N2]], %{{.*}} : (tensor<4x32xf32>, tensor<32xf32>)
func.func @weight_not_absorbed(%x: tensor<4x32xf32>, %w: tensor<32xf32>, %full: tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>) {
  %n = llmc.rms_norm %x {epsilon = 1.0e-5 : f64} : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = llmc.mul %n, %full : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %n2 = llmc.rms_norm %x {epsilon = 1.0e-5 : f64} : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %y2 = llmc.mul %n2, %w : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  return %y, %y2, %n2 : tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>
}
