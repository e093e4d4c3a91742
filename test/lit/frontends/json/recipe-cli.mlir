// RUN: llmc recipe --list | FileCheck %s --check-prefix=LIST
// RUN: llmc recipe --help | FileCheck %s --check-prefix=HELP
// RUN: not llmc recipe gpt3 --size tiny 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not llmc recipe gpt2 --size 7B 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: not llmc recipe gpt2 2>&1 | FileCheck %s --check-prefix=NOSIZE
// RUN: not llmc recipe gpt2 --size 2>&1 | FileCheck %s --check-prefix=NOVALUE
// RUN: not llmc recipe gpt2 --size tiny --frobnicate 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: llmc recipe gpt2 --size tiny | FileCheck %s --check-prefix=JSON
// RUN: not llmc import --no-raise 2>&1 | FileCheck %s --check-prefix=NOINPUT
// RUN: not llmc import --no-raise %t.missing.json 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: llmc --help | FileCheck %s --check-prefix=DRIVER

// LIST: gpt2 {{.*}}
// LIST-NEXT: sizes: tiny, 124M, 350M, 774M, 1.5B
// LIST: llama {{.*}}
// LIST-NEXT: sizes: tiny, 1B, 8B
// LIST: bert {{.*}}
// LIST-NEXT: sizes: tiny, base, large
// HELP: usage: llmc recipe NAME --size SIZE [-o FILE.json] [--summary]
// NAME: llmc recipe: error: unknown recipe 'gpt3'; `llmc recipe --list` lists them
// SIZE: llmc recipe: error: gpt2 has no size '7B'; its sizes are tiny, 124M, 350M, 774M, 1.5B
// NOSIZE: llmc recipe: error: gpt2 needs --size; its sizes are tiny, 124M, 350M, 774M, 1.5B
// NOVALUE: llmc recipe: error: --size needs a value
// OPTION: llmc recipe: error: unknown option '--frobnicate'
// The graph is the documented format, with its provenance in "//".
// JSON: "//": "GPT-2 tiny: 2 layers, d_model 64, 4 heads, vocab 512, n_ctx 64; written by `llmc recipe gpt2 --size tiny`"
// JSON: "format": "llmc-graph"
// NOINPUT: llmc import: error: expected an ONNX file or a JSON graph
// MISSING: llmc import: error: {{.*}}missing.json: cannot read the graph: No such file or directory
// DRIVER: import MODEL           import an ONNX model or JSON graph as llmc IR
// DRIVER: recipe NAME --size S
