// RUN: llmc-opt %s --llmc-raise-rotary --split-input-file | FileCheck %s

// HF apply_rotary_pos_emb on q [B, H, T, D] with tables [B, 1, T, D].
// CHECK-LABEL: func.func @hf_rotate_half
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x16x16xf32>, %[[COS:.+]]: tensor<2x1x16x16xf32>, %[[SIN:.+]]: tensor<2x1x16x16xf32>)
// CHECK: %[[Y:.+]] = llmc.rotary %[[Q]], %[[COS]], %[[SIN]] : (tensor<2x4x16x16xf32>, tensor<2x1x16x16xf32>, tensor<2x1x16x16xf32>) -> tensor<2x4x16x16xf32>
// CHECK-NOT: llmc.concat
// CHECK: return %[[Y]]
func.func @hf_rotate_half(%q: tensor<2x4x16x16xf32>, %cos: tensor<2x1x16x16xf32>, %sin: tensor<2x1x16x16xf32>) -> tensor<2x4x16x16xf32> {
  %qc = llmc.mul %q, %cos : (tensor<2x4x16x16xf32>, tensor<2x1x16x16xf32>) -> tensor<2x4x16x16xf32>
  %lo = llmc.slice %q starts [0, 0, 0, 0] limits [2, 4, 16, 8] strides [1, 1, 1, 1] : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x8xf32>
  %hi = llmc.slice %q starts [0, 0, 0, 8] limits [2, 4, 16, 16] strides [1, 1, 1, 1] : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x8xf32>
  %nhi = llmc.neg %hi : tensor<2x4x16x8xf32>
  %rh = llmc.concat %nhi, %lo axis 3 : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
  %rs = llmc.mul %rh, %sin : (tensor<2x4x16x16xf32>, tensor<2x1x16x16xf32>) -> tensor<2x4x16x16xf32>
  %y = llmc.add %qc, %rs : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  return %y : tensor<2x4x16x16xf32>
}

// -----

