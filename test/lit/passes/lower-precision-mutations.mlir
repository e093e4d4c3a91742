// The planted mistakes of the mutation test (docs/precision.md), as IR: each
// one changes exactly the place it names. test/lit/verify/precision.test
// shows that `llmc verify` catches them.
// RUN: llmc-opt %s --llmc-lower-precision="precision=bf16" | FileCheck %s --check-prefix=REAL
// RUN: llmc-opt %s --llmc-lower-precision="precision=bf16 mutation=layer-norm-bf16" | FileCheck %s --check-prefix=NORM
// RUN: llmc-opt %s --llmc-lower-precision="precision=bf16 mutation=softmax-bf16" | FileCheck %s --check-prefix=SOFTMAX
// RUN: llmc-opt %s --llmc-lower-precision="precision=bf16 mutation=loss-bf16" | FileCheck %s --check-prefix=LOSS
// RUN: llmc-opt %s --llmc-lower-precision="precision=bf16 mutation=gemm-bf16-accumulate" | FileCheck %s --check-prefix=GEMM
// RUN: llmc-opt %s --llmc-lower-precision="precision=bf16 mutation=weight-cast-per-use" | FileCheck %s --check-prefix=PERUSE

// REAL-LABEL: func.func @forward
// REAL-COUNT-1: llmc.cast %arg1 : tensor<8x8xf32> -> tensor<8x8xbf16>
// REAL-NOT:     llmc.cast %arg1
// REAL:         llmc.layer_norm {{.*}} -> tensor<2x4x8xf32>
// REAL:         llmc.softmax {{.*}} : tensor<2x4x8xf32>
// REAL:         llmc.cross_entropy {{.*}} -> tensor<f32>
// REAL-NOT:     llmc.accumulate

// NORM-LABEL: func.func @forward
// NORM:         llmc.layer_norm {{.*}} -> tensor<2x4x8xbf16>
// NORM:         llmc.softmax {{.*}} : tensor<2x4x8xf32>

// SOFTMAX-LABEL: func.func @forward
// SOFTMAX:       llmc.layer_norm {{.*}} -> tensor<2x4x8xf32>
// SOFTMAX:       llmc.softmax {{.*}} : tensor<2x4x8xbf16>

// LOSS-LABEL: func.func @forward
// LOSS:          llmc.cross_entropy mean {{.*}} : (tensor<2x4x8xbf16>, tensor<2x4xi64>) -> tensor<bf16>
// LOSS:          llmc.cast {{.*}} : tensor<bf16> -> tensor<f32>

// GEMM-LABEL: func.func @forward
// GEMM-COUNT-2: llmc.matmul {{.*}} {llmc.accumulate = bf16}

// A cast of the weight before each of its two matmuls.
// PERUSE-LABEL: func.func @forward
// PERUSE-COUNT-2: llmc.cast %arg1 : tensor<8x8xf32> -> tensor<8x8xbf16>
func.func @forward(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32> {llmc.param = "w"},
                   %t: tensor<2x4xi64> {llmc.input = "t"}) -> tensor<f32> {
  %h = llmc.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %n = llmc.layer_norm %h {axis = 2 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s = llmc.softmax %n {axis = -1 : i64} : tensor<2x4x8xf32>
  %o = llmc.matmul %s, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %l = llmc.cross_entropy mean %o, %t : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
