// RUN: llmc-opt %s --llmc-form-kernels --split-input-file | FileCheck %s
// RUN: llmc-opt %s --llmc-form-kernels --llmc-form-kernels --split-input-file | FileCheck %s

// Every op that launches something gets a group of its own, in place, whose
// results replace the op's; the second RUN line shows the pass is
// idempotent (groups are not grouped again).
// CHECK-LABEL: func.func @each_op
// CHECK:       %[[M:.+]] = llmc.kernel -> (tensor<32x96xf32>) {
// CHECK-NEXT:    %[[I:.+]] = llmc.matmul %arg0, %arg1
// CHECK-NEXT:    llmc.yield %[[I]] : tensor<32x96xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[A:.+]] = llmc.kernel -> (tensor<32x96xf32>) {
// CHECK-NEXT:    %[[J:.+]] = llmc.add %[[M]], %arg2
// CHECK-NEXT:    llmc.yield %[[J]] : tensor<32x96xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[G:.+]] = llmc.kernel -> (tensor<32x96xf32>) {
// CHECK-NEXT:    llmc.gelu tanh %[[A]]
// CHECK:       return %[[G]]
// CHECK-NOT:   llmc.kernel
func.func @each_op(%x: tensor<32x64xf32>, %w: tensor<64x96xf32>, %b: tensor<96xf32>) -> tensor<32x96xf32> {
  %0 = llmc.matmul %x, %w : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
  %1 = llmc.add %0, %b : (tensor<32x96xf32>, tensor<96xf32>) -> tensor<32x96xf32>
  %2 = llmc.gelu tanh %1 : tensor<32x96xf32>
  return %2 : tensor<32x96xf32>
}

// -----

