// RUN: llmc-opt %s --split-input-file --llmc-pad-shapes | FileCheck %s
// RUN: llmc-opt %s --split-input-file --llmc-pad-shapes=always=true | FileCheck %s --check-prefix=ALWAYS

// Aligned already: 50304 and 768 are whole tiles; nothing changes and
// nothing is listed, even when asked to pad whatever the ops allow.
// CHECK-LABEL: module attributes {llmc.padding = []}
// CHECK-NOT:     real_shape
// CHECK-NOT:     classes
// ALWAYS-LABEL: module attributes {llmc.padding = []}
// ALWAYS-NOT:    real_shape
func.func @forward(%x: tensor<8192x768xf32> {llmc.input = "x"},
                   %w: tensor<768x50304xf32> {llmc.param = "w"},
                   %t: tensor<8192xi64> {llmc.input = "targets"}) -> tensor<f32> {
  %l = llmc.matmul %x, %w : (tensor<8192x768xf32>, tensor<768x50304xf32>) -> tensor<8192x50304xf32>
  %loss = llmc.cross_entropy mean %l, %t : (tensor<8192x50304xf32>, tensor<8192xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Not worth it: a vocabulary of 1001 at 32 tokens is a launch-bound GEMM,
// so padding saves nothing and only adds memory traffic. `always` (the
// tests' --pad-always) pads it anyway, to the 128-wide tile.
// CHECK-LABEL: module attributes {llmc.padding = [{extra_flops = 0 : i64, from = 1001 : i64, params = ["w[1]"], to = 1001 : i64, why = "not worth it: its GEMMs take {{.*}} per step, launch-bound or cheaper than the padding's memory traffic"}]}
// CHECK:         tensor<64x1001xf32> {llmc.param = "w"}
// ALWAYS-LABEL: module attributes {llmc.padding = [{{.*}}from = 1001 : i64, params = ["w[1]"], to = 1024 : i64, why = "padded on request (always); {{.*}}"}]}
// ALWAYS:        tensor<64x1024xf32> {llmc.param = "w", llmc.real_shape = array<i64: 64, 1001>}
// ALWAYS:        llmc.cross_entropy mean {{.*}} {classes = 1001 : i64} : (tensor<32x1024xf32>, tensor<32xi64>)
func.func @forward(%x: tensor<32x64xf32> {llmc.input = "x"},
                   %w: tensor<64x1001xf32> {llmc.param = "w"},
                   %t: tensor<32xi64> {llmc.input = "targets"}) -> tensor<f32> {
  %l = llmc.matmul %x, %w : (tensor<32x64xf32>, tensor<64x1001xf32>) -> tensor<32x1001xf32>
  %loss = llmc.cross_entropy mean %l, %t : (tensor<32x1001xf32>, tensor<32xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Fixed by the input: a learned bias over the sequence (1001 positions,
// the input's T) is added to activations whose shape the batch fixes.
// CHECK-LABEL: module attributes {llmc.padding = [{{.*}}from = 1001 : i64, params = ["pos_bias[0]"], to = 1001 : i64, why = "cannot pad: fixed by the input 'x'"}]}
// CHECK:         tensor<1001x1xf32> {llmc.param = "pos_bias"}
// ALWAYS-LABEL: why = "cannot pad: fixed by the input 'x'"
func.func @forward(%x: tensor<4x1001x64xf32> {llmc.input = "x"},
                   %p: tensor<1001x1xf32> {llmc.param = "pos_bias"}) -> tensor<f32> {
  %y = llmc.add %x, %p : (tensor<4x1001x64xf32>, tensor<1001x1xf32>) -> tensor<4x1001x64xf32>
  %s = llmc.reduce_sum %y axes [0, 1, 2] : (tensor<4x1001x64xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A layer norm over a hidden size of 1001 that an input has: the norm
// itself could be masked (pad-norms.mlir), but the input fixes the
// dim, so it stays.
// CHECK-LABEL: why = "cannot pad: fixed by the input 'x'"
// CHECK:         tensor<1001xf32> {llmc.param = "ln"}
// ALWAYS-LABEL: why = "cannot pad: fixed by the input 'x'"
func.func @forward(%x: tensor<4096x1001xf32> {llmc.input = "x"},
                   %g: tensor<1001xf32> {llmc.param = "ln"}) -> tensor<4096x1001xf32> {
  %y = llmc.layer_norm %x weight %g {axis = 1 : i64} : (tensor<4096x1001xf32>, tensor<1001xf32>) -> tensor<4096x1001xf32>
  return %y : tensor<4096x1001xf32>
}

// -----

// A softmax over the padded dim (only cross_entropy masks its own).
// CHECK-LABEL: why = "cannot pad: 'llmc.softmax': softmax normalizes over the padded dim (masking it is not built; cross_entropy masks its own)"
// ALWAYS-LABEL: why = "cannot pad: 'llmc.softmax'
func.func @forward(%x: tensor<8192x768xf32> {llmc.input = "x"},
                   %w: tensor<768x1001xf32> {llmc.param = "w"}) -> tensor<8192x1001xf32> {
  %l = llmc.matmul %x, %w : (tensor<8192x768xf32>, tensor<768x1001xf32>) -> tensor<8192x1001xf32>
  %p = llmc.softmax %l {axis = -1 : i64} : tensor<8192x1001xf32>
  return %p : tensor<8192x1001xf32>
}

// -----

// An exp, whose padding would not stay zero.
// CHECK-LABEL: why = "cannot pad: 'llmc.exp': its padding would not stay zero (exp of 0 is not 0)"
// ALWAYS-LABEL: why = "cannot pad: 'llmc.exp'
func.func @forward(%x: tensor<8192x768xf32> {llmc.input = "x"},
                   %w: tensor<768x1001xf32> {llmc.param = "w"}) -> tensor<8192x1001xf32> {
  %l = llmc.matmul %x, %w : (tensor<8192x768xf32>, tensor<768x1001xf32>) -> tensor<8192x1001xf32>
  %e = llmc.exp %l : tensor<8192x1001xf32>
  return %e : tensor<8192x1001xf32>
}
