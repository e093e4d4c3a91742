// RUN: llmc-opt %s --split-input-file --llmc-append-loss --verify-diagnostics
// RUN: not llmc-opt %s --split-input-file --llmc-append-loss="logits=nope" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not llmc-opt %s --split-input-file --llmc-append-loss="logits=ids" 2>&1 | FileCheck %s --check-prefix=NOTFLOAT

// MISSING: error: llmc-append-loss: @forward has no result named 'nope' (llmc.output)
// NOTFLOAT: error: llmc-append-loss: the logits 'ids' have type 'tensor<4xi64>'; they must be a float tensor [..., classes]

// expected-error @+1 {{llmc-append-loss: @forward has 2 float results of rank >= 2; name the logits with --logits}}
func.func @forward(%h: tensor<4x8xf32> {llmc.input = "h"}, %s: tensor<4x10xf32> {llmc.input = "s"})
    -> (tensor<4x8xf32> {llmc.output = "hidden"}, tensor<4x10xf32> {llmc.output = "scores"}) {
  return %h, %s : tensor<4x8xf32>, tensor<4x10xf32>
}

// -----

// expected-error @+1 {{llmc-append-loss: @forward already has an output named 'loss'}}
func.func @forward(%s: tensor<4x10xf32> {llmc.input = "s"}, %l: tensor<f32> {llmc.input = "l"})
    -> (tensor<4x10xf32> {llmc.output = "logits"}, tensor<f32> {llmc.output = "loss"}) {
  return %s, %l : tensor<4x10xf32>, tensor<f32>
}

// -----

// expected-error @+1 {{llmc-append-loss: @forward already has an input named 'targets'}}
func.func @forward(%s: tensor<4x10xf32> {llmc.input = "s"}, %t: tensor<4xi64> {llmc.input = "targets"})
    -> (tensor<4x10xf32> {llmc.output = "logits"}) {
  return %s : tensor<4x10xf32>
}

// -----

// expected-error @+1 {{llmc-append-loss: the module has no func.func @forward; the loss is appended to @forward}}
module {
}

// -----

// Integer outputs are not logits (checked with --logits=ids).
func.func @forward(%c: tensor<4xi64> {llmc.input = "c"}) -> (tensor<4xi64> {llmc.output = "ids"}) {
  // expected-error @-1 {{llmc-append-loss: @forward has 0 float results of rank >= 2; name the logits with --logits}}
  return %c : tensor<4xi64>
}
