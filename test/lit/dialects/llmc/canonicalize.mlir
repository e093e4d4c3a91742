// RUN: llmc-opt %s --split-input-file --canonicalize | FileCheck %s

// Folds of the llmc ops: identities, composition, and constant folding of
// integer shape arithmetic. Float arithmetic on constants is left alone.

// CHECK-LABEL: func.func @arith_identities
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
// CHECK-NOT: llmc.add
// CHECK-NOT: llmc.sub
// CHECK-NOT: llmc.mul
// CHECK-NOT: llmc.div
// CHECK-NOT: llmc.pow
// CHECK: return %[[X]]
func.func @arith_identities(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %one = llmc.constant dense<1.0> : tensor<8xf32>
  %0 = llmc.add %x, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = llmc.sub %0, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %2 = llmc.mul %one, %1 : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = llmc.div %2, %one : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %4 = llmc.pow %3, %one : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// Adding zero that broadcasts x to a larger shape changes the type: kept.
// CHECK-LABEL: func.func @identity_that_broadcasts
// CHECK: llmc.add
func.func @identity_that_broadcasts(%x: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = llmc.constant dense<0.0> : tensor<4x8xf32>
  %0 = llmc.add %x, %zero : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A non-identity constant is not an identity.
// CHECK-LABEL: func.func @not_identity
// CHECK: llmc.add
// CHECK: llmc.mul
func.func @not_identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = llmc.constant dense<2.0> : tensor<f32>
  %0 = llmc.add %x, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = llmc.mul %0, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Float arithmetic on constants is the reference evaluator's job.
// CHECK-LABEL: func.func @float_constants_stay
// CHECK: llmc.add
func.func @float_constants_stay() -> tensor<2xf32> {
  %a = llmc.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = llmc.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %0 = llmc.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Shape arithmetic as an exporter writes it: [B, T, C] -> [B, T, H, C / H].
// CHECK-LABEL: func.func @int_arith
// CHECK-NOT: llmc.div
// CHECK-NOT: llmc.concat
// CHECK: %[[C:.+]] = llmc.constant dense<[2, 8, 12, 64]> : tensor<4xi64>
// CHECK: return %[[C]]
func.func @int_arith() -> tensor<4xi64> {
  %bt = llmc.constant dense<[2, 8]> : tensor<2xi64>
  %c = llmc.constant dense<768> : tensor<1xi64>
  %h = llmc.constant dense<12> : tensor<1xi64>
  %d = llmc.div %c, %h : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %s = llmc.concat %bt, %h, %d axis 0 : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  return %s : tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @int_broadcast_fold
// CHECK: llmc.constant dense<{{\[}}[11, 12], [21, 22]]> : tensor<2x2xi64>
// CHECK: llmc.constant dense<{{\[}}[true, false], [true, true]]> : tensor<2x2xi1>
// CHECK-NOT: llmc.add
// CHECK-NOT: llmc.compare
func.func @int_broadcast_fold() -> (tensor<2x2xi64>, tensor<2x2xi1>) {
  %col = llmc.constant dense<[[10], [20]]> : tensor<2x1xi64>
  %row = llmc.constant dense<[1, 2]> : tensor<2xi64>
  %0 = llmc.add %col, %row : (tensor<2x1xi64>, tensor<2xi64>) -> tensor<2x2xi64>
  // Causal mask: j <= i.
  %i = llmc.constant dense<[[0], [1]]> : tensor<2x1xi64>
  %j = llmc.constant dense<[0, 1]> : tensor<2xi64>
  %1 = llmc.compare le, %j, %i : (tensor<2xi64>, tensor<2x1xi64>) -> tensor<2x2xi1>
  return %0, %1 : tensor<2x2xi64>, tensor<2x2xi1>
}

// -----

// Integer division by zero is left for the runtime to report.
// CHECK-LABEL: func.func @int_div_by_zero
// CHECK: llmc.div
func.func @int_div_by_zero() -> tensor<1xi64> {
  %a = llmc.constant dense<7> : tensor<1xi64>
  %z = llmc.constant dense<0> : tensor<1xi64>
  %0 = llmc.div %a, %z : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  return %0 : tensor<1xi64>
}

// -----

// CHECK-LABEL: func.func @max_min_self
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @max_min_self(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = llmc.max %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = llmc.min %0, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @where_constant_condition
// CHECK-SAME: (%[[A:.+]]: tensor<4xf32>, %[[B:.+]]: tensor<4xf32>)
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @where_constant_condition(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %t = llmc.constant dense<true> : tensor<4xi1>
  %f = llmc.constant dense<false> : tensor<i1>
  %0 = llmc.where %t, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = llmc.where %f, %a, %b : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_chain
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x768xf32>)
// CHECK-NEXT: %[[R:.+]] = llmc.reshape %[[X]] : tensor<2x8x768xf32> -> tensor<16x768xf32>
// CHECK-NEXT: return %[[R]], %[[X]]
func.func @reshape_chain(%x: tensor<2x8x768xf32>) -> (tensor<16x768xf32>, tensor<2x8x768xf32>) {
  // reshape(reshape(x)) = reshape(x)
  %0 = llmc.reshape %x : tensor<2x8x768xf32> -> tensor<2x8x12x64xf32>
  %1 = llmc.reshape %0 : tensor<2x8x12x64xf32> -> tensor<16x768xf32>
  // reshape(x : T -> T) = x
  %2 = llmc.reshape %x : tensor<2x8x768xf32> -> tensor<2x8x768xf32>
  return %1, %2 : tensor<16x768xf32>, tensor<2x8x768xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_constant
// CHECK: llmc.constant dense<{{\[}}[1, 2], [3, 4]]> : tensor<2x2xi64>
// CHECK-NOT: llmc.reshape
func.func @reshape_constant() -> tensor<2x2xi64> {
  %c = llmc.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %0 = llmc.reshape %c : tensor<4xi64> -> tensor<2x2xi64>
  return %0 : tensor<2x2xi64>
}

// -----

// CHECK-LABEL: func.func @transposes
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.+]] = llmc.transpose %[[X]] [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[X]], %[[T]]
func.func @transposes(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x2x3xf32>) {
  // Identity permutation.
  %0 = llmc.transpose %x [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // [1, 0, 2] then [2, 1, 0] = [2, 0, 1]: result dim i reads x dim p[q[i]].
  %1 = llmc.transpose %x [1, 0, 2] : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %2 = llmc.transpose %1 [2, 1, 0] : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
  return %0, %2 : tensor<2x3x4xf32>, tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_roundtrip
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_roundtrip(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = llmc.transpose %x [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = llmc.transpose %0 [1, 0] : (tensor<3x2xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @broadcasts
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[C:.+]] = llmc.constant dense<0xFF800000> : tensor<8x8xf32>
// CHECK-NEXT: return %[[X]], %[[C]]
func.func @broadcasts(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x8xf32>) {
  %0 = llmc.broadcast_to %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %ninf = llmc.constant dense<0xFF800000> : tensor<f32>
  %1 = llmc.broadcast_to %ninf : tensor<f32> -> tensor<8x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<8x8xf32>
}

// -----

// CHECK-LABEL: func.func @slices
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
// CHECK: %[[C:.+]] = llmc.constant dense<[1, 3]> : tensor<2xi64>
// CHECK: %[[S:.+]] = llmc.slice %[[X]] starts [0, 4]
// CHECK: return %[[X]], %[[C]], %[[S]]
func.func @slices(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<2xi64>, tensor<4x4xf32>) {
  %0 = llmc.slice %x starts [0, 0] limits [4, 8] strides [1, 1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = llmc.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %1 = llmc.slice %c starts [1] limits [4] strides [2] : (tensor<4xi64>) -> tensor<2xi64>
  %2 = llmc.slice %x starts [0, 4] limits [4, 8] strides [1, 1] : (tensor<4x8xf32>) -> tensor<4x4xf32>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<2xi64>, tensor<4x4xf32>
}

// -----

// CHECK-LABEL: func.func @casts
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
// CHECK: %[[C:.+]] = llmc.constant dense<[-1, 7]> : tensor<2xi32>
// CHECK: return %[[X]], %[[C]]
func.func @casts(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<2xi32>) {
  %0 = llmc.cast %x : tensor<4xf32> -> tensor<4xf32>
  %c = llmc.constant dense<[-1, 7]> : tensor<2xi64>
  %1 = llmc.cast %c : tensor<2xi64> -> tensor<2xi32>
  return %0, %1 : tensor<4xf32>, tensor<2xi32>
}

// -----

// CHECK-LABEL: func.func @concat_single
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @concat_single(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = llmc.concat %x axis 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
