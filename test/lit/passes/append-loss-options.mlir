// RUN: llmc-opt %s --llmc-append-loss="logits=scores ignore-index=0" | FileCheck %s --check-prefix=NAMED

// Two candidates: --logits names one.
// NAMED-LABEL: func.func @forward
// NAMED-SAME: -> (tensor<4x8xf32> {llmc.output = "hidden"}, tensor<4x10xf32> {llmc.output = "scores"}, tensor<f32> {llmc.output = "loss"})
// NAMED: llmc.cross_entropy mean %arg1, %{{.+}} {ignore_index = 0 : i64} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
func.func @forward(%h: tensor<4x8xf32> {llmc.input = "h"}, %s: tensor<4x10xf32> {llmc.input = "s"})
    -> (tensor<4x8xf32> {llmc.output = "hidden"}, tensor<4x10xf32> {llmc.output = "scores"}) {
  return %h, %s : tensor<4x8xf32>, tensor<4x10xf32>
}