// An op of several results: one group yields them all, in order.
// CHECK-LABEL: func.func @results
// CHECK:       %[[K:.+]]:3 = llmc.kernel -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
// CHECK-NEXT:    %[[P:.+]], %[[M:.+]], %[[V:.+]] = llmc.adamw_update
// CHECK-NEXT:    llmc.yield %[[P]], %[[M]], %[[V]] :
// CHECK:       return %[[K]]#0, %[[K]]#1, %[[K]]#2
func.func @results(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<i64>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0:3 = llmc.adamw_update %p, %g, %m, %v, %lr, %t : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %0#0, %0#1, %0#2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// reshape (an alias of its operand's buffer) and constant (a buffer with
// initial data) launch nothing: they stay outside groups, and groups read
// them directly.
// CHECK-LABEL: func.func @no_launch
// CHECK-NEXT:  %[[C:.+]] = llmc.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:  %[[R:.+]] = llmc.reshape %arg0 : tensor<4x8xf32> -> tensor<32xf32>
// CHECK-NEXT:  %[[K:.+]] = llmc.kernel -> (tensor<32xf32>) {
// CHECK-NEXT:    llmc.mul %[[R]], %[[C]]
// CHECK:       %[[S:.+]] = llmc.reshape %[[K]] : tensor<32xf32> -> tensor<4x8xf32>
// CHECK-NEXT:  return %[[S]]
func.func @no_launch(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = llmc.constant dense<2.0> : tensor<f32>
  %0 = llmc.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  %1 = llmc.mul %0, %c : (tensor<32xf32>, tensor<f32>) -> tensor<32xf32>
  %2 = llmc.reshape %1 : tensor<32xf32> -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// A function of no ops, and an external one: nothing to group.
// CHECK-LABEL: func.func @identity
// CHECK-NEXT:  return %arg0
// CHECK-LABEL: func.func private @external
func.func @identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func private @external(tensor<4xf32>) -> tensor<4xf32>

// -----

// An op of another dialect is grouped too; the backend names it when it has
// no emitter (test/lit/pipeline/compile-errors.mlir).
// CHECK-LABEL: func.func @call
// CHECK:       llmc.kernel -> (tensor<4xf32>) {
// CHECK-NEXT:    func.call @callee
func.func private @callee(tensor<4xf32>) -> tensor<4xf32>
func.func @call(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @callee(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Batch dims that broadcast partially ([2, 4] against [2, 1], Falcon's
// multi-query attention) have no single cuBLASLt batch stride: the
// broadcasting operand is materialized first, in a group of its own.
// CHECK-LABEL: func.func @partial_batch_broadcast
// CHECK:       %[[B:.+]] = llmc.kernel -> (tensor<2x4x16x8xf32>) {
// CHECK-NEXT:    llmc.broadcast_to %arg1 : tensor<2x1x16x8xf32> -> tensor<2x4x16x8xf32>
// CHECK:       llmc.kernel -> (tensor<2x4x16x8xf32>) {
// CHECK-NEXT:    llmc.matmul %arg0, %[[B]] : (tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>)
func.func @partial_batch_broadcast(%p: tensor<2x4x16x16xf32>, %v: tensor<2x1x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %0 = llmc.matmul %p, %v : (tensor<2x4x16x16xf32>, tensor<2x1x16x8xf32>) -> tensor<2x4x16x8xf32>
  return %0 : tensor<2x4x16x8xf32>
}

// -----

// A bf16 linear layer rounds once, after its bias (docs/precision.md): the
// matmul and its bias add are one group from the start, placed at the add
// (here after the bias it reads), so that no fusion setting splits them
// into two roundings. An f16 [B, T, d] product the same.
// CHECK-LABEL: func.func @bf16_linear
// CHECK:       %[[E:.+]] = llmc.kernel -> (tensor<96xbf16>) {
// CHECK-NEXT:    llmc.exp %arg2
// CHECK:       %[[K:.+]] = llmc.kernel -> (tensor<32x96xbf16>) {
// CHECK-NEXT:    %[[M:.+]] = llmc.matmul %arg0, %arg1
// CHECK-NEXT:    %[[A:.+]] = llmc.add %[[M]], %[[E]]
// CHECK-NEXT:    llmc.yield %[[A]] : tensor<32x96xbf16>
// CHECK-NEXT:  }
// CHECK-NEXT:  llmc.kernel
// CHECK-NEXT:    llmc.gelu tanh %[[K]]
// CHECK:       llmc.kernel -> (tensor<2x4x8xf16>) {
// CHECK-NEXT:    llmc.matmul
// CHECK-NEXT:    llmc.add
// CHECK-NEXT:    llmc.yield
func.func @bf16_linear(%x: tensor<32x64xbf16>, %w: tensor<64x96xbf16>, %b: tensor<96xbf16>, %h: tensor<2x4x16xf16>, %v: tensor<16x8xf16>, %c: tensor<1x1x8xf16>) -> (tensor<32x96xbf16>, tensor<2x4x8xf16>) {
  %0 = llmc.matmul %x, %w : (tensor<32x64xbf16>, tensor<64x96xbf16>) -> tensor<32x96xbf16>
  %e = llmc.exp %b : tensor<96xbf16>
  %1 = llmc.add %0, %e : (tensor<32x96xbf16>, tensor<96xbf16>) -> tensor<32x96xbf16>
  %2 = llmc.gelu tanh %1 : tensor<32x96xbf16>
  %3 = llmc.matmul %h, %v : (tensor<2x4x16xf16>, tensor<16x8xf16>) -> tensor<2x4x8xf16>
  %4 = llmc.add %c, %3 : (tensor<1x1x8xf16>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  return %2, %4 : tensor<32x96xbf16>, tensor<2x4x8xf16>
}

// -----

// A weight shared by every batch (no batch dims, or all of them 1) keeps
// stride 0: nothing is materialized.
// CHECK-LABEL: func.func @whole_broadcast
// CHECK-NOT:   llmc.broadcast_to
// CHECK:       llmc.matmul %arg0, %arg1 : (tensor<2x4x16x16xf32>, tensor<1x1x16x8xf32>)
func.func @whole_broadcast(%p: tensor<2x4x16x16xf32>, %w: tensor<1x1x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %0 = llmc.matmul %p, %w : (tensor<2x4x16x16xf32>, tensor<1x1x16x8xf32>) -> tensor<2x4x16x8xf32>
  return %0 : tensor<2x4x16x8xf32>
}

// -----

// Not a linear bias add of one cuBLASLt call: the product has a second
// reader; the "bias" is a matrix; a batched rhs (two GEMMs). Each op keeps
// its own group.
// CHECK-LABEL: func.func @bf16_not_linear
// CHECK-COUNT-6: llmc.kernel -> ({{[^,]*}}) {
// CHECK-NOT:   llmc.kernel
func.func @bf16_not_linear(%x: tensor<32x64xbf16>, %w: tensor<64x96xbf16>, %b: tensor<96xbf16>, %m: tensor<32x96xbf16>, %bx: tensor<2x32x64xbf16>, %bw: tensor<2x64x96xbf16>) -> (tensor<32x96xbf16>, tensor<32x96xbf16>, tensor<32x96xbf16>, tensor<2x32x96xbf16>) {
  %0 = llmc.matmul %x, %w : (tensor<32x64xbf16>, tensor<64x96xbf16>) -> tensor<32x96xbf16>
  %1 = llmc.add %0, %b : (tensor<32x96xbf16>, tensor<96xbf16>) -> tensor<32x96xbf16>
  %2 = llmc.matmul %x, %w : (tensor<32x64xbf16>, tensor<64x96xbf16>) -> tensor<32x96xbf16>
  %3 = llmc.add %2, %m : (tensor<32x96xbf16>, tensor<32x96xbf16>) -> tensor<32x96xbf16>
  %4 = llmc.matmul %bx, %bw : (tensor<2x32x64xbf16>, tensor<2x64x96xbf16>) -> tensor<2x32x96xbf16>
  %5 = llmc.add %4, %b : (tensor<2x32x96xbf16>, tensor<96xbf16>) -> tensor<2x32x96xbf16>
  return %0, %1, %3, %5 : tensor<32x96xbf16>, tensor<32x96xbf16>, tensor<32x96xbf16>, tensor<2x32x96xbf16>
}
