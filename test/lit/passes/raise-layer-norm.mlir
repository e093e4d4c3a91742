// RUN: llmc-opt %s --llmc-raise-layer-norm --split-input-file | FileCheck %s

// TorchScript before opset 17: (x - mean) / sqrt(mean((x - mean)^2) + eps) * w + b.
// CHECK-LABEL: func.func @torchscript_form
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x64xf32>, %[[W:.+]]: tensor<64xf32>, %[[B:.+]]: tensor<64xf32>)
// CHECK: %[[Y:.+]] = llmc.layer_norm %[[X]] weight %[[W]] bias %[[B]] {epsilon = 9.9999999999999998E-13 : f64}
// CHECK-NOT: llmc.reduce_mean
// CHECK: return %[[Y]]
func.func @torchscript_form(%x: tensor<2x16x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<2x16x64xf32> {
  %two = llmc.constant dense<2.0> : tensor<f32>
  %eps = llmc.constant dense<9.99999996E-13> : tensor<f32>
  %m = llmc.reduce_mean %x axes [2] keepdims : (tensor<2x16x64xf32>) -> tensor<2x16x1xf32>
  %d = llmc.sub %x, %m : (tensor<2x16x64xf32>, tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
  %sq = llmc.pow %d, %two : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  %v = llmc.reduce_mean %sq axes [2] keepdims : (tensor<2x16x64xf32>) -> tensor<2x16x1xf32>
  %ve = llmc.add %v, %eps : (tensor<2x16x1xf32>, tensor<f32>) -> tensor<2x16x1xf32>
  %sd = llmc.sqrt %ve : tensor<2x16x1xf32>
  %n = llmc.div %d, %sd : (tensor<2x16x64xf32>, tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
  %nw = llmc.mul %n, %w : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %y = llmc.add %nw, %b : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

// rsqrt, d * d, weight and bias first.
// CHECK-LABEL: func.func @rsqrt_form
// CHECK: llmc.layer_norm %{{[^ ]+}} weight %{{[^ ]+}} bias %{{[^ ]+}} : (tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>)
func.func @rsqrt_form(%x: tensor<8x32xf32>, %w: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %eps = llmc.constant dense<1.0E-5> : tensor<1xf32>
  %m = llmc.reduce_mean %x axes [1] keepdims : (tensor<8x32xf32>) -> tensor<8x1xf32>
  %d = llmc.sub %x, %m : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %sq = llmc.mul %d, %d : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %v = llmc.reduce_mean %sq axes [1] keepdims : (tensor<8x32xf32>) -> tensor<8x1xf32>
  %ve = llmc.add %eps, %v : (tensor<1xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
  %r = llmc.rsqrt %ve : tensor<8x1xf32>
  %n = llmc.mul %r, %d : (tensor<8x1xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %nw = llmc.mul %w, %n : (tensor<32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = llmc.add %b, %nw : (tensor<32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// reciprocal(sqrt(...)), no affine part.
// CHECK-LABEL: func.func @reciprocal_plain
// CHECK: llmc.layer_norm %{{[^ ]+}} : (tensor<8x32xf32>) -> tensor<8x32xf32>
func.func @reciprocal_plain(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %two = llmc.constant dense<2.0> : tensor<f32>
  %eps = llmc.constant dense<1.0E-5> : tensor<f32>
  %m = llmc.reduce_mean %x axes [1] keepdims : (tensor<8x32xf32>) -> tensor<8x1xf32>
  %d = llmc.sub %x, %m : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %sq = llmc.pow %d, %two : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %v = llmc.reduce_mean %sq axes [1] keepdims : (tensor<8x32xf32>) -> tensor<8x1xf32>
  %ve = llmc.add %v, %eps : (tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32>
  %sd = llmc.sqrt %ve : tensor<8x1xf32>
  %r = llmc.reciprocal %sd : tensor<8x1xf32>
  %y = llmc.mul %d, %r : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// A bias alone is absorbed, but a weight after the bias is not:
// (y + b) * w is not a layer norm with weight w and bias b.
// CHECK-LABEL: func.func @bias_then_weight
// CHECK: %[[N:.+]] = llmc.layer_norm %{{[^ ]+}} bias %{{[^ ]+}} :
// CHECK: llmc.mul %[[N]]
func.func @bias_then_weight(%x: tensor<8x32xf32>, %w: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %n = llmc.layer_norm %x {epsilon = 1.0e-5 : f64} : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %nb = llmc.add %n, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %y = llmc.mul %nb, %w : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Near miss: the variance is over another axis than the mean.
// CHECK-LABEL: func.func @wrong_axis
// CHECK-NOT: llmc.layer_norm
func.func @wrong_axis(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %two = llmc.constant dense<2.0> : tensor<f32>
  %eps = llmc.constant dense<1.0E-5> : tensor<f32>
  %m = llmc.reduce_mean %x axes [1] keepdims : (tensor<8x32xf32>) -> tensor<8x1xf32>
  %d = llmc.sub %x, %m : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %sq = llmc.pow %d, %two : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %v = llmc.reduce_mean %sq axes [0] keepdims : (tensor<8x32xf32>) -> tensor<1x32xf32>
  %ve = llmc.add %v, %eps : (tensor<1x32xf32>, tensor<f32>) -> tensor<1x32xf32>
  %sd = llmc.sqrt %ve : tensor<1x32xf32>
  %y = llmc.div %d, %sd : (tensor<8x32xf32>, tensor<1x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Near miss: x - mean is also returned.
// CHECK-LABEL: func.func @centered_other_use
// CHECK-NOT: llmc.layer_norm
func.func @centered_other_use(%x: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %two = llmc.constant dense<2.0> : tensor<f32>
  %eps = llmc.constant dense<1.0E-5> : tensor<f32>
  %m = llmc.reduce_mean %x axes [1] keepdims : (tensor<8x32xf32>) -> tensor<8x1xf32>
  %d = llmc.sub %x, %m : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %sq = llmc.pow %d, %two : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %v = llmc.reduce_mean %sq axes [1] keepdims : (tensor<8x32xf32>) -> tensor<8x1xf32>
  %ve = llmc.add %v, %eps : (tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32>
  %sd = llmc.sqrt %ve : tensor<8x1xf32>
  %y = llmc.div %d, %sd : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32>
  return %y, %d : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// Near miss: the mean subtracted is of another tensor.
// CHECK-LABEL: func.func @mean_of_other
// CHECK-NOT: llmc.layer_norm
func.func @mean_of_other(%x: tensor<8x32xf32>, %z: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %two = llmc.constant dense<2.0> : tensor<f32>
  %eps = llmc.constant dense<1.0E-5> : tensor<f32>
  %m = llmc.reduce_mean %z axes [1] keepdims : (tensor<8x32xf32>) -> tensor<8x1xf32>
  %d = llmc.sub %x, %m : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %sq = llmc.pow %d, %two : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %v = llmc.reduce_mean %sq axes [1] keepdims : (tensor<8x32xf32>) -> tensor<8x1xf32>
  %ve = llmc.add %v, %eps : (tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32>
  %sd = llmc.sqrt %ve : tensor<8x1xf32>
  %y = llmc.div %d, %sd : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Near miss: the bias is shaped like the whole tensor, not the normalized dims.
// CHECK-LABEL: func.func @full_bias
// CHECK: %[[N:.+]] = llmc.layer_norm %{{[^ ]+}} :
// CHECK: llmc.add %[[N]]
func.func @full_bias(%x: tensor<8x32xf32>, %b: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %n = llmc.layer_norm %x {epsilon = 1.0e-5 : f64} : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = llmc.add %n, %b : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
