// RUN: llmc-opt %s --split-input-file --verify-diagnostics --llmc-lower-precision=precision=bf16
// RUN: not llmc-opt %s --llmc-lower-precision=precision=fp8 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not llmc-opt %s --llmc-lower-precision="precision=bf16 mutation=everything-bf16" 2>&1 | FileCheck %s --check-prefix=MUTATION

// UNKNOWN: unknown precision 'fp8'; expected fp32, bf16, fp16 or tf32
// MUTATION: unknown mutation 'everything-bf16'

// An op that says nothing about its precision cannot be placed.
func.func @forward(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'llmc.softmax_grad' op has no precision policy (PrecisionPolicyOpInterface); llmc-lower-precision cannot place it}}
  %g = llmc.softmax_grad %x, %dy {axis = -1 : i64} : tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}

// -----

// expected-error @+1 {{llmc-lower-precision: the module has no @forward; precision is lowered on the forward graph, before autodiff}}
module {
  func.func @train_step(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}
