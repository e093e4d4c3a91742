// RUN: not llmc codegen %s --split-input-file 2>&1 | FileCheck %s
// RUN: not llmc codegen 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: not llmc codegen %s --frobnicate 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: not llmc codegen %s --dump-cuda 2>&1 | FileCheck %s --check-prefix=VALUE
// RUN: not llmc codegen %t.missing.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not llmc codegen %s --split-input-file --function nope 2>&1 | FileCheck %s --check-prefix=FUNC
// RUN: not llmc codegen %s a.mlir 2>&1 | FileCheck %s --check-prefix=TWO
// RUN: llmc codegen --help | FileCheck %s --check-prefix=HELP

// NOFILE:  llmc codegen: error: expected a model file; usage: llmc codegen MODEL.mlir
// OPTION:  llmc codegen: error: unknown option '--frobnicate'; usage: llmc codegen
// VALUE:   llmc codegen: error: --dump-cuda needs a value; usage: llmc codegen
// MISSING: llmc codegen: error: cannot read '{{.*}}missing.mlir': No such file or directory
// FUNC:    llmc codegen: error: '{{.*}}errors.mlir' has no func.func @nope
// TWO:     llmc codegen: error: expected one model file, got '{{.*}}errors.mlir' and 'a.mlir'
// HELP:    usage: llmc codegen MODEL.mlir [--function NAME] [--dump-cuda DIR] [--compile] [--arch sm_XY] [--split-input-file]

// CHECK: error: codegen: 'llmc.neg' operand #0 has the element type 'f8E4M3FN', which the CUDA backend does not support yet (f32, bf16, f16, i32, i64, i1)
// CHECK: llmc codegen: error: code generation failed (see the diagnostics above)
func.func @forward(%x: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
  %0 = llmc.neg %x : tensor<4xf8E4M3FN>
  return %0 : tensor<4xf8E4M3FN>
}

// -----

// CHECK: error: codegen: 'llmc.neg' operand #0 has the dynamic shape [?, 4]; specialize shapes first (--shape NAME=VALUE)
func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = llmc.neg %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// CHECK: error: codegen: no CUDA emitter for 'func.call'
func.func private @helper(tensor<4xf32>) -> tensor<4xf32>
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: llmc codegen: error: '{{.*}}errors.mlir' has no func.func @train_step or @forward
func.func @a() {
  return
}
func.func @b() {
  return
}

// -----

// CHECK: error: codegen: attention head dims 2048/2048 need 589952 bytes of shared memory; at most 232448 are available
func.func @forward(%q: tensor<1x1x4x2048xf32>) -> tensor<1x1x4x2048xf32> {
  %0 = llmc.attention %q, %q, %q : (tensor<1x1x4x2048xf32>, tensor<1x1x4x2048xf32>, tensor<1x1x4x2048xf32>) -> tensor<1x1x4x2048xf32>
  return %0 : tensor<1x1x4x2048xf32>
}

// -----

// CHECK: error: codegen: normalizing 20000 elements per row is not supported (at most 16384)
func.func @forward(%x: tensor<2x20000xf32>) -> tensor<2x20000xf32> {
  %0:2 = llmc.layer_norm_grad %x, %x {bias_grad} : (tensor<2x20000xf32>, tensor<2x20000xf32>) -> (tensor<2x20000xf32>, tensor<20000xf32>)
  return %0#0 : tensor<2x20000xf32>
}

// -----

// CHECK: error: codegen: attention_grad head dims 512/512 need 410880 bytes of shared memory; at most 232448 are available
func.func @forward(%q: tensor<1x1x4x512xf32>, %l: tensor<1x1x4xf32>) -> tensor<1x1x4x512xf32> {
  %0:3 = llmc.attention_grad %q, %q, %q, %q, %l, %q : (tensor<1x1x4x512xf32>, tensor<1x1x4x512xf32>, tensor<1x1x4x512xf32>, tensor<1x1x4x512xf32>, tensor<1x1x4xf32>, tensor<1x1x4x512xf32>) -> (tensor<1x1x4x512xf32>, tensor<1x1x4x512xf32>, tensor<1x1x4x512xf32>)
  return %0#0 : tensor<1x1x4x512xf32>
}

