// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s

// A slice whose result is a contiguous, 256-byte aligned run of its input
// (a window of rows: the chunked classifier's chunks of h and the targets)
// is read in place: no launch, a buffer of its own inside the input's
// (compiler/codegen/SliceViews.h, docs/memory.md "The chunked classifier").

// Rows [4, 8) of [8, 64] f32 start 1024 bytes into the input; through a
// reshape (an alias) the view is still inside the argument's buffer.
// CHECK-LABEL: # forward: {{[0-9]+}} buffers
// CHECK:       buffer arg0 input f32[8, 64] offset 0
// CHECK:       buffer [[S:slice_[0-9]+]].view scratch f32[4, 64] offset 1024
// CHECK-NOT:   launch slice
// CHECK:       step 0 launch exp_{{[0-9]+}} {{.*}} args ([[S]].view, exp_{{[0-9]+}}.out0)
// CHECK:       compiled 1 kernels
func.func @forward(%x: tensor<8x64xf32>) -> tensor<4x64xf32> {
  %r = llmc.reshape %x : tensor<8x64xf32> -> tensor<2x4x64xf32>
  %r2 = llmc.reshape %r : tensor<2x4x64xf32> -> tensor<8x64xf32>
  %s = llmc.slice %r2 starts [4, 0] limits [8, 64] strides [1, 1] : (tensor<8x64xf32>) -> tensor<4x64xf32>
  %y = llmc.exp %s : tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Copied: a column window (not contiguous), rows at 16-byte offsets (not
// aligned), and a slice the function returns (its own output buffer).
// CHECK-LABEL: # forward: {{[0-9]+}} buffers
// CHECK-NOT:   .view
// CHECK:       launch slice_0
// CHECK:       launch slice_1
// CHECK:       launch slice_3
// CHECK:       compiled 5 kernels
func.func @forward(%x: tensor<8x64xf32>, %z: tensor<8x4xf32>) -> (tensor<8x32xf32>, tensor<7x4xf32>, tensor<4x64xf32>) {
  %a = llmc.slice %x starts [0, 0] limits [8, 32] strides [1, 1] : (tensor<8x64xf32>) -> tensor<8x32xf32>
  %b = llmc.slice %z starts [1, 0] limits [8, 4] strides [1, 1] : (tensor<8x4xf32>) -> tensor<7x4xf32>
  %ea = llmc.exp %a : tensor<8x32xf32>
  %c = llmc.slice %x starts [4, 0] limits [8, 64] strides [1, 1] : (tensor<8x64xf32>) -> tensor<4x64xf32>
  %eb = llmc.exp %b : tensor<7x4xf32>
  return %ea, %eb, %c : tensor<8x32xf32>, tensor<7x4xf32>, tensor<4x64xf32>
}
