// The position gathers and their gradients, evaluated by the reference
// evaluator before and after llmc-fold-position-gathers: the window, the
// batch sum and the zero rows compute what the gather and the scatter do
// (the same sums in the same order: equal to f32 rounding).
//
// RUN: llmc-opt %s --llmc-fold-position-gathers -o %t.folded.mlir
// RUN: FileCheck %s < %t.folded.mlir
// RUN: llmc run %s --inputs %S/Inputs/fold-position-gathers.json -o %t.before.json
// RUN: llmc run %t.folded.mlir --inputs %S/Inputs/fold-position-gathers.json -o %t.after.json
// RUN: %python %S/../pipeline/Inputs/outputs.py compare %t.before.json %t.after.json --rtol 1e-7

// CHECK-LABEL: func.func @forward
// CHECK-NOT: llmc.gather
func.func @forward(
    %wpe: tensor<8x4xf32> {llmc.input = "wpe"},
    %g: tensor<8x4xf32> {llmc.input = "g"},
    %gb: tensor<3x6x4xf32> {llmc.input = "gb"},
    %wb: tensor<8x4xf32> {llmc.input = "wb"})
    -> (tensor<8x4xf32> {llmc.output = "table"},
        tensor<8x4xf32> {llmc.output = "table_grad"},
        tensor<3x6x4xf32> {llmc.output = "batched"},
        tensor<8x4xf32> {llmc.output = "batched_grad"}) {
  %pos = llmc.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64>
  %y = llmc.gather %wpe, %pos axis 0 : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<8x4xf32>
  %dw = llmc.gather_grad %g, %pos axis 0 : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<8x4xf32>
  %row = llmc.iota dim 0 : tensor<6xi64>
  %pos6 = llmc.broadcast_to %row : tensor<6xi64> -> tensor<3x6xi64>
  %yb = llmc.gather %wb, %pos6 axis 0 : (tensor<8x4xf32>, tensor<3x6xi64>) -> tensor<3x6x4xf32>
  %dwb = llmc.gather_grad %gb, %pos6 axis 0 : (tensor<3x6x4xf32>, tensor<3x6xi64>) -> tensor<8x4xf32>
  return %y, %dw, %yb, %dwb : tensor<8x4xf32>, tensor<8x4xf32>, tensor<3x6x4xf32>, tensor<8x4xf32>
}
