// RUN: llmc-opt %s --split-input-file --verify-diagnostics

// Every verifier error of the data-movement ops and reductions. Type
// inference failures are followed by MLIR's generic "failed to infer returned
// types".

func.func @constant_type() {
  // expected-error @+1 {{'llmc.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "llmc.constant"() <{value = dense<1.0> : tensor<4xf32>}> : () -> tensor<3xf32>
  return
}

// -----

func.func @iota_dim() {
  // expected-error @+1 {{'llmc.iota' op dimension 2 is out of range for rank 2}}
  %0 = llmc.iota dim 2 : tensor<4x8xi64>
  return
}

// -----

func.func @iota_dynamic() {
  // expected-error @+1 {{'llmc.iota' op needs a static size along dimension 0}}
  %0 = llmc.iota dim 0 : tensor<?xi64>
  return
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'llmc.reshape' op cannot reshape [2, 3] (6 elements) to [4, 2] (8 elements)}}
  %0 = llmc.reshape %x : tensor<2x3xf32> -> tensor<4x2xf32>
  return
}

// -----

// [5, 3689348814741910324] has 4 elements modulo 2^64, as many as [2, 2].
func.func @reshape_count_wraps(%x: tensor<2x2xf32>) {
  // expected-error @+1 {{'llmc.reshape' op result has shape [5, 3689348814741910324] (about 1.8e+19 elements, 64.0 EiB), more elements than a 64-bit count holds}}
  %0 = llmc.reshape %x : tensor<2x2xf32> -> tensor<5x3689348814741910324xf32>
  return
}

// -----

func.func @reshape_too_large(%x: tensor<1099511627776xf32>) {
  // expected-error @+1 {{'llmc.reshape' op input has shape [1099511627776] (1099511627776 elements, 4.0 TiB), more than the 1.0 TiB llmc allows for one tensor}}
  %0 = llmc.reshape %x : tensor<1099511627776xf32> -> tensor<1048576x1048576xf32>
  return
}

// -----

func.func @reshape_element(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'llmc.reshape' op changes the element type from 'f32' to 'bf16'}}
  %0 = llmc.reshape %x : tensor<2x3xf32> -> tensor<6xbf16>
  return
}

// -----

func.func @broadcast_incompatible(%x: tensor<3x8xf32>) {
  // expected-error @+1 {{'llmc.broadcast_to' op cannot broadcast [3, 8] to [4, 8]: each operand dim must equal the result dim or be 1}}
  %0 = llmc.broadcast_to %x : tensor<3x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_rank(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'llmc.broadcast_to' op cannot broadcast [2, 8] to [8]}}
  %0 = llmc.broadcast_to %x : tensor<2x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @broadcast_element(%x: tensor<8xf32>) {
  // expected-error @+1 {{'llmc.broadcast_to' op changes the element type from 'f32' to 'f16'}}
  %0 = llmc.broadcast_to %x : tensor<8xf32> -> tensor<2x8xf16>
  return
}

// -----

func.func @transpose_length(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'llmc.transpose' op permutation has 3 entries for an operand of rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.transpose %x [0, 1, 2] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @transpose_not_permutation(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'llmc.transpose' op permutation [1, 1] is not a permutation of 0..1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.transpose %x [1, 1] : (tensor<2x3xf32>) -> tensor<3x3xf32>
  return
}

// -----

func.func @slice_counts(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'llmc.slice' op needs one start, limit and stride per dim: operand rank 2, got 1/2/2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.slice %x starts [0] limits [2, 8] strides [1, 1] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @slice_stride(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'llmc.slice' op stride 0 in dim 1 must be at least 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.slice %x starts [0, 0] limits [2, 8] strides [1, 0] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @slice_window(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'llmc.slice' op window [4, 9) in dim 1 is outside [0, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.slice %x starts [0, 4] limits [2, 9] strides [1, 1] : (tensor<2x8xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+2 {{'llmc.concat' op needs at least one operand}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "llmc.concat"() <{axis = 0 : i64}> : () -> tensor<1xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'llmc.concat' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.concat %a, %a axis 2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_types(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) {
  // expected-error @+2 {{'llmc.concat' op operand 1 has type 'tensor<2x3xf16>', incompatible with operand 0 of type 'tensor<2x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_sizes(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{'llmc.concat' op operand 1 has size 4 in dim 0 where operand 0 has 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @split_axis(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'llmc.split' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = llmc.split %x axis 2 sizes [4, 4] : (tensor<2x8xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @split_sum(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'llmc.split' op sizes [4, 5] sum to 9 but dim 1 has 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = llmc.split %x axis 1 sizes [4, 5] : (tensor<2x8xf32>) -> (tensor<2x4xf32>, tensor<2x5xf32>)
  return
}

// -----

func.func @split_negative(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'llmc.split' op has negative size -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = llmc.split %x axis 1 sizes [9, -1] : (tensor<2x8xf32>) -> (tensor<2x9xf32>, tensor<2x1xf32>)
  return
}

// -----

func.func @gather_axis(%t: tensor<512x64xf32>, %i: tensor<4xi64>) {
  // expected-error @+2 {{'llmc.gather' op axis 2 is out of range for data of rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.gather %t, %i axis 2 : (tensor<512x64xf32>, tensor<4xi64>) -> tensor<4x64xf32>
  return
}

// -----

func.func @gather_float_indices(%t: tensor<512x64xf32>, %i: tensor<4xf32>) {
  // expected-error @+1 {{'llmc.gather' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = llmc.gather %t, %i axis 0 : (tensor<512x64xf32>, tensor<4xf32>) -> tensor<4x64xf32>
  return
}

// -----

func.func @gather_elements_rank(%d: tensor<16x512xf32>, %i: tensor<16xi64>) {
  // expected-error @+2 {{'llmc.gather_elements' op indices have rank 1 but data has rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.gather_elements %d, %i axis 1 : (tensor<16x512xf32>, tensor<16xi64>) -> tensor<16xf32>
  return
}

// -----

func.func @gather_elements_axis(%d: tensor<16x512xf32>, %i: tensor<16x1xi64>) {
  // expected-error @+2 {{'llmc.gather_elements' op axis 3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.gather_elements %d, %i axis 3 : (tensor<16x512xf32>, tensor<16x1xi64>) -> tensor<16x1xf32>
  return
}

// -----

func.func @reduce_axis(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'llmc.reduce_sum' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.reduce_sum %x axes [2] : (tensor<2x8xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @reduce_twice(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'llmc.reduce_mean' op axis 1 is listed twice}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.reduce_mean %x axes [1, 1] : (tensor<2x8xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @reduce_no_axes(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'llmc.reduce_max' op needs at least one axis}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.reduce_max %x axes [] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @reduce_keepdims_type(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'llmc.reduce_sum' op inferred type(s) 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.reduce_sum %x axes [1] keepdims : (tensor<2x8xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @gather_bound_past_table(%w: tensor<8x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'llmc.gather' op bound 9 must be in [1, 8] (the table's size along axis 0)}}
  %0 = llmc.gather %w, %i axis 0 {bound = 9 : i64} : (tensor<8x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