// Operands commuted everywhere, [T, D] tables, halves from one split.
// CHECK-LABEL: func.func @commuted_split
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x16x16xf32>, %[[COS:.+]]: tensor<16x16xf32>, %[[SIN:.+]]: tensor<16x16xf32>)
// CHECK: llmc.rotary %[[Q]], %[[COS]], %[[SIN]]
func.func @commuted_split(%q: tensor<2x4x16x16xf32>, %cos: tensor<16x16xf32>, %sin: tensor<16x16xf32>) -> tensor<2x4x16x16xf32> {
  %lo, %hi = llmc.split %q axis 3 sizes [8, 8] : (tensor<2x4x16x16xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>)
  %nhi = llmc.neg %hi : tensor<2x4x16x8xf32>
  %rh = llmc.concat %nhi, %lo axis 3 : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
  %rs = llmc.mul %sin, %rh : (tensor<16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %qc = llmc.mul %cos, %q : (tensor<16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %y = llmc.add %rs, %qc : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  return %y : tensor<2x4x16x16xf32>
}

// -----

// Near miss: the negated half is the low one (rotation the other way).
// CHECK-LABEL: func.func @wrong_half_negated
// CHECK-NOT: llmc.rotary
func.func @wrong_half_negated(%q: tensor<2x4x16x16xf32>, %cos: tensor<16x16xf32>, %sin: tensor<16x16xf32>) -> tensor<2x4x16x16xf32> {
  %qc = llmc.mul %q, %cos : (tensor<2x4x16x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16x16xf32>
  %lo = llmc.slice %q starts [0, 0, 0, 0] limits [2, 4, 16, 8] strides [1, 1, 1, 1] : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x8xf32>
  %hi = llmc.slice %q starts [0, 0, 0, 8] limits [2, 4, 16, 16] strides [1, 1, 1, 1] : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x8xf32>
  %nlo = llmc.neg %lo : tensor<2x4x16x8xf32>
  %rh = llmc.concat %nlo, %hi axis 3 : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
  %rs = llmc.mul %rh, %sin : (tensor<2x4x16x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16x16xf32>
  %y = llmc.add %qc, %rs : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  return %y : tensor<2x4x16x16xf32>
}

// -----

// Near miss: the halves are cut along the sequence axis.
// CHECK-LABEL: func.func @wrong_axis
// CHECK-NOT: llmc.rotary
func.func @wrong_axis(%q: tensor<2x4x16x16xf32>, %cos: tensor<16x16xf32>, %sin: tensor<16x16xf32>) -> tensor<2x4x16x16xf32> {
  %qc = llmc.mul %q, %cos : (tensor<2x4x16x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16x16xf32>
  %lo = llmc.slice %q starts [0, 0, 0, 0] limits [2, 4, 8, 16] strides [1, 1, 1, 1] : (tensor<2x4x16x16xf32>) -> tensor<2x4x8x16xf32>
  %hi = llmc.slice %q starts [0, 0, 8, 0] limits [2, 4, 16, 16] strides [1, 1, 1, 1] : (tensor<2x4x16x16xf32>) -> tensor<2x4x8x16xf32>
  %nhi = llmc.neg %hi : tensor<2x4x8x16xf32>
  %rh = llmc.concat %nhi, %lo axis 2 : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
  %rs = llmc.mul %rh, %sin : (tensor<2x4x16x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16x16xf32>
  %y = llmc.add %qc, %rs : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  return %y : tensor<2x4x16x16xf32>
}

// -----

// Near miss: cos multiplies another tensor than the rotated one.
// CHECK-LABEL: func.func @cos_of_other
// CHECK-NOT: llmc.rotary
func.func @cos_of_other(%q: tensor<2x4x16x16xf32>, %k: tensor<2x4x16x16xf32>, %cos: tensor<16x16xf32>, %sin: tensor<16x16xf32>) -> tensor<2x4x16x16xf32> {
  %kc = llmc.mul %k, %cos : (tensor<2x4x16x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16x16xf32>
  %lo = llmc.slice %q starts [0, 0, 0, 0] limits [2, 4, 16, 8] strides [1, 1, 1, 1] : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x8xf32>
  %hi = llmc.slice %q starts [0, 0, 0, 8] limits [2, 4, 16, 16] strides [1, 1, 1, 1] : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x8xf32>
  %nhi = llmc.neg %hi : tensor<2x4x16x8xf32>
  %rh = llmc.concat %nhi, %lo axis 3 : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
  %rs = llmc.mul %rh, %sin : (tensor<2x4x16x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16x16xf32>
  %y = llmc.add %kc, %rs : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  return %y : tensor<2x4x16x16xf32>
}

// -----

// Near miss: the rotated half is also returned.
// CHECK-LABEL: func.func @rotated_other_use
// CHECK-NOT: llmc.rotary
func.func @rotated_other_use(%q: tensor<2x4x16x16xf32>, %cos: tensor<16x16xf32>, %sin: tensor<16x16xf32>) -> (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) {
  %qc = llmc.mul %q, %cos : (tensor<2x4x16x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16x16xf32>
  %lo = llmc.slice %q starts [0, 0, 0, 0] limits [2, 4, 16, 8] strides [1, 1, 1, 1] : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x8xf32>
  %hi = llmc.slice %q starts [0, 0, 0, 8] limits [2, 4, 16, 16] strides [1, 1, 1, 1] : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x8xf32>
  %nhi = llmc.neg %hi : tensor<2x4x16x8xf32>
  %rh = llmc.concat %nhi, %lo axis 3 : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
  %rs = llmc.mul %rh, %sin : (tensor<2x4x16x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16x16xf32>
  %y = llmc.add %qc, %rs : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  return %y, %rh : tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>
}

// -----

// Near miss: cos and sin tables of different shapes.
// CHECK-LABEL: func.func @tables_differ
// CHECK-NOT: llmc.rotary
func.func @tables_differ(%q: tensor<2x4x16x16xf32>, %cos: tensor<16x16xf32>, %sin: tensor<1x16x16xf32>) -> tensor<2x4x16x16xf32> {
  %qc = llmc.mul %q, %cos : (tensor<2x4x16x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16x16xf32>
  %lo = llmc.slice %q starts [0, 0, 0, 0] limits [2, 4, 16, 8] strides [1, 1, 1, 1] : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x8xf32>
  %hi = llmc.slice %q starts [0, 0, 0, 8] limits [2, 4, 16, 16] strides [1, 1, 1, 1] : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x8xf32>
  %nhi = llmc.neg %hi : tensor<2x4x16x8xf32>
  %rh = llmc.concat %nhi, %lo axis 3 : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
  %rs = llmc.mul %rh, %sin : (tensor<2x4x16x16xf32>, tensor<1x16x16xf32>) -> tensor<2x4x16x16xf32>
  %y = llmc.add %qc, %rs : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  return %y : tensor<2x4x16x16xf32>
}
