// RUN: llmc-opt %s | llmc-opt | FileCheck %s
// RUN: llmc-opt %s --mlir-print-op-generic | llmc-opt | FileCheck %s

// Round trip of llmc.kernel groups (docs/kernel-ir.md).

// A group of one op; its ops read values of the function directly.
// CHECK-LABEL: func.func @one_op
// CHECK:       %[[K:.+]] = llmc.kernel -> (tensor<8xf32>) {
// CHECK-NEXT:    %[[A:.+]] = llmc.add %arg0, %arg1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:    llmc.yield %[[A]] : tensor<8xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  return %[[K]]
func.func @one_op(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = llmc.kernel -> (tensor<8xf32>) {
    %1 = llmc.add %a, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    llmc.yield %1 : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}

// A fused group (a matmul with its bias add) and a group of two results.
// CHECK-LABEL: func.func @fused
// CHECK:       %[[K:.+]] = llmc.kernel -> (tensor<32x96xf32>) {
// CHECK-NEXT:    %[[M:.+]] = llmc.matmul %arg0, %arg1
// CHECK-NEXT:    %[[A:.+]] = llmc.add %[[M]], %arg2
// CHECK-NEXT:    llmc.yield %[[A]] : tensor<32x96xf32>
// CHECK:       %{{.+}}:2 = llmc.kernel -> (tensor<32x96xf32>, tensor<32x96xf32>) {
// CHECK:         llmc.yield %{{.+}}, %{{.+}} : tensor<32x96xf32>, tensor<32x96xf32>
func.func @fused(%x: tensor<32x64xf32>, %w: tensor<64x96xf32>, %b: tensor<96xf32>) -> tensor<32x96xf32> {
  %0 = llmc.kernel -> (tensor<32x96xf32>) {
    %1 = llmc.matmul %x, %w : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
    %2 = llmc.add %1, %b : (tensor<32x96xf32>, tensor<96xf32>) -> tensor<32x96xf32>
    llmc.yield %2 : tensor<32x96xf32>
  }
  %3:2 = llmc.kernel -> (tensor<32x96xf32>, tensor<32x96xf32>) {
    %4 = llmc.neg %0 : tensor<32x96xf32>
    %5 = llmc.exp %0 : tensor<32x96xf32>
    llmc.yield %4, %5 : tensor<32x96xf32>, tensor<32x96xf32>
  }
  return %3#1 : tensor<32x96xf32>
}

// An in-place update: result 0 takes argument 0's buffer.
// CHECK-LABEL: func.func @in_place
// CHECK:       llmc.kernel -> (tensor<8xf32>) attributes {in_place = array<i64: 0>} {
func.func @in_place(%p: tensor<8xf32>, %g: tensor<8xf32>) -> (tensor<8xf32> {llmc.next = 0 : i64}) {
  %0 = llmc.kernel -> (tensor<8xf32>) attributes {in_place = array<i64: 0>} {
    %1 = llmc.sub %p, %g : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    llmc.yield %1 : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}
