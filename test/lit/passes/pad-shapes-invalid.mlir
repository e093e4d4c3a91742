// RUN: not llmc-opt %s --llmc-pad-shapes=arch=sm_70 2>&1 | FileCheck %s --check-prefix=ARCH
// RUN: not llmc-opt %s --llmc-pad-shapes=precision=fp16 2>&1 | FileCheck %s --check-prefix=PREC
// RUN: not llmc-opt %s --llmc-autodiff=keep-forward=0 --llmc-pad-shapes 2>&1 | FileCheck %s --check-prefix=NOFWD
// RUN: not llmc-opt %s --llmc-pad-shapes=dims=48:40 2>&1 | FileCheck %s --check-prefix=DOWN
// RUN: not llmc-opt %s --llmc-pad-shapes=dims=40:48,x 2>&1 | FileCheck %s --check-prefix=BADDIMS

// ARCH: error: llmc-pad-shapes: no cost table for arch 'sm_70' (sm_90 and sm_80 have one); pass --no-pad to skip padding
// PREC: error: llmc-pad-shapes: unknown precision 'fp16'; expected fp32 or bf16
// DOWN: error: llmc-pad-shapes: dims: '48:40' is not FROM:TO with 1 <= FROM < TO (e.g. dims=40:48,200:256)
// BADDIMS: error: llmc-pad-shapes: dims: 'x' is not FROM:TO with 1 <= FROM < TO (e.g. dims=40:48,200:256)
// NOFWD: error: llmc-pad-shapes: the module has no @forward; shapes are padded on the forward graph, before autodiff
func.func @forward(%w: tensor<4xf32> {llmc.param = "w"}) -> tensor<f32> {
  %s = llmc.reduce_sum %w axes [0] : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
