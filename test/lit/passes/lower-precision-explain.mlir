// RUN: llmc-opt %s --split-input-file --llmc-lower-precision="precision=bf16 explain=true" | FileCheck %s
// RUN: llmc-opt %s --split-input-file --llmc-lower-precision="precision=fp16 explain=true mutation=layer-norm-bf16" | FileCheck %s --check-prefix=MUT
// RUN: llmc-opt %s --split-input-file --llmc-lower-precision=precision=bf16 | FileCheck %s --check-prefix=OFF

// `explain` records every op of the lowered @forward in program order with
// its class (PrecisionPolicyOpInterface), the type it computes in and why:
// its class's reason, or what the pass decided (a cast it inserted, a
// weight's transpose redone after the cast, a planted mistake, no float
// operand). Without the option the module has no such attribute.
// CHECK-LABEL: module attributes
// CHECK-SAME: llmc.precision = "bf16"
// CHECK-SAME: llmc.precision_explain = [
// CHECK-SAME: {class = "Explicit", loc = {{[^,]*}}, op = "llmc.cast", type = "bf16", why = "inserted: this value's one cast to this type, shared by every use"}
// CHECK-SAME: {class = "Fp32Norm", loc = {{[^,]*}}, op = "llmc.layer_norm", type = "f32", why = "autocast's fp32 list: the mean and variance of a row
// CHECK-SAME: {class = "Follow", loc = {{[^,]*}}, op = "llmc.transpose", type = "bf16", why = "a weight's data movement redone in the low type after the parameter's one cast
// CHECK-SAME: {class = "LowerOperands", loc = {{[^,]*}}, op = "llmc.matmul", type = "bf16", why = "autocast's lower-precision list (matmul, attention, and the bias add of a linear layer
// CHECK-SAME: {class = "LowerOperands", loc = {{[^,]*}}, op = "llmc.add", type = "bf16", why = "autocast's lower-precision list
// CHECK-SAME: {class = "Follow", loc = {{[^,]*}}, op = "llmc.gelu", type = "bf16", why = "on no autocast list: runs in the widest type
// CHECK-SAME: {class = "Explicit", loc = {{[^,]*}}, op = "llmc.cast", type = "f32", why = "inserted: this value's one cast
// CHECK-SAME: {class = "Fp32Softmax", loc = {{[^,]*}}, op = "llmc.softmax", type = "f32", why = "autocast's fp32 list: exp and the row sum
// CHECK-SAME: {class = "Fp32Reduction", loc = {{[^,]*}}, op = "llmc.reduce_sum", type = "f32"
// CHECK-SAME: {class = "Follow", loc = {{[^,]*}}, op = "llmc.neg", type = "-", why = "no float operand: nothing to decide"}
// CHECK-SAME: ]
// MUT-LABEL: module attributes
// MUT-SAME: {class = "Fp32Norm", loc = {{[^,]*}}, op = "llmc.layer_norm", type = "f16", why = "planted mistake (mutation): computes as LowerOperands instead of Fp32Norm"}
// MUT-SAME: {class = "LowerOperands", loc = {{[^,]*}}, op = "llmc.matmul", type = "f16"
// OFF-NOT: llmc.precision_explain
module {
func.func @forward(%x: tensor<4x8xf32>, %w: tensor<16x8xf32> {llmc.param = "w"},
                   %b: tensor<16xf32> {llmc.param = "b"}, %i: tensor<4xi64>)
    -> (tensor<4x16xf32>, tensor<f32>, tensor<4xi64>) {
  %n = llmc.layer_norm %x {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %wt = llmc.transpose %w [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %y = llmc.matmul %n, %wt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %z = llmc.add %y, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %g = llmc.gelu tanh %z : tensor<4x16xf32>
  %s = llmc.softmax %g {axis = -1 : i64} : tensor<4x16xf32>
  %r = llmc.reduce_sum %s axes [0, 1] : (tensor<4x16xf32>) -> tensor<f32>
  %a = llmc.neg %i : tensor<4xi64>
  return %s, %r, %a : tensor<4x16xf32>, tensor<f32>, tensor<4xi64>
}
}
