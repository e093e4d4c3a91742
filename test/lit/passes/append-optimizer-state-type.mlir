// RUN: llmc-opt %s --llmc-autodiff --llmc-append-optimizer=state-type=bf16 | FileCheck %s
// RUN: llmc-opt %s --llmc-autodiff --llmc-append-optimizer | FileCheck %s --check-prefix=DEFAULT

// The mutation test's bf16 optimizer state (docs/precision.md): the AdamW
// moments are bf16 arguments and results, widened for the f32 update and
// rounded back after it; the parameter stays f32.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    %[[M:[^:]+]]: tensor<4x8xbf16> {llmc.init_rule = "zeros", llmc.state = "adamw.m"
// CHECK-SAME:    %[[V:[^:]+]]: tensor<4x8xbf16> {llmc.init_rule = "zeros", llmc.state = "adamw.v"
// CHECK:         %[[MF:.+]] = llmc.cast %[[M]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK:         %[[VF:.+]] = llmc.cast %[[V]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK:         %{{.+}}, %[[NM:.+]], %[[NV:.+]] = llmc.adamw_update %arg0, %{{.+}}, %[[MF]], %[[VF]]
// CHECK:         llmc.cast %[[NM]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK:         llmc.cast %[[NV]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// DEFAULT-LABEL: func.func @train_step
// DEFAULT-NOT:   bf16
func.func @forward(%w: tensor<4x8xf32> {llmc.param = "w"}) -> tensor<f32> {
  %l = llmc.reduce_sum %w axes [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
