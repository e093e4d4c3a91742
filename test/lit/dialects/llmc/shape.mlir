// RUN: llmc-opt %s | llmc-opt | FileCheck %s
// RUN: llmc-opt %s --mlir-print-op-generic | llmc-opt | FileCheck %s

// Round trip of constants, iota, data movement and reductions.

// CHECK-LABEL: func.func @constants
func.func @constants() -> tensor<3xi64> {
  // CHECK: llmc.constant dense<0.000000e+00> : tensor<f32>
  %0 = llmc.constant dense<0.0> : tensor<f32>
  // CHECK: llmc.constant dense<[0, 2, 1]> : tensor<3xi64>
  %1 = llmc.constant dense<[0, 2, 1]> : tensor<3xi64>
  // CHECK: llmc.constant dense<true> : tensor<4x4xi1>
  %2 = llmc.constant dense<true> : tensor<4x4xi1>
  return %1 : tensor<3xi64>
}

// CHECK-LABEL: func.func @iota
func.func @iota() -> tensor<4x8xf32> {
  // CHECK: llmc.iota dim 0 : tensor<1024xi64>
  %0 = llmc.iota dim 0 : tensor<1024xi64>
  // CHECK: llmc.iota dim 1 {start = 5.000000e-01 : f64, step = 2.000000e+00 : f64} : tensor<4x8xf32>
  %1 = llmc.iota dim 1 {start = 0.5 : f64, step = 2.0 : f64} : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @reshape_transpose_broadcast
func.func @reshape_transpose_broadcast(%x: tensor<2x8x768xf32>, %r: tensor<1x8xf32>,
                                       %d: tensor<?x768xf32>) -> tensor<2x12x8x64xf32> {
  // CHECK: llmc.reshape %{{.*}} : tensor<2x8x768xf32> -> tensor<2x8x12x64xf32>
  %0 = llmc.reshape %x : tensor<2x8x768xf32> -> tensor<2x8x12x64xf32>
  // CHECK: llmc.transpose %{{.*}} [0, 2, 1, 3] : (tensor<2x8x12x64xf32>) -> tensor<2x12x8x64xf32>
  %1 = llmc.transpose %0 [0, 2, 1, 3] : (tensor<2x8x12x64xf32>) -> tensor<2x12x8x64xf32>
  // CHECK: llmc.broadcast_to %{{.*}} : tensor<1x8xf32> -> tensor<4x8xf32>
  %2 = llmc.broadcast_to %r : tensor<1x8xf32> -> tensor<4x8xf32>
  // CHECK: llmc.broadcast_to %{{.*}} : tensor<1x8xf32> -> tensor<3x4x8xf32>
  %3 = llmc.broadcast_to %r : tensor<1x8xf32> -> tensor<3x4x8xf32>
  // A dynamic dim reshapes without an element-count check.
  // CHECK: llmc.reshape %{{.*}} : tensor<?x768xf32> -> tensor<?x12x64xf32>
  %4 = llmc.reshape %d : tensor<?x768xf32> -> tensor<?x12x64xf32>
  return %1 : tensor<2x12x8x64xf32>
}

// CHECK-LABEL: func.func @slice_concat_split
func.func @slice_concat_split(%qkv: tensor<2x8x192xf32>, %a: tensor<2x3xf32>,
                              %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  // CHECK: llmc.slice %{{.*}} starts [0, 0, 64] limits [2, 8, 128] strides [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  %k = llmc.slice %qkv starts [0, 0, 64] limits [2, 8, 128] strides [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
  // CHECK: llmc.concat %{{.*}}, %{{.*}} axis 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  %c = llmc.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  // Strides round up: elements 1, 3, 5 of [1, 6).
  // CHECK: llmc.slice %{{.*}} starts [0, 1] limits [2, 6] strides [1, 2] : (tensor<2x8xf32>) -> tensor<2x3xf32>
  %s = llmc.slice %c starts [0, 1] limits [2, 6] strides [1, 2] : (tensor<2x8xf32>) -> tensor<2x3xf32>
  // CHECK: llmc.split %{{.*}} axis 2 sizes [64, 64, 64] : (tensor<2x8x192xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
  %p:3 = llmc.split %qkv axis 2 sizes [64, 64, 64] : (tensor<2x8x192xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
  return %c : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @gathers
func.func @gathers(%wte: tensor<512x64xf32>, %idx: tensor<2x16xi64>, %logp: tensor<16x512xf32>,
                   %tgt: tensor<16x1xi32>) -> tensor<2x16x64xf32> {
  // CHECK: llmc.gather %{{.*}}, %{{.*}} axis 0 : (tensor<512x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
  %e = llmc.gather %wte, %idx axis 0 : (tensor<512x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
  // CHECK: llmc.gather %{{.*}}, %{{.*}} axis 1 : (tensor<512x64xf32>, tensor<2x16xi64>) -> tensor<512x2x16xf32>
  %f = llmc.gather %wte, %idx axis 1 : (tensor<512x64xf32>, tensor<2x16xi64>) -> tensor<512x2x16xf32>
  // CHECK: llmc.gather_elements %{{.*}}, %{{.*}} axis 1 : (tensor<16x512xf32>, tensor<16x1xi32>) -> tensor<16x1xf32>
  %t = llmc.gather_elements %logp, %tgt axis 1 : (tensor<16x512xf32>, tensor<16x1xi32>) -> tensor<16x1xf32>
  return %e : tensor<2x16x64xf32>
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<2x8x768xf32>) -> tensor<2x8x1xf32> {
  // CHECK: llmc.reduce_mean %{{.*}} axes [2] keepdims : (tensor<2x8x768xf32>) -> tensor<2x8x1xf32>
  %0 = llmc.reduce_mean %x axes [2] keepdims : (tensor<2x8x768xf32>) -> tensor<2x8x1xf32>
  // CHECK: llmc.reduce_sum %{{.*}} axes [0, 1] : (tensor<2x8x768xf32>) -> tensor<768xf32>
  %1 = llmc.reduce_sum %x axes [0, 1] : (tensor<2x8x768xf32>) -> tensor<768xf32>
  // CHECK: llmc.reduce_max %{{.*}} axes [0, 1, 2] : (tensor<2x8x768xf32>) -> tensor<f32>
  %2 = llmc.reduce_max %x axes [0, 1, 2] : (tensor<2x8x768xf32>) -> tensor<f32>
  return %0 : tensor<2x8x1xf32>
}
