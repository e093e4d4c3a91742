// The training pipeline with --precision bf16 (docs/precision.md): the casts
// are placed on @forward before autodiff, so the backward matmuls are bf16
// too, the weight gradients come back to f32 through the casts' VJPs (read
// by the optimizer as bf16, widened on load), and the parameters, AdamW
// state and update stay f32.
// RUN: llmc-opt %s --llmc-pipeline=precision=bf16 | FileCheck %s
// RUN: llmc-opt %s --llmc-pipeline | FileCheck %s --check-prefix=FP32

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    %[[W:[^:]+]]: tensor<16x32xf32> {llmc.init_rule
// (--llmc-pipeline ends with kernel formation: values cross groups.)
// The input's and the parameters' casts are one horizontal group
// (llmc-fuse-elementwise).
// CHECK:         %[[C:.+]]:3 = llmc.kernel -> (tensor<2x8x16xbf16>, tensor<16x32xbf16>, tensor<32xbf16>) {
// CHECK:           llmc.cast %[[W]] : tensor<16x32xf32> -> tensor<16x32xbf16>
// CHECK:         llmc.matmul %[[C]]#0, %[[C]]#1 : (tensor<2x8x16xbf16>, tensor<16x32xbf16>) -> tensor<2x8x32xbf16>
// CHECK:         llmc.cross_entropy mean {{.*}} : (tensor<2x8x32xf32>, tensor<2x8xi64>) -> tensor<f32>
// The weight gradient: a bf16 GEMM, widened to f32 for the update; the
// bias gradient (the rhs's row sum) rides in it (BGRADA).
// CHECK:         %[[DW:.+]]:2 = llmc.kernel -> (tensor<16x32xbf16>, tensor<32xbf16>) attributes {llmc.epilogue = "bias_grad_rhs"} {
// CHECK-NEXT:      llmc.matmul {{.*}} {transpose_lhs} : (tensor<16x16xbf16>, tensor<16x32xbf16>) -> tensor<16x32xbf16>
// CHECK-NEXT:      llmc.reduce_sum {{.*}} : (tensor<2x8x32xbf16>) -> tensor<32xbf16>
// The clip norm and the update read the bf16 gradients and widen them on
// load (llmc-batch-adamw): no f32 copy, no cast kernel.
// CHECK-NOT:       llmc.cast %[[DW]]
// CHECK:           llmc.global_norm %[[DW]]#0, %[[DW]]#1 : (tensor<16x32xbf16>, tensor<32xbf16>) -> tensor<f32>
// CHECK:         llmc.multi_adamw_update params(%[[W]], {{.*}}) grads(%[[DW]]#0, %[[DW]]#1) {{.*}} -> (tensor<16x32xf32>, tensor<32xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<16x32xf32>, tensor<32xf32>)
// FP32-LABEL: func.func @train_step
// FP32-NOT:     bf16
func.func @forward(%w: tensor<16x32xf32> {llmc.param = "w", llmc.init_rule = "normal(0.02)"},
                   %b: tensor<32xf32> {llmc.param = "b", llmc.init_rule = "zeros"},
                   %x: tensor<2x8x16xf32> {llmc.input = "x"}) -> (tensor<2x8x32xf32> {llmc.output = "logits"}) {
  %0 = llmc.matmul %x, %w : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %1 = llmc.add %0, %b : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  return %1 : tensor<2x8x32xf32>
}
