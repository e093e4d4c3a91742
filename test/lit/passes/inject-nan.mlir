// RUN: llmc-opt %s --llmc-inject-nan="op=llmc.gelu#0" | FileCheck %s
// RUN: llmc-opt %s --llmc-inject-nan="op=mlp_act" | FileCheck %s --check-prefix=NAMED
// RUN: not llmc-opt %s --llmc-inject-nan="op=nowhere" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not llmc-opt %s --llmc-inject-nan 2>&1 | FileCheck %s --check-prefix=NOOP

// The gelu's uses read gelu * nan_gate; the gelu itself is unchanged and the
// gate is a new rank-0 f32 input.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[G:[^:]+]]: tensor<f32> {llmc.input = "nan_gate"})
// CHECK: %[[Y:.+]] = llmc.gelu tanh
// CHECK: %[[GATED:.+]] = llmc.mul %[[Y]], %[[G]] : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
// CHECK: llmc.matmul %[[GATED]]
// NAMED-LABEL: func.func @forward
// NAMED: %[[Y:.+]] = llmc.gelu tanh
// NAMED: llmc.mul %[[Y]]
// MISSING: error: llmc-inject-nan: @forward has no op 'nowhere' (name an op by its ONNX node name or JSON path, or as <op>#<n>, e.g. llmc.matmul#0)
// NOOP: error: llmc-inject-nan: name the op with --op
func.func @forward(%w: tensor<8x4xf32> {llmc.param = "w", llmc.init_rule = "zeros"},
                   %x: tensor<2x8xf32> {llmc.input = "x"}) -> (tensor<2x4xf32> {llmc.output = "logits"}) {
  %0 = llmc.gelu tanh %x : tensor<2x8xf32> loc("mlp_act")
  %1 = llmc.matmul %0, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