// -----

// CHECK: error: codegen: attention_grad with batch 70000 and 1 heads exceeds the grid (at most 65535 each)
func.func @forward(%q: tensor<70000x1x4x8xf32>, %l: tensor<70000x1x4xf32>) -> tensor<70000x1x4x8xf32> {
  %0:3 = llmc.attention_grad %q, %q, %q, %q, %l, %q : (tensor<70000x1x4x8xf32>, tensor<70000x1x4x8xf32>, tensor<70000x1x4x8xf32>, tensor<70000x1x4x8xf32>, tensor<70000x1x4xf32>, tensor<70000x1x4x8xf32>) -> (tensor<70000x1x4x8xf32>, tensor<70000x1x4x8xf32>, tensor<70000x1x4x8xf32>)
  return %0#0 : tensor<70000x1x4x8xf32>
}

// -----

// CHECK: error: codegen: gather_grad over 1 indices into 2147483648 rows exceeds the 32-bit bucket lists
func.func @forward(%g: tensor<1x1xf32>, %i: tensor<1xi64>) -> tensor<2147483648x1xf32> {
  %0 = llmc.gather_grad %g, %i axis 0 : (tensor<1x1xf32>, tensor<1xi64>) -> tensor<2147483648x1xf32>
  return %0 : tensor<2147483648x1xf32>
}

// -----

// A column reduction whose 128-row chunks would pass grid y's 65535.
// CHECK: error: codegen: a column reduction of 10000000 rows x 64 columns exceeds the launch grid (at most 8388480 rows)
func.func @forward(%x: tensor<10000000x64xf32>) -> tensor<64xf32> {
  %0 = llmc.reduce_sum %x axes [0] : (tensor<10000000x64xf32>) -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

// A hand-written group that no emitter takes: an elementwise op after a
// reduction is no shape that a fusion pass forms (docs/fusion.md).
// CHECK: error: codegen: a kernel group of 2 ops ('llmc.reduce_sum' first) is not one op, a matmul with its bias add, elementwise ops, a reduction with casts or a norm with an elementwise prologue/epilogue; no emitter takes it
func.func @forward(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  %0 = llmc.kernel -> (tensor<8xf32>) {
    %1 = llmc.reduce_sum %x axes [0] : (tensor<4x8xf32>) -> tensor<8xf32>
    %2 = llmc.exp %1 : tensor<8xf32>
    llmc.yield %2 : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}

// -----

// Elementwise ops of one chain with two result shapes (the vertical rule
// never fuses a broadcast read): no single iteration space, so the backend
// names the group rather than recompute the [4, 1] value per element.
// CHECK: error: codegen: a kernel group of 2 ops ('llmc.neg' first) is not one op, a matmul with its bias add, elementwise ops, a reduction with casts or a norm with an elementwise prologue/epilogue; no emitter takes it
func.func @forward(%x: tensor<4x1xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = llmc.kernel -> (tensor<4x8xf32>) {
    %1 = llmc.neg %x : tensor<4x1xf32>
    %2 = llmc.add %1, %y : (tensor<4x1xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    llmc.yield %2 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// A hand-written bias group on a batched GEMM (both operands batched): the
// epilogue takes one GEMM.
// CHECK: error: codegen: the bias add of this group cannot ride in the matmul's epilogue (one GEMM, an [n] bias of the product's type)
func.func @forward(%a: tensor<2x16x8xf32>, %b: tensor<2x8x24xf32>, %bias: tensor<24xf32>) -> tensor<2x16x24xf32> {
  %0 = llmc.kernel -> (tensor<2x16x24xf32>) {
    %1 = llmc.matmul %a, %b : (tensor<2x16x8xf32>, tensor<2x8x24xf32>) -> tensor<2x16x24xf32>
    %2 = llmc.add %1, %bias : (tensor<2x16x24xf32>, tensor<24xf32>) -> tensor<2x16x24xf32>
    llmc.yield %2 : tensor<2x16x24xf32>
  }
  return %0 : tensor<2x16x24xf32>
}
