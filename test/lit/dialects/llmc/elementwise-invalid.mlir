// RUN: llmc-opt %s --split-input-file --verify-diagnostics

// Every verifier error of the elementwise ops. Type inference failures are
// followed by MLIR's generic "failed to infer returned types".

func.func @broadcast_mismatch(%a: tensor<4x3xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+2 {{'llmc.add' op operand shapes [4, 3] and [4, 2] are not broadcast-compatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.add %a, %b : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @element_type_mismatch(%a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+2 {{'llmc.mul' op operand element types differ: 'f32' vs 'bf16' (insert an llmc.cast)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.mul %a, %b : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  return
}

// -----

func.func @wrong_result_shape(%a: tensor<4x1xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'llmc.sub' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.sub %a, %b : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x1xf32>
  return
}

// -----

func.func @float_op_on_integers(%a: tensor<4xi64>) {
  // expected-error @+1 {{'llmc.exp' op operand #0 must be ranked tensor of}}
  %0 = llmc.exp %a : tensor<4xi64>
  return
}

// -----

func.func @pow_on_integers(%a: tensor<4xi64>) {
  // expected-error @+1 {{'llmc.pow' op operand #0 must be ranked tensor of}}
  %0 = llmc.pow %a, %a : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

func.func @unranked(%a: tensor<*xf32>) {
  // expected-error @+1 {{'llmc.neg' op operand #0 must be ranked tensor of}}
  %0 = "llmc.neg"(%a) : (tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @unsupported_element(%a: tensor<4xf64>) {
  // expected-error @+1 {{'llmc.tanh' op operand #0 must be ranked tensor of}}
  %0 = llmc.tanh %a : tensor<4xf64>
  return
}

// -----

func.func @compare_types(%a: tensor<4xi32>, %b: tensor<4xi64>) {
  // expected-error @+2 {{'llmc.compare' op operand element types differ: 'i32' vs 'i64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.compare lt, %a, %b : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi1>
  return
}

// -----

func.func @compare_shapes(%a: tensor<4xi64>, %b: tensor<5xi64>) {
  // expected-error @+2 {{'llmc.compare' op operand shapes [4] and [5] are not broadcast-compatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.compare lt, %a, %b : (tensor<4xi64>, tensor<5xi64>) -> tensor<4xi1>
  return
}

// -----

func.func @where_value_types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{'llmc.where' op value element types differ: 'f32' vs 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @where_condition_shape(%c: tensor<3xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'llmc.where' op operand shapes [3] and [4] are not broadcast-compatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llmc.where %c, %a, %b : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @where_condition_type(%c: tensor<4xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'llmc.where' op operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = llmc.where %c, %a, %a : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @isnan_on_int(%a: tensor<4xi64>) {
  // expected-error @+1 {{'llmc.isnan' op operand #0 must be ranked tensor of}}
  %0 = llmc.isnan %a : tensor<4xi64> -> tensor<4xi1>
  return
}

// -----

func.func @cast_changes_shape(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'llmc.cast' op changes the shape from [4, 8] to [8, 4]; cast converts elements only}}
  %0 = llmc.cast %a : tensor<4x8xf32> -> tensor<8x4xbf16>
  return
}
