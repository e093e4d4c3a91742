// Every user-facing error of `llmc run`.
// RUN: not llmc run %s --inputs %S/Inputs/only-idx.json 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not llmc run %s --inputs %S/Inputs/wrong-shape.json 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not llmc run %s --inputs %S/Inputs/extra.json 2>&1 | FileCheck %s --check-prefix=EXTRA
// RUN: not llmc run %s --inputs %S/Inputs/float-target.json 2>&1 | FileCheck %s --check-prefix=NOTINT
// RUN: not llmc run %s --inputs %S/Inputs/bad-index.json 2>&1 | FileCheck %s --check-prefix=INDEX
// RUN: not llmc run %s --inputs %S/Inputs/missing-file.json 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: not llmc run %s 2>&1 | FileCheck %s --check-prefix=USAGE
// RUN: not llmc run %s --inputs %S/Inputs/only-idx.json --bogus 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: not llmc run %S/Inputs/unknown-op.mlir --inputs %S/Inputs/x2.json 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not llmc run %S/Inputs/dynamic.mlir --inputs %S/Inputs/x12.json 2>&1 | FileCheck %s --check-prefix=DYNAMIC

// MISSING: llmc run: error: missing input 'tgt' (i64[2, 3]) in the inputs file
// SHAPE: llmc run: error: input 'idx' has shape [2, 2] but the model expects [2, 3]
// EXTRA: llmc run: error: the inputs file has 'foo', which is not an input of the model
// NOTINT: llmc run: error: input 'tgt': expected an integer for i64, got 2.5
// INDEX: llmc run: error: embed_tokens: reference evaluator: index 7 (indices element 1) is out of range for size 3
// INDEX: llmc run: error: evaluation failed
// NOFILE: llmc run: error: cannot open '{{.*}}missing-file.json'
// USAGE: llmc run: error: expected a model and --inputs; usage: llmc run MODEL --inputs
// OPTION: llmc run: error: unknown option '--bogus'
// UNKNOWN: llmc run: error: call_node: reference evaluator: no kernel for op 'func.call'
// DYNAMIC: llmc run: error: argument 'x' has type tensor<?x2xf32>; the reference evaluator needs a static tensor

func.func @forward(
    %wte: tensor<3x2xf32> {llmc.param = "wte", llmc.init_rule = "normal(0.02)"},
    %idx: tensor<2x3xi64> {llmc.input = "idx"},
    %tgt: tensor<2x3xi64> {llmc.input = "tgt"})
    -> (tensor<f32> {llmc.output = "loss"}) {
  %x = llmc.gather %wte, %idx axis 0 : (tensor<3x2xf32>, tensor<2x3xi64>) -> tensor<2x3x2xf32> loc("embed_tokens")
  %logits = llmc.matmul %x, %wte {transpose_rhs} : (tensor<2x3x2xf32>, tensor<3x2xf32>) -> tensor<2x3x3xf32>
  %loss = llmc.cross_entropy mean %logits, %tgt : (tensor<2x3x3xf32>, tensor<2x3xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
