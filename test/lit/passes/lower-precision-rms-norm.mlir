// RUN: llmc-opt %s --split-input-file --llmc-lower-precision=precision=bf16 | FileCheck %s
// RUN: llmc-opt %s --split-input-file --llmc-lower-precision="precision=bf16 mutation=layer-norm-bf16" | FileCheck %s --check-prefix=MUTANT

// Qwen3's q_norm reads the bf16 q projection. HF's RMSNorm returns
// `weight * normed.to(input_dtype)`: the norm computes in f32, its
// normalized value is rounded to bf16, and the f32 weight multiplies it.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4x8xf32>, %[[WQ:[^:]+]]: tensor<8x8xf32>, %[[G:[^:]+]]: tensor<8xf32>)
// CHECK: %[[Q:.+]] = llmc.matmul {{.*}} -> tensor<2x4x8xbf16>
// CHECK: %[[QF:.+]] = llmc.cast %[[Q]] : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// CHECK: %[[N:.+]] = llmc.rms_norm %[[QF]] : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[R:.+]] = llmc.cast %[[N]] : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// CHECK: %[[B:.+]] = llmc.cast %[[R]] : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// CHECK: %[[Y:.+]] = llmc.mul %[[B]], %[[G]] : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NOT: weight
// CHECK: return %[[Y]]
// A planted layer-norm-bf16 computes the norm in bf16 and keeps its weight.
// MUTANT-LABEL: func.func @forward
// MUTANT: llmc.rms_norm %{{[^ ]+}} weight %{{[^ ]+}} : (tensor<2x4x8xbf16>, tensor<8xbf16>) -> tensor<2x4x8xbf16>
func.func @forward(%x: tensor<2x4x8xf32>, %wq: tensor<8x8xf32>, %g: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %q = llmc.matmul %x, %wq : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %y = llmc.rms_norm %q weight %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// Llama's layer norms read the f32 residual stream: the input's type is
// f32, nothing is rounded, the weight stays in the op.
// CHECK-LABEL: func.func @forward
// CHECK: llmc.rms_norm %{{[^ ]+}} weight %{{[^ ]+}} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NOT: llmc.cast
func.func @forward(%h: tensor<2x4x8xf32>, %g: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %y = llmc.rms_norm %h weight %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}
