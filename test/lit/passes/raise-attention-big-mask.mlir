// The importer folds HF GPT-2's mask subgraph into one [B, 1, T, S]
// constant; at batch 5 x 1024 it holds 5.2M values, past the limit for
// evaluating op chains, and must still be recognized as causal (else every
// attention kernel reads a mask and visits every key tile).
// RUN: python3 %S/Inputs/big_folded_mask.py > %t.mlir
// RUN: llmc-opt %t.mlir --llmc-raise-attention | FileCheck %s
// RUN: python3 %S/Inputs/big_folded_mask.py --upper > %t.upper.mlir
// RUN: llmc-opt %t.upper.mlir --llmc-raise-attention | FileCheck %s --check-prefix=UPPER

// CHECK-LABEL: func.func @big_folded_mask
// CHECK: llmc.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, llmc.eager, scale = 1.000000e+00 : f64}
// CHECK-NOT: mask

// A folded mask that is not causal stays an operand.
// UPPER-LABEL: func.func @big_folded_mask
// UPPER: llmc.attention %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} {llmc.eager, scale = 1.000000e+00 : f64}
