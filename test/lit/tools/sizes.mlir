// RUN: not llmc check %s 2>&1 | FileCheck %s
// RUN: not llmc codegen %s 2>&1 | FileCheck %s
// RUN: echo '{}' > %t.none.json
// RUN: not llmc run %s --inputs %t.none.json 2>&1 | FileCheck %s --check-prefix=RUNERR
// RUN: not llmc compile %s -o %t.llmc 2>&1 | FileCheck %s --check-prefix=COMPILE
// RUN: not ls %t.llmc

// MLIR builds tensor<4294967296x4294967296xf32> without complaint, and its
// element count wraps to 0: every command that reads llmc IR refuses it.
func.func @forward(%x: tensor<4294967296x4294967296xf32> {llmc.input = "x"}) -> tensor<4294967296x4294967296xf32> {
  %0 = llmc.add %x, %x : (tensor<4294967296x4294967296xf32>, tensor<4294967296x4294967296xf32>) -> tensor<4294967296x4294967296xf32>
  return %0 : tensor<4294967296x4294967296xf32>
}
// CHECK: sizes.mlir:11:8: error: 'llmc.add' op operand #0 has shape [4294967296, 4294967296] (about 1.8e+19 elements, 64.0 EiB), more elements than a 64-bit count holds
// RUNERR: llmc run: error: {{.*}}'llmc.add' op operand #0 has shape [4294967296, 4294967296] (about 1.8e+19 elements, 64.0 EiB)
// COMPILE: llmc compile: error: {{.*}}'llmc.add' op operand #0 has shape [4294967296, 4294967296]
