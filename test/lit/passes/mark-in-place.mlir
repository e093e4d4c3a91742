// RUN: llmc-opt %s --llmc-form-kernels --llmc-mark-in-place --split-input-file | FileCheck %s

// An SGD-like update: the sub reads p element for element and nothing reads
// p afterwards (the neg before it does not matter), so p' takes p's buffer.
// CHECK-LABEL: func.func @sgd
// CHECK:       llmc.kernel -> (tensor<8xf32>) {
// CHECK-NEXT:    llmc.neg
// CHECK:       llmc.kernel -> (tensor<8xf32>) attributes {in_place = array<i64: 0>} {
// CHECK-NEXT:    llmc.sub %arg0
func.func @sgd(%p: tensor<8xf32>, %g: tensor<8xf32>) -> (tensor<8xf32> {llmc.next = 0 : i64}, tensor<8xf32>) {
  %n = llmc.neg %p : tensor<8xf32>
  %0 = llmc.sub %p, %g : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0, %n : tensor<8xf32>, tensor<8xf32>
}

// -----

// AdamW: param, m and v in place (results 0, 1, 2 into arguments 0, 2, 3);
// the step counter too (a rank-0 add).
// CHECK-LABEL: func.func @adamw
// CHECK:       llmc.kernel -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) attributes {in_place = array<i64: 0, 2, 3>}
// CHECK:       llmc.kernel -> (tensor<i64>) attributes {in_place = array<i64: 5>}
func.func @adamw(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<i64>)
    -> (tensor<8xf32> {llmc.next = 0 : i64}, tensor<8xf32> {llmc.next = 2 : i64}, tensor<8xf32> {llmc.next = 3 : i64}, tensor<i64> {llmc.next = 5 : i64}) {
  %0:3 = llmc.adamw_update %p, %g, %m, %v, %lr, %t : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %one = llmc.constant dense<1> : tensor<i64>
  %t1 = llmc.add %t, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  return %0#0, %0#1, %0#2, %t1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>
}

// -----

// The multi-tensor update reads tensor k's operands for tensor k's results:
// every param, m and v in place.
// CHECK-LABEL: func.func @multi
// CHECK:       llmc.kernel -> {{.*}} attributes {in_place = array<i64: 0, 1, 4, 5, 6, 7>}
func.func @multi(%p: tensor<8xf32>, %q: tensor<4xf32>, %g: tensor<8xf32>, %h: tensor<4xf32>,
                 %m: tensor<8xf32>, %n: tensor<4xf32>, %v: tensor<8xf32>, %w: tensor<4xf32>,
                 %lr: tensor<f32>, %t: tensor<i64>)
    -> (tensor<8xf32> {llmc.next = 0 : i64}, tensor<4xf32> {llmc.next = 1 : i64},
        tensor<8xf32> {llmc.next = 4 : i64}, tensor<4xf32> {llmc.next = 5 : i64},
        tensor<8xf32> {llmc.next = 6 : i64}, tensor<4xf32> {llmc.next = 7 : i64}) {
  %0:6 = llmc.multi_adamw_update params(%p, %q) grads(%g, %h) m(%m, %n) v(%v, %w) lr(%lr) step(%t) {weight_decays = array<f64: 0.1, 0.0>} : (tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>)
  return %0#0, %0#1, %0#2, %0#3, %0#4, %0#5 : tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>
}

// -----

// Negative: a later group reads the old p (through a reshape): copied.
// CHECK-LABEL: func.func @read_later
// CHECK-NOT:   in_place
func.func @read_later(%p: tensor<8xf32>, %g: tensor<8xf32>) -> (tensor<8xf32> {llmc.next = 0 : i64}, tensor<2x4xf32>) {
  %0 = llmc.sub %p, %g : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %r = llmc.reshape %p : tensor<8xf32> -> tensor<2x4xf32>
  %1 = llmc.neg %r : tensor<2x4xf32>
  return %0, %1 : tensor<8xf32>, tensor<2x4xf32>
}

// -----

// Negative: the update reads p across elements (a transpose).
// CHECK-LABEL: func.func @not_elementwise
// CHECK-NOT:   in_place
func.func @not_elementwise(%p: tensor<4x4xf32>) -> (tensor<4x4xf32> {llmc.next = 0 : i64}) {
  %0 = llmc.transpose %p [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Negative: p broadcasts into the new value, whose type is not p's (a
// thread would read elements that others write).
// CHECK-LABEL: func.func @broadcast
// CHECK-NOT:   in_place
func.func @broadcast(%p: tensor<1x4xf32>, %g: tensor<4x4xf32>) -> (tensor<4x4xf32> {llmc.next = 0 : i64}) {
  %0 = llmc.add %p, %g : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Negative: the new value is also an output (returned twice), and the old
// value is returned too: both need buffers of their own.
// CHECK-LABEL: func.func @returned
// CHECK-NOT:   in_place
func.func @returned(%p: tensor<8xf32>, %g: tensor<8xf32>, %q: tensor<8xf32>)
    -> (tensor<8xf32> {llmc.next = 0 : i64}, tensor<8xf32>, tensor<8xf32> {llmc.next = 2 : i64}, tensor<8xf32>) {
  %0 = llmc.sub %p, %g : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %1 = llmc.sub %q, %g : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0, %0, %1, %q : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Negative: a reshape (an alias, not a group's result) is the new value.
// CHECK-LABEL: func.func @alias
// CHECK-NOT:   in_place
func.func @alias(%p: tensor<2x4xf32>, %g: tensor<8xf32>) -> (tensor<2x4xf32> {llmc.next = 0 : i64}) {
  %0 = llmc.reshape %p : tensor<2x4xf32> -> tensor<8xf32>
  %1 = llmc.sub %0, %g : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %2 = llmc.reshape %1 : tensor<8xf32> -> tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}
