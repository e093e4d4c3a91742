// RUN: llmc-opt %s --llmc-batch-adamw --split-input-file | FileCheck %s

// Two f32 updates with the clip coefficient: one multi-tensor update that
// reads the unscaled gradients and the coefficient; weight decay per tensor;
// the muls are gone and the results are rewired.
// CHECK-LABEL: func.func @clipped
// CHECK-SAME: (%[[W:[^:]+]]: tensor<4x8xf32>, %[[B:[^:]+]]: tensor<8xf32>, %[[GW:[^:]+]]: tensor<4x8xf32>, %[[GB:[^:]+]]: tensor<8xf32>, %[[M0:[^:]+]]: tensor<4x8xf32>, %[[M1:[^:]+]]: tensor<8xf32>, %[[V0:[^:]+]]: tensor<4x8xf32>, %[[V1:[^:]+]]: tensor<8xf32>, %[[LR:[^:]+]]: tensor<f32>, %[[T:[^:]+]]: tensor<i64>, %[[C:[^:]+]]: tensor<f32>)
// CHECK-NOT: llmc.mul
// CHECK-NOT: llmc.adamw_update
// CHECK: %[[R:.+]]:6 = llmc.multi_adamw_update params(%[[W]], %[[B]]) grads(%[[GW]], %[[GB]]) m(%[[M0]], %[[M1]]) v(%[[V0]], %[[V1]]) lr(%[[LR]]) step(%[[T]]) scale(%[[C]]) {beta2 = 0.94999999999999996 : f64, weight_decays = array<f64: 1.000000e-01, 0.000000e+00>}
// CHECK-NOT: llmc.adamw_update
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[R]]#3, %[[R]]#4, %[[R]]#5
func.func @clipped(%w: tensor<4x8xf32>, %b: tensor<8xf32>, %gw: tensor<4x8xf32>, %gb: tensor<8xf32>,
                   %mw: tensor<4x8xf32>, %mb: tensor<8xf32>, %vw: tensor<4x8xf32>, %vb: tensor<8xf32>,
                   %lr: tensor<f32>, %t: tensor<i64>, %c: tensor<f32>)
    -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>) {
  %sw = llmc.mul %gw, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %sb = llmc.mul %c, %gb : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %p0, %m0, %v0 = llmc.adamw_update %w, %sw, %mw, %vw, %lr, %t {beta2 = 0.95 : f64, weight_decay = 0.1 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<i64>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  %p1, %m1, %v1 = llmc.adamw_update %b, %sb, %mb, %vb, %lr, %t {beta2 = 0.95 : f64, weight_decay = 0.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %p0, %p1, %m0, %m1, %v0, %v1 : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>
}

// -----

// Element types and hyperparameters split groups: the f32 updates that share
// betas form one group, the bf16 update (its own cast coefficient) another,
// the update with other betas a third; each group is built where its last
// update was.
// CHECK-LABEL: func.func @groups
// CHECK: %[[CB:.+]] = llmc.cast
// CHECK: llmc.multi_adamw_update params(%arg1) {{.*}} scale(%[[CB]]) {weight_decays = array<f64: 0.000000e+00>}
// CHECK: llmc.multi_adamw_update params(%arg0, %arg2) {{.*}} scale(%arg7) {weight_decays = array<f64: 1.000000e-01, 2.000000e-01>}
// CHECK: llmc.multi_adamw_update params(%arg3) grads(%arg3) {{.*}} step(%arg6) {beta1 = 5.000000e-01 : f64, weight_decays = array<f64: 0.000000e+00>}
func.func @groups(%a: tensor<4xf32>, %b: tensor<4xbf16>, %c: tensor<6xf32>, %d: tensor<4xf32>,
                  %lr: tensor<f32>, %t: tensor<i64>, %t2: tensor<i64>, %coef: tensor<f32>)
    -> (tensor<4xf32>, tensor<4xbf16>, tensor<6xf32>, tensor<4xf32>) {
  %ga = llmc.mul %a, %coef : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %cb = llmc.cast %coef : tensor<f32> -> tensor<bf16>
  %gb = llmc.mul %b, %cb : (tensor<4xbf16>, tensor<bf16>) -> tensor<4xbf16>
  %gc = llmc.mul %c, %coef : (tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
  %0:3 = llmc.adamw_update %a, %ga, %a, %a, %lr, %t {weight_decay = 0.1 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %1:3 = llmc.adamw_update %b, %gb, %b, %b, %lr, %t {weight_decay = 0.0 : f64} : (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<f32>, tensor<i64>) -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>)
  %2:3 = llmc.adamw_update %c, %gc, %c, %c, %lr, %t {weight_decay = 0.2 : f64} : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<f32>, tensor<i64>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>)
  %3:3 = llmc.adamw_update %d, %d, %d, %d, %lr, %t2 {beta1 = 0.5 : f64, weight_decay = 0.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %0#0, %1#0, %2#0, %3#0 : tensor<4xf32>, tensor<4xbf16>, tensor<6xf32>, tensor<4xf32>
}

// -----

// A scaled gradient that is also returned keeps its mul, and the update
// reads it as it is (no scale), in a group of its own.
// CHECK-LABEL: func.func @shared_product
// CHECK: %[[G:.+]] = llmc.mul %arg1, %arg4
// CHECK: %[[R:.+]]:3 = llmc.multi_adamw_update params(%arg0) grads(%[[G]]) m(%arg0) v(%arg0) lr(%arg2) step(%arg3) {weight_decays
// CHECK: return %[[R]]#0, %[[G]]
func.func @shared_product(%p: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>, %c: tensor<f32>)
    -> (tensor<4xf32>, tensor<4xf32>) {
  %sg = llmc.mul %g, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %0:3 = llmc.adamw_update %p, %sg, %p, %p, %lr, %t : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %0#0, %sg : tensor<4xf32>, tensor<4xf32>
}

// -----

// A product of two full tensors is a gradient, not a scaled one.
// CHECK-LABEL: func.func @not_a_scale
// CHECK: %[[G:.+]] = llmc.mul %arg1, %arg1
// CHECK: llmc.multi_adamw_update params(%arg0) grads(%[[G]])
// CHECK-NOT: scale(
func.func @not_a_scale(%p: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) -> tensor<4xf32> {
  %sg = llmc.mul %g, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %0:3 = llmc.adamw_update %p, %sg, %p, %p, %lr, %t : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %0#0 : tensor<4xf32>
}

// -----

// Nothing to group: SGD's elementwise update is left alone.
// CHECK-LABEL: func.func @sgd
// CHECK-NOT: multi_adamw_update
// CHECK: llmc.sub
func.func @sgd(%p: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %0 = llmc.sub %p, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// bf16 weight gradients widened for f32 params (what autodiff leaves under
// --precision bf16): the multi-tensor update and global_norm read the bf16
// values, the casts go; an f32 gradient is read as it is.
// CHECK-LABEL: func.func @narrow_grads
// CHECK-SAME: (%[[W:[^:]+]]: tensor<4x8xf32>, %[[B:[^:]+]]: tensor<8xf32>, %[[GW:[^:]+]]: tensor<4x8xbf16>, %[[GB:[^:]+]]: tensor<8xf32>,
// CHECK-NOT: llmc.cast
// CHECK: %[[N:.+]] = llmc.global_norm %[[GW]], %[[GB]] : (tensor<4x8xbf16>, tensor<8xf32>) -> tensor<f32>
// CHECK-NOT: llmc.cast
// CHECK: llmc.multi_adamw_update params(%[[W]], %[[B]]) grads(%[[GW]], %[[GB]]) {{.*}} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xbf16>, tensor<8xf32>,
func.func @narrow_grads(%w: tensor<4x8xf32>, %b: tensor<8xf32>, %gw16: tensor<4x8xbf16>, %gb: tensor<8xf32>,
                        %mw: tensor<4x8xf32>, %mb: tensor<8xf32>, %vw: tensor<4x8xf32>, %vb: tensor<8xf32>,
                        %lr: tensor<f32>, %t: tensor<i64>)
    -> (tensor<f32>, tensor<4x8xf32>, tensor<8xf32>) {
  %gw = llmc.cast %gw16 : tensor<4x8xbf16> -> tensor<4x8xf32>
  %n = llmc.global_norm %gw, %gb : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<f32>
  %p0, %m0, %v0 = llmc.adamw_update %w, %gw, %mw, %vw, %lr, %t {weight_decay = 0.1 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<i64>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  %p1, %m1, %v1 = llmc.adamw_update %b, %gb, %mb, %vb, %lr, %t {weight_decay = 0.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %n, %p0, %p1 : tensor<f32>, tensor<4x8xf32>, tensor<8xf32>
}

// -----

// A cast that narrows, or one also read by another op, stays (the other
// reader still needs the f32 copy); the update reads the bf16 value anyway.
// CHECK-LABEL: func.func @cast_kept
// CHECK: %[[C:.+]] = llmc.cast %arg1 : tensor<4xbf16> -> tensor<4xf32>
// CHECK: llmc.multi_adamw_update params(%arg0) grads(%arg1)
// CHECK: return {{.*}}, %[[C]]
func.func @cast_kept(%p: tensor<4xf32>, %g16: tensor<4xbf16>, %m: tensor<4xf32>, %v: tensor<4xf32>,
                     %lr: tensor<f32>, %t: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>) {
  %g = llmc.cast %g16 : tensor<4xbf16> -> tensor<4xf32>
  %p0, %m0, %v0 = llmc.adamw_update %p, %g, %m, %v, %lr, %t {weight_decay = 0.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %p0, %g : tensor<4xf32>, tensor<4xf32>
}
