// RUN: llmc-opt %s --llmc-raise-gelu --split-input-file | FileCheck %s

// The dynamo nanoGPT form: x * (0.5 * (1 + tanh(c * (x + 0.044715 * x^3)))).
// CHECK-LABEL: func.func @tanh_dynamo
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x256xf32>)
// CHECK: %[[Y:.+]] = llmc.gelu tanh %[[X]] : tensor<2x16x256xf32>
// CHECK-NOT: llmc.tanh
// CHECK: return %[[Y]]
func.func @tanh_dynamo(%x: tensor<2x16x256xf32>) -> tensor<2x16x256xf32> {
  %three = llmc.constant dense<3.0> : tensor<f32>
  %k = llmc.constant dense<0.044715> : tensor<f32>
  %c = llmc.constant dense<0.797884583> : tensor<f32>
  %one = llmc.constant dense<1.0> : tensor<f32>
  %half = llmc.constant dense<0.5> : tensor<f32>
  %p = llmc.pow %x, %three : (tensor<2x16x256xf32>, tensor<f32>) -> tensor<2x16x256xf32>
  %kp = llmc.mul %k, %p : (tensor<f32>, tensor<2x16x256xf32>) -> tensor<2x16x256xf32>
  %s = llmc.add %x, %kp : (tensor<2x16x256xf32>, tensor<2x16x256xf32>) -> tensor<2x16x256xf32>
  %cs = llmc.mul %c, %s : (tensor<f32>, tensor<2x16x256xf32>) -> tensor<2x16x256xf32>
  %t = llmc.tanh %cs : tensor<2x16x256xf32>
  %u = llmc.add %t, %one : (tensor<2x16x256xf32>, tensor<f32>) -> tensor<2x16x256xf32>
  %hu = llmc.mul %half, %u : (tensor<f32>, tensor<2x16x256xf32>) -> tensor<2x16x256xf32>
  %y = llmc.mul %x, %hu : (tensor<2x16x256xf32>, tensor<2x16x256xf32>) -> tensor<2x16x256xf32>
  return %y : tensor<2x16x256xf32>
}

// -----

// HF GPT-2's NewGELU: (x * 0.5) * (1 + tanh((x + x^3 * 0.044715) * c)),
// constants as rank-1 splats.
// CHECK-LABEL: func.func @tanh_hf_gpt2
// CHECK: llmc.gelu tanh %{{.*}} : tensor<32x256xf32>
// CHECK-NOT: llmc.pow
func.func @tanh_hf_gpt2(%x: tensor<32x256xf32>) -> tensor<32x256xf32> {
  %half = llmc.constant dense<0.5> : tensor<1xf32>
  %three = llmc.constant dense<3.0> : tensor<1xf32>
  %k = llmc.constant dense<0.044715> : tensor<1xf32>
  %c = llmc.constant dense<0.797884583> : tensor<1xf32>
  %one = llmc.constant dense<1.0> : tensor<1xf32>
  %xh = llmc.mul %x, %half : (tensor<32x256xf32>, tensor<1xf32>) -> tensor<32x256xf32>
  %p = llmc.pow %x, %three : (tensor<32x256xf32>, tensor<1xf32>) -> tensor<32x256xf32>
  %pk = llmc.mul %p, %k : (tensor<32x256xf32>, tensor<1xf32>) -> tensor<32x256xf32>
  %s = llmc.add %x, %pk : (tensor<32x256xf32>, tensor<32x256xf32>) -> tensor<32x256xf32>
  %sc = llmc.mul %s, %c : (tensor<32x256xf32>, tensor<1xf32>) -> tensor<32x256xf32>
  %t = llmc.tanh %sc : tensor<32x256xf32>
  %u = llmc.add %t, %one : (tensor<32x256xf32>, tensor<1xf32>) -> tensor<32x256xf32>
  %y = llmc.mul %xh, %u : (tensor<32x256xf32>, tensor<32x256xf32>) -> tensor<32x256xf32>
  return %y : tensor<32x256xf32>
}

// -----

// x^3 written x * x * x, the constant sqrt(2/pi) computed from sqrt(2/pi)
// at run time, and 1 + tanh with the constant first.
// CHECK-LABEL: func.func @tanh_cube_by_mul
// CHECK: llmc.gelu tanh
func.func @tanh_cube_by_mul(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %k = llmc.constant dense<0.044715> : tensor<f32>
  %r = llmc.constant dense<0.636619772> : tensor<f32>
  %c = llmc.sqrt %r : tensor<f32>
  %one = llmc.constant dense<1.0> : tensor<f32>
  %half = llmc.constant dense<0.5> : tensor<f32>
  %x2 = llmc.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %x3 = llmc.mul %x2, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %kp = llmc.mul %x3, %k : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %s = llmc.add %kp, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %cs = llmc.mul %s, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %t = llmc.tanh %cs : tensor<4x8xf32>
  %u = llmc.add %one, %t : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %xu = llmc.mul %x, %u : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = llmc.mul %half, %xu : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// TorchScript BERT: (x * (erf(x / 1.4142135) + 1)) * 0.5.
// CHECK-LABEL: func.func @erf_torchscript
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x128xf32>)
// CHECK: %[[Y:.+]] = llmc.gelu erf %[[X]] : tensor<2x16x128xf32>
// CHECK-NOT: llmc.erf
// CHECK: return %[[Y]]
func.func @erf_torchscript(%x: tensor<2x16x128xf32>) -> tensor<2x16x128xf32> {
  %sqrt2 = llmc.constant dense<1.41421354> : tensor<f32>
  %one = llmc.constant dense<1.0> : tensor<f32>
  %half = llmc.constant dense<0.5> : tensor<f32>
  %z = llmc.div %x, %sqrt2 : (tensor<2x16x128xf32>, tensor<f32>) -> tensor<2x16x128xf32>
  %e = llmc.erf %z : tensor<2x16x128xf32>
  %u = llmc.add %e, %one : (tensor<2x16x128xf32>, tensor<f32>) -> tensor<2x16x128xf32>
  %xu = llmc.mul %x, %u : (tensor<2x16x128xf32>, tensor<2x16x128xf32>) -> tensor<2x16x128xf32>
  %y = llmc.mul %xu, %half : (tensor<2x16x128xf32>, tensor<f32>) -> tensor<2x16x128xf32>
  return %y : tensor<2x16x128xf32>
}

