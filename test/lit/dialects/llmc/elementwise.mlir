// RUN: llmc-opt %s | llmc-opt | FileCheck %s
// RUN: llmc-opt %s --mlir-print-op-generic | llmc-opt | FileCheck %s

// Round trip of the elementwise ops: custom and generic forms print back the
// same custom form.

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<4x8xf32>, %i: tensor<4xi64>) -> tensor<4x8xf32> {
  // CHECK: llmc.neg %{{.*}} : tensor<4x8xf32>
  %0 = llmc.neg %x : tensor<4x8xf32>
  // CHECK: llmc.abs %{{.*}} : tensor<4xi64>
  %1 = llmc.abs %i : tensor<4xi64>
  // CHECK: llmc.exp
  %2 = llmc.exp %0 : tensor<4x8xf32>
  // CHECK: llmc.log
  %3 = llmc.log %2 : tensor<4x8xf32>
  // CHECK: llmc.sqrt
  %4 = llmc.sqrt %3 : tensor<4x8xf32>
  // CHECK: llmc.rsqrt
  %5 = llmc.rsqrt %4 : tensor<4x8xf32>
  // CHECK: llmc.reciprocal
  %6 = llmc.reciprocal %5 : tensor<4x8xf32>
  // CHECK: llmc.tanh
  %7 = llmc.tanh %6 : tensor<4x8xf32>
  // CHECK: llmc.erf
  %8 = llmc.erf %7 : tensor<4x8xf32>
  // CHECK: llmc.sigmoid
  %9 = llmc.sigmoid %8 : tensor<4x8xf32>
  // CHECK: llmc.relu
  %10 = llmc.relu %9 : tensor<4x8xf32>
  // CHECK: llmc.cos
  %11 = llmc.cos %10 : tensor<4x8xf32>
  // CHECK: llmc.sin
  %12 = llmc.sin %11 : tensor<4x8xf32>
  return %12 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @low_precision
func.func @low_precision(%a: tensor<16xbf16>, %b: tensor<16xf16>,
                         %c: tensor<16xf8E4M3FN>, %d: tensor<16xf8E5M2>) -> tensor<16xbf16> {
  // CHECK: llmc.exp %{{.*}} : tensor<16xbf16>
  %0 = llmc.exp %a : tensor<16xbf16>
  // CHECK: llmc.tanh %{{.*}} : tensor<16xf16>
  %1 = llmc.tanh %b : tensor<16xf16>
  // CHECK: llmc.neg %{{.*}} : tensor<16xf8E4M3FN>
  %2 = llmc.neg %c : tensor<16xf8E4M3FN>
  // CHECK: llmc.neg %{{.*}} : tensor<16xf8E5M2>
  %3 = llmc.neg %d : tensor<16xf8E5M2>
  return %0 : tensor<16xbf16>
}

// CHECK-LABEL: func.func @binary_broadcast
func.func @binary_broadcast(%x: tensor<2x4x8xf32>, %b: tensor<8xf32>, %s: tensor<f32>,
                            %c: tensor<4x1xf32>) -> tensor<2x4x8xf32> {
  // CHECK: llmc.add %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %0 = llmc.add %x, %b : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: llmc.sub %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %1 = llmc.sub %0, %s : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  // CHECK: llmc.mul %{{.*}}, %{{.*}} : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = llmc.mul %c, %b : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: llmc.div
  %3 = llmc.div %1, %2 : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: llmc.pow
  %4 = llmc.pow %3, %s : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  // CHECK: llmc.max
  %5 = llmc.max %4, %s : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  // CHECK: llmc.min
  %6 = llmc.min %5, %s : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  return %6 : tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @dynamic_dims
func.func @dynamic_dims(%x: tensor<?x?x768xf32>, %b: tensor<768xf32>) -> tensor<?x?x768xf32> {
  // CHECK: llmc.add %{{.*}}, %{{.*}} : (tensor<?x?x768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
  %0 = llmc.add %x, %b : (tensor<?x?x768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
  return %0 : tensor<?x?x768xf32>
}

// CHECK-LABEL: func.func @compare_where
func.func @compare_where(%i: tensor<8x1xi64>, %j: tensor<8xi64>, %x: tensor<2x8x8xf32>,
                         %ninf: tensor<f32>) -> tensor<2x8x8xf32> {
  // CHECK: llmc.compare le, %{{.*}}, %{{.*}} : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  %m = llmc.compare le, %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  // CHECK: llmc.compare eq
  %e = llmc.compare eq, %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  // CHECK: llmc.compare ne
  %n = llmc.compare ne, %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  // CHECK: llmc.compare gt
  %g = llmc.compare gt, %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  // CHECK: llmc.compare ge
  %h = llmc.compare ge, %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  // CHECK: llmc.compare lt
  %l = llmc.compare lt, %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  // CHECK: llmc.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8x8xi1>, tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
  %y = llmc.where %m, %x, %ninf : (tensor<8x8xi1>, tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
  return %y : tensor<2x8x8xf32>
}

// CHECK-LABEL: func.func @isnan_cast
func.func @isnan_cast(%x: tensor<4x8xf32>) -> tensor<4x8xbf16> {
  // CHECK: llmc.isnan %{{.*}} : tensor<4x8xf32> -> tensor<4x8xi1>
  %0 = llmc.isnan %x : tensor<4x8xf32> -> tensor<4x8xi1>
  // CHECK: llmc.cast %{{.*}} : tensor<4x8xi1> -> tensor<4x8xi64>
  %1 = llmc.cast %0 : tensor<4x8xi1> -> tensor<4x8xi64>
  // CHECK: llmc.cast %{{.*}} : tensor<4x8xf32> -> tensor<4x8xbf16>
  %2 = llmc.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
  return %2 : tensor<4x8xbf16>
}
