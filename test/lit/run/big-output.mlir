// RUN: llmc run %s --inputs %S/Inputs/x2.json | FileCheck %s
// Outputs of more than 64 elements print as sum, mean |x| and the first 8.
// iota over [10, 10]: 0..99 in row-major order, so sum = 4950 and the mean
// of |x - 50| is 25; the input is not used by y.

// CHECK: y: f32[10, 10] sum=-50 mean_abs=25 first8=[-50, -49, -48, -47, -46, -45, -44, -43]
// CHECK-NEXT: x: f32[2] = [1, 2]
func.func @forward(%x: tensor<2xf32> {llmc.input = "x"})
    -> (tensor<10x10xf32> {llmc.output = "y"}, tensor<2xf32> {llmc.output = "x"}) {
  %i = llmc.iota dim 1 {start = -50.0} : tensor<10x10xf32>
  %j = llmc.iota dim 0 {step = 10.0} : tensor<10x10xf32>
  %y = llmc.add %i, %j : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  return %y, %x : tensor<10x10xf32>, tensor<2xf32>
}
