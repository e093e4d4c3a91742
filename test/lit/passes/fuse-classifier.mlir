// RUN: llmc-opt %s --llmc-form-kernels --llmc-fuse-elementwise --llmc-fuse-classifier --split-input-file | FileCheck %s
// RUN: llmc-opt %s --llmc-form-kernels --llmc-fuse-elementwise="reductions=false" --llmc-fuse-classifier --split-input-file | FileCheck %s --check-prefix=NORED

// bf16 logits (a matmul's result) read by the loss and the gradient through
// one widening cast each: one group yields (loss, gradient), the two casts
// are one, the gradient's narrowing cast comes along, and the gradient is
// written over the logits (input 0 of the group: nothing else reads them).
// CHECK-LABEL: func.func @bf16
// CHECK:       %[[M:.+]] = llmc.kernel -> (tensor<4x16xbf16>) {
// CHECK-NEXT:    llmc.matmul
// CHECK:       %[[F:.+]]:2 = llmc.kernel -> (tensor<f32>, tensor<4x16xbf16>) attributes {llmc.overwrites = array<i64: -1, 0>} {
// CHECK-NEXT:    %[[C:.+]] = llmc.cast %[[M]] : tensor<4x16xbf16> -> tensor<4x16xf32>
// CHECK-NEXT:    %[[L:.+]] = llmc.cross_entropy mean %[[C]], %arg2
// CHECK-NEXT:    %[[G:.+]] = llmc.cross_entropy_grad mean %[[C]], %arg2, %arg3
// CHECK-NEXT:    %[[N:.+]] = llmc.cast %[[G]] : tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK-NEXT:    llmc.yield %[[L]], %[[N]] : tensor<f32>, tensor<4x16xbf16>
// CHECK-NEXT:  }
// CHECK-NOT:   llmc.cross_entropy
// CHECK:       llmc.matmul %[[F]]#1
// CHECK:       return %[[F]]#0
// Without the casts in the reductions the widened logits are a group's f32
// result, read by nothing else: the pair fuses over them, in place too.
// NORED-LABEL: func.func @bf16
// NORED:       %[[W:.+]] = llmc.kernel -> (tensor<4x16xf32>) {
// NORED-NEXT:    llmc.cast
// NORED:       llmc.kernel -> (tensor<f32>, tensor<4x16xf32>) attributes {llmc.overwrites = array<i64: -1, 0>} {
// NORED-NEXT:    llmc.cross_entropy mean %[[W]]
// NORED-NEXT:    llmc.cross_entropy_grad mean %[[W]]
func.func @bf16(%h: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %t: tensor<4xi64>, %d: tensor<f32>) -> (tensor<f32>, tensor<4x8xbf16>) {
  %x = llmc.matmul %h, %w : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %0 = llmc.cast %x : tensor<4x16xbf16> -> tensor<4x16xf32>
  %1 = llmc.cross_entropy mean %0, %t {classes = 13 : i64, ignore_index = -1 : i64} : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  %2 = llmc.cross_entropy_grad mean %0, %t, %d {classes = 13 : i64, ignore_index = -1 : i64} : (tensor<4x16xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x16xf32>
  %3 = llmc.cast %2 : tensor<4x16xf32> -> tensor<4x16xbf16>
  %4 = llmc.matmul %3, %w {transpose_rhs} : (tensor<4x16xbf16>, tensor<8x16xbf16>) -> tensor<4x8xbf16>
  return %1, %4 : tensor<f32>, tensor<4x8xbf16>
}

// -----

// f32 logits, `sum`, seen through a reshape: fused, and written over the
// matmul's buffer (the reshape is an alias of it).
// CHECK-LABEL: func.func @f32_reshape
// CHECK:       llmc.reshape
// CHECK:       llmc.kernel -> (tensor<f32>, tensor<2x2x16xf32>) attributes {llmc.overwrites = array<i64: -1, 0>} {
// CHECK-NEXT:    llmc.cross_entropy sum
// CHECK-NEXT:    llmc.cross_entropy_grad sum
// CHECK-NEXT:    llmc.yield
func.func @f32_reshape(%h: tensor<4x8xf32>, %w: tensor<8x16xf32>, %t: tensor<2x2xi64>, %d: tensor<f32>) -> (tensor<f32>, tensor<2x2x16xf32>) {
  %x = llmc.matmul %h, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = llmc.reshape %x : tensor<4x16xf32> -> tensor<2x2x16xf32>
  %1 = llmc.cross_entropy sum %r, %t : (tensor<2x2x16xf32>, tensor<2x2xi64>) -> tensor<f32>
  %2 = llmc.cross_entropy_grad sum %r, %t, %d : (tensor<2x2x16xf32>, tensor<2x2xi64>, tensor<f32>) -> tensor<2x2x16xf32>
  return %1, %2 : tensor<f32>, tensor<2x2x16xf32>
}

// -----

// The gradient is computed first and read before the loss: the group
// goes to the gradient's place (the loss's inputs exist there). The logits
// are returned too, so they are not overwritten (no `llmc.overwrites`).
// CHECK-LABEL: func.func @grad_first
// CHECK:       %[[F:.+]]:2 = llmc.kernel -> (tensor<f32>, tensor<4x16xf32>) {
// CHECK-NEXT:    llmc.cross_entropy mean
// CHECK-NEXT:    llmc.cross_entropy_grad mean
// CHECK:       llmc.neg %[[F]]#0
// CHECK:       return %[[F]]#0, %[[F]]#1, %arg0
func.func @grad_first(%x: tensor<4x16xf32>, %t: tensor<4xi64>, %d: tensor<f32>) -> (tensor<f32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %2 = llmc.cross_entropy_grad mean %x, %t, %d : (tensor<4x16xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x16xf32>
  %n = llmc.neg %2 : tensor<4x16xf32>
  %1 = llmc.cross_entropy mean %x, %t : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  %m = llmc.neg %1 : tensor<f32>
  return %1, %2, %x : tensor<f32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Negative: the logits are a function argument (the caller's buffer): fused,
// but not overwritten.
// CHECK-LABEL: func.func @argument
// CHECK:       llmc.kernel -> (tensor<f32>, tensor<4x16xf32>) {
// CHECK-NEXT:    llmc.cross_entropy mean
func.func @argument(%x: tensor<4x16xf32>, %t: tensor<4xi64>, %d: tensor<f32>) -> (tensor<f32>, tensor<4x16xf32>) {
  %1 = llmc.cross_entropy mean %x, %t : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  %2 = llmc.cross_entropy_grad mean %x, %t, %d : (tensor<4x16xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x16xf32>
  return %1, %2 : tensor<f32>, tensor<4x16xf32>
}

// -----

// Negative: the logits have another reader after the gradient (a softmax
// of the same logits): fused, not overwritten.
// CHECK-LABEL: func.func @later_reader
// CHECK:       llmc.kernel -> (tensor<f32>, tensor<4x16xf32>) {
// CHECK:       llmc.softmax
func.func @later_reader(%h: tensor<4x8xf32>, %w: tensor<8x16xf32>, %t: tensor<4xi64>, %d: tensor<f32>) -> (tensor<f32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %x = llmc.matmul %h, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = llmc.cross_entropy mean %x, %t : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  %2 = llmc.cross_entropy_grad mean %x, %t, %d : (tensor<4x16xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x16xf32>
  %s = llmc.softmax %x : tensor<4x16xf32>
  return %1, %2, %s : tensor<f32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Negative: the two ops disagree (different targets, different
// ignore_index, different reductions) or the reduction is `none`: nothing
// fuses.
// CHECK-LABEL: func.func @mismatch
// CHECK-NOT:   llmc.kernel -> (tensor<f32>, tensor<4x16xf32>)
// CHECK-NOT:   llmc.kernel -> (tensor<4xf32>, tensor<4x16xf32>)
// CHECK:       return
func.func @mismatch(%x: tensor<4x16xf32>, %t: tensor<4xi64>, %u: tensor<4xi64>, %d: tensor<f32>, %dn: tensor<4xf32>) -> (tensor<f32>, tensor<4x16xf32>, tensor<f32>, tensor<4x16xf32>, tensor<f32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4x16xf32>) {
  %1 = llmc.cross_entropy mean %x, %t : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  %2 = llmc.cross_entropy_grad mean %x, %u, %d : (tensor<4x16xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x16xf32>
  %3 = llmc.cross_entropy sum %x, %t {ignore_index = 0 : i64} : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  %4 = llmc.cross_entropy_grad sum %x, %t, %d : (tensor<4x16xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x16xf32>
  %5 = llmc.cross_entropy sum %x, %u : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  %6 = llmc.cross_entropy_grad mean %x, %u, %d : (tensor<4x16xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x16xf32>
  %7 = llmc.cross_entropy none %x, %t : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<4xf32>
  %8 = llmc.cross_entropy_grad none %x, %t, %dn : (tensor<4x16xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x16xf32>
  return %1, %2, %3, %4, %5, %6, %7, %8 : tensor<f32>, tensor<4x16xf32>, tensor<f32>, tensor<4x16xf32>, tensor<f32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4x16xf32>
}

// -----

// Negative: the gradient's cotangent is computed from the loss (a cycle if
// fused), and the loss is read between the two groups.
// CHECK-LABEL: func.func @cotangent_from_loss
// CHECK:       llmc.kernel -> (tensor<f32>) {
// CHECK-NEXT:    llmc.cross_entropy mean
// CHECK:       llmc.kernel -> (tensor<4x16xf32>) {
// CHECK-NEXT:    llmc.cross_entropy_grad mean
func.func @cotangent_from_loss(%x: tensor<4x16xf32>, %t: tensor<4xi64>) -> (tensor<f32>, tensor<4x16xf32>) {
  %1 = llmc.cross_entropy mean %x, %t : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  %d = llmc.neg %1 : tensor<f32>
  %2 = llmc.cross_entropy_grad mean %x, %t, %d : (tensor<4x16xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x16xf32>
  return %1, %2 : tensor<f32>, tensor<4x16xf32>
}

// -----

// Negative: the loss is read between the groups and the gradient's
// cotangent is only computed after the loss group: neither place works.
// CHECK-LABEL: func.func @no_place
// CHECK:       llmc.kernel -> (tensor<f32>) {
// CHECK-NEXT:    llmc.cross_entropy mean
// CHECK:       llmc.kernel -> (tensor<4x16xf32>) {
// CHECK-NEXT:    llmc.cross_entropy_grad mean
func.func @no_place(%x: tensor<4x16xf32>, %t: tensor<4xi64>, %c: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<4x16xf32>) {
  %1 = llmc.cross_entropy mean %x, %t : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  %m = llmc.neg %1 : tensor<f32>
  %d = llmc.neg %c : tensor<f32>
  %2 = llmc.cross_entropy_grad mean %x, %t, %d : (tensor<4x16xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x16xf32>
  return %1, %m, %2 : tensor<f32>, tensor<f32>, tensor<4x16xf32>
}