// -----

// erf of x * (1 / sqrt(2)), and 0.5 * x first.
// CHECK-LABEL: func.func @erf_mul_form
// CHECK: llmc.gelu erf
func.func @erf_mul_form(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = llmc.constant dense<0.707106769> : tensor<f32>
  %one = llmc.constant dense<1.0> : tensor<f32>
  %half = llmc.constant dense<0.5> : tensor<f32>
  %hx = llmc.mul %half, %x : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %z = llmc.mul %x, %r : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = llmc.erf %z : tensor<4x8xf32>
  %u = llmc.add %one, %e : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = llmc.mul %hx, %u : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Near miss: 0.04 instead of 0.044715.
// CHECK-LABEL: func.func @wrong_cubic_constant
// CHECK-NOT: llmc.gelu
// CHECK: llmc.tanh
func.func @wrong_cubic_constant(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %three = llmc.constant dense<3.0> : tensor<f32>
  %k = llmc.constant dense<0.04> : tensor<f32>
  %c = llmc.constant dense<0.797884583> : tensor<f32>
  %one = llmc.constant dense<1.0> : tensor<f32>
  %half = llmc.constant dense<0.5> : tensor<f32>
  %p = llmc.pow %x, %three : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %kp = llmc.mul %k, %p : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = llmc.add %x, %kp : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %cs = llmc.mul %c, %s : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = llmc.tanh %cs : tensor<4x8xf32>
  %u = llmc.add %t, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %hu = llmc.mul %half, %u : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = llmc.mul %x, %hu : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Near miss: x^2 instead of x^3.
// CHECK-LABEL: func.func @square_not_cube
// CHECK-NOT: llmc.gelu
func.func @square_not_cube(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %two = llmc.constant dense<2.0> : tensor<f32>
  %k = llmc.constant dense<0.044715> : tensor<f32>
  %c = llmc.constant dense<0.797884583> : tensor<f32>
  %one = llmc.constant dense<1.0> : tensor<f32>
  %half = llmc.constant dense<0.5> : tensor<f32>
  %p = llmc.pow %x, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %kp = llmc.mul %k, %p : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = llmc.add %x, %kp : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %cs = llmc.mul %c, %s : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = llmc.tanh %cs : tensor<4x8xf32>
  %u = llmc.add %t, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %hu = llmc.mul %half, %u : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = llmc.mul %x, %hu : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Near miss: coefficient 1 instead of 0.5 (x * (1 + erf(x / sqrt 2))).
// CHECK-LABEL: func.func @wrong_coefficient
// CHECK-NOT: llmc.gelu
func.func @wrong_coefficient(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sqrt2 = llmc.constant dense<1.41421354> : tensor<f32>
  %one = llmc.constant dense<1.0> : tensor<f32>
  %z = llmc.div %x, %sqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = llmc.erf %z : tensor<4x8xf32>
  %u = llmc.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %y = llmc.mul %x, %u : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Near miss: erf of a different tensor.
// CHECK-LABEL: func.func @erf_of_other
// CHECK-NOT: llmc.gelu
func.func @erf_of_other(%x: tensor<4x8xf32>, %w: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sqrt2 = llmc.constant dense<1.41421354> : tensor<f32>
  %one = llmc.constant dense<1.0> : tensor<f32>
  %half = llmc.constant dense<0.5> : tensor<f32>
  %z = llmc.div %w, %sqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = llmc.erf %z : tensor<4x8xf32>
  %u = llmc.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %xu = llmc.mul %x, %u : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = llmc.mul %xu, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Near miss: the erf is also returned, so raising would compute it twice.
// CHECK-LABEL: func.func @erf_other_use
// CHECK-NOT: llmc.gelu
func.func @erf_other_use(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %sqrt2 = llmc.constant dense<1.41421354> : tensor<f32>
  %one = llmc.constant dense<1.0> : tensor<f32>
  %half = llmc.constant dense<0.5> : tensor<f32>
  %z = llmc.div %x, %sqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = llmc.erf %z : tensor<4x8xf32>
  %u = llmc.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %xu = llmc.mul %x, %u : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = llmc.mul %xu, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y, %e : tensor<4x8xf32>, tensor<4x8xf32>
}
