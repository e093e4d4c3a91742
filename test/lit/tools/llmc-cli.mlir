// RUN: llmc --version | FileCheck %s --check-prefix=VERSION
// RUN: llmc --help | FileCheck %s --check-prefix=HELP
// RUN: not llmc 2>&1 | FileCheck %s --check-prefix=HELP
// RUN: not llmc frobnicate 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: llmc check %s | FileCheck %s --check-prefix=CHECK-OK
// RUN: not llmc check 2>&1 | FileCheck %s --check-prefix=NOARG
// RUN: not llmc check %t.missing.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not llmc check %S/Inputs/invalid.mlir 2>&1 | FileCheck %s --check-prefix=INVALID
// An empty or comment-only file is not a model that checks "ok".
// RUN: rm -f %t.empty.mlir && touch %t.empty.mlir
// RUN: not llmc check %t.empty.mlir 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: echo "// nothing but a comment" > %t.comment.mlir
// RUN: not llmc check %t.comment.mlir 2>&1 | FileCheck %s --check-prefix=EMPTY
// A library override that does not load is an error naming it, in every
// command, never a quiet fallback to another library or to the CPU.
// RUN: env LLMC_LIBCUDA=%t.no-libcuda.so not llmc check %s 2>&1 | FileCheck %s --check-prefix=LIBCUDA
// RUN: env LLMC_LIBNVRTC=%s not llmc codegen %s --compile 2>&1 | FileCheck %s --check-prefix=LIBNVRTC

// VERSION: llmc 0.1.0
// HELP: usage: llmc <command> [options]
// HELP: check FILE.mlir
// UNKNOWN: llmc: error: unknown command 'frobnicate'; `llmc --help` lists the commands
// CHECK-OK: llmc-cli.mlir: ok
// CHECK-OK-NEXT: llmc.add 2
// CHECK-OK-NEXT: llmc.softmax 1
// NOARG: llmc check: error: expected one input file
// MISSING: llmc check: error: cannot read '{{.*}}missing.mlir'
// INVALID: invalid.mlir:4:8: error: 'llmc.add' op operand shapes [4] and [5] are not broadcast-compatible
// INVALID: llmc check: error: '{{.*}}invalid.mlir' is not valid llmc IR (see the diagnostics above)
// LIBCUDA: llmc check: error: no CUDA driver found: LLMC_LIBCUDA={{.*}}no-libcuda.so cannot be loaded: {{.*}}No such file or directory (unset LLMC_LIBCUDA to search the default locations)
// LIBNVRTC: llmc codegen: error: NVRTC not found: LLMC_LIBNVRTC={{.*}}llmc-cli.mlir cannot be loaded: {{.*}} (unset LLMC_LIBNVRTC to search the default locations)
// EMPTY: llmc check: error: '{{.*}}.mlir' holds no operations (an empty file?)

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = llmc.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = llmc.add %0, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = llmc.softmax %1 : tensor<4xf32>
  return %2 : tensor<4xf32>
}
