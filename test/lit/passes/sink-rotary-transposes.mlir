// RUN: llmc-opt %s --llmc-sink-rotary-transposes --split-input-file | FileCheck %s

// Llama's q: projected as [B, T, H, D], transposed to [B, H, T, D], rotated
// with [1, 1, T, R] tables. The rotary moves before the transpose, its
// tables viewed as [1, T, 1, R].
// CHECK-LABEL: func.func @llama_q
// CHECK: %[[C:.*]] = llmc.reshape %arg1 : tensor<1x1x8x16xf32> -> tensor<1x8x1x16xf32>
// CHECK: %[[S:.*]] = llmc.reshape %arg2 : tensor<1x1x8x16xf32> -> tensor<1x8x1x16xf32>
// CHECK: %[[R:.*]] = llmc.rotary %arg0, %[[C]], %[[S]] : (tensor<2x8x4x16xf32>, tensor<1x8x1x16xf32>, tensor<1x8x1x16xf32>) -> tensor<2x8x4x16xf32>
// CHECK: %[[T:.*]] = llmc.transpose %[[R]] [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
// CHECK: return %[[T]]
func.func @llama_q(%x: tensor<2x8x4x16xf32>, %cos: tensor<1x1x8x16xf32>, %sin: tensor<1x1x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %t = llmc.transpose %x [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %r = llmc.rotary %t, %cos, %sin : (tensor<2x4x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %r : tensor<2x4x8x16xf32>
}

// -----

// Rank-2 tables [T, R] (broadcast from the right) and a partial rotary
// (R 8 of D 16), interleaved: the attribute is kept.
// CHECK-LABEL: func.func @rank2_tables
// CHECK: llmc.reshape %arg1 : tensor<8x8xf32> -> tensor<1x8x1x8xf32>
// CHECK: llmc.rotary %arg0, %{{.*}}, %{{.*}} {interleaved} : (tensor<2x8x4x16xf32>
// CHECK: llmc.transpose %{{.*}} [0, 2, 1, 3]
func.func @rank2_tables(%x: tensor<2x8x4x16xf32>, %cos: tensor<8x8xf32>, %sin: tensor<8x8xf32>) -> tensor<2x4x8x16xf32> {
  %t = llmc.transpose %x [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %r = llmc.rotary %t, %cos, %sin {interleaved} : (tensor<2x4x8x16xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8x16xf32>
  return %r : tensor<2x4x8x16xf32>
}

// -----

// Negative: per-head tables [1, H, T, R] would be [1, T, H, R] in x's
// layout, a real transpose of the table: the op stays as it is.
// CHECK-LABEL: func.func @per_head_tables
// CHECK: %[[T:.*]] = llmc.transpose %arg0 [0, 2, 1, 3]
// CHECK: llmc.rotary %[[T]], %arg1, %arg2
// CHECK-NOT: llmc.transpose
func.func @per_head_tables(%x: tensor<2x8x4x16xf32>, %cos: tensor<1x4x8x16xf32>, %sin: tensor<1x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %t = llmc.transpose %x [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %r = llmc.rotary %t, %cos, %sin : (tensor<2x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %r : tensor<2x4x8x16xf32>
}

// -----

// Negative: a transpose that moves the feature dim stays.
// CHECK-LABEL: func.func @moves_features
// CHECK: %[[T:.*]] = llmc.transpose %arg0 [0, 1, 3, 2]
// CHECK: llmc.rotary %[[T]]
func.func @moves_features(%x: tensor<2x4x16x8xf32>, %cos: tensor<8x16xf32>, %sin: tensor<8x16xf32>) -> tensor<2x4x8x16xf32> {
  %t = llmc.transpose %x [0, 1, 3, 2] : (tensor<2x4x16x8xf32>) -> tensor<2x4x8x16xf32>
  %r = llmc.rotary %t, %cos, %sin : (tensor<2x4x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8x16xf32>
  return %r : tensor<2x4x8x16xf32>
}

// -----

// The transpose has another reader: it stays for it, the rotary still moves.
// CHECK-LABEL: func.func @shared
// CHECK: %[[T:.*]] = llmc.transpose %arg0 [0, 2, 1, 3]
// CHECK: %[[R:.*]] = llmc.rotary %arg0
// CHECK: %[[B:.*]] = llmc.transpose %[[R]] [0, 2, 1, 3]
// CHECK: return %[[B]], %[[T]]
func.func @shared(%x: tensor<2x8x4x16xf32>, %cos: tensor<1x1x8x16xf32>, %sin: tensor<1x1x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) {
  %t = llmc.transpose %x [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %r = llmc.rotary %t, %cos, %sin : (tensor<2x4x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %r, %t : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
}
