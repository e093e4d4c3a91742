// Every error `llmc compile` reports, each naming what is wrong.
// RUN: split-file %s %t
// RUN: not llmc compile %t/call.mlir -o %t/x.llmc 2>&1 | FileCheck %s --check-prefix=EMITTER
// RUN: not llmc compile %t/f64.mlir -o %t/x.llmc 2>&1 | FileCheck %s --check-prefix=F64
// RUN: not llmc compile %t/noforward.mlir -o %t/x.llmc 2>&1 | FileCheck %s --check-prefix=NOFORWARD
// RUN: not llmc compile %t/noloss.mlir -o %t/x.llmc 2>&1 | FileCheck %s --check-prefix=NOLOSS
// RUN: not llmc compile %models/gpt2-tiny.mlir --arch foo 2>&1 | FileCheck %s --check-prefix=ARCH
// RUN: not llmc compile %models/gpt2-tiny.mlir --arch compute_90 2>&1 | FileCheck %s --check-prefix=VIRTUAL
// RUN: not llmc compile %models/gpt2-tiny.mlir --arch sm_1 2>&1 | FileCheck %s --check-prefix=ARCH1
// An arch NVRTC does not know is one line, not one error per kernel.
// RUN: not llmc compile %models/gpt2-tiny.mlir --arch sm_10 -o %t/x.llmc 2>&1 | FileCheck %s --check-prefix=SM10
// RUN: not llmc compile %models/gpt2-tiny.mlir --arch sm_10 -o %t/x.llmc 2>&1 | count 1
// RUN: not llmc codegen %models/gpt2-tiny.mlir --compile --arch sm_10 2>&1 >/dev/null | FileCheck %s --check-prefix=SM10-CODEGEN
// RUN: not llmc codegen %models/gpt2-tiny.mlir --compile --arch sm_10 2>&1 >/dev/null | count 1
// RUN: not llmc compile %models/gpt2-tiny.mlir --optimizer adam 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not llmc compile %models/gpt2-tiny.mlir --beta2 1.5 2>&1 | FileCheck %s --check-prefix=BETA
// RUN: not llmc compile %models/gpt2-tiny.mlir --seed x 2>&1 | FileCheck %s --check-prefix=SEED
// RUN: not llmc compile %models/gpt2-tiny.mlir --frobnicate 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: not llmc compile %models/gpt2-tiny.mlir -o 2>&1 | FileCheck %s --check-prefix=VALUE
// RUN: not llmc compile 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: not llmc compile a.mlir b.mlir 2>&1 | FileCheck %s --check-prefix=TWO
// RUN: not llmc compile %t/missing.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not llmc compile %t/model.txt 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not llmc compile %models/gpt2-tiny.mlir --batch 4 2>&1 | FileCheck %s --check-prefix=SHAPES
// RUN: not llmc compile %t/bigram.mlir --optimizer sgd -o %t/no/such/dir/x.llmc 2>&1 | FileCheck %s --check-prefix=WRITE
// RUN: llmc compile --help | FileCheck %s --check-prefix=HELP
// RUN: not llmc compile %models/gpt2-tiny.mlir --eval --optimizer sgd 2>&1 | FileCheck %s --check-prefix=EVALOPT
// RUN: not llmc compile %t/call.mlir --eval 2>&1 | FileCheck %s --check-prefix=EVALSTEP
// RUN: not llmc compile %t/noforward.mlir --eval 2>&1 | FileCheck %s --check-prefix=NOFORWARD
// RUN: not llmc compile %t/noloss.mlir --eval 2>&1 | FileCheck %s --check-prefix=NOLOSS
// RUN: not llmc compile %t/unnamed.mlir --eval 2>&1 | FileCheck %s --check-prefix=EVALSLOT
// RUN: not llmc compile %t/inplace.mlir -o %t/x.llmc 2>&1 | FileCheck %s --check-prefix=INPLACE
// RUN: not llmc compile %t/slot.mlir -o %t/x.llmc 2>&1 | FileCheck %s --check-prefix=SLOT

// INPLACE: llmc compile: error: {{.*}}inplace.mlir:{{[0-9]+}}:{{[0-9]+}}: codegen: result #0 is marked in_place into argument #1, but it replaces argument #0
// SLOT: llmc compile: error: {{.*}}slot.mlir:{{[0-9]+}}:{{[0-9]+}}: codegen: 'w' cannot be the scalar slot 'lr'
// EMITTER: llmc compile: error: {{.*}}call.mlir:{{[0-9]+}}:{{[0-9]+}}: codegen: no CUDA emitter for 'func.call'
// F64: llmc compile: error: {{.*}}codegen: 'llmc.{{[a-z_]+}}' {{(operand|result)}} #0 has the element type 'f64', which the CUDA backend does not support yet
// NOFORWARD: llmc compile: error: {{.*}}the model has no func.func @forward (docs/model-ir.md)
// NOLOSS: llmc compile: error: {{.*}}llmc-append-loss: @forward has 0 float results of rank >= 2; name the logits with --logits
// ARCH: llmc compile: error: --arch 'foo' is not a GPU architecture: expected sm_XY (sm_90 for H100/H200, sm_80 for A100)
// VIRTUAL: llmc compile: error: --arch compute_90 is a virtual architecture (PTX, no cubin); use sm_90
// ARCH1: llmc compile: error: --arch 'sm_1' is not a GPU architecture
// SM10: llmc compile: error: NVRTC {{[0-9.]+}} cannot compile for sm_10; it supports {{.*}}sm_90{{.*}} (sm_90 for H100/H200, sm_80 for A100)
// SM10-CODEGEN: llmc codegen: error: NVRTC {{[0-9.]+}} cannot compile for sm_10; it supports {{.*}}sm_90
// OPT: llmc compile: error: --optimizer needs adamw or sgd
// BETA: llmc compile: error: --beta2 needs a number in [0, 1)
// SEED: llmc compile: error: --seed needs an integer in [0, 18446744073709551615], got 'x'
// OPTION: llmc compile: error: unknown option '--frobnicate'; usage: llmc compile MODEL -o OUT.llmc
// VALUE: llmc compile: error: -o needs a value
// NOFILE: llmc compile: error: expected a model file; usage: llmc compile
// TWO: llmc compile: error: expected one model file, got 'a.mlir' and 'b.mlir'
// MISSING: llmc compile: error: cannot read '{{.*}}missing.mlir': No such file or directory
// FORMAT: llmc compile: error: '{{.*}}model.txt' is not a model llmc reads
// SHAPES: llmc compile: error: '{{.*}}gpt2-tiny.mlir' is llmc IR, whose shapes are fixed
// WRITE: llmc compile: error: cannot write the bundle: {{.*}}no/such/dir/x.llmc
// HELP: usage: llmc compile MODEL -o OUT.llmc
// HELP: --batch B
// HELP: --eval
// HELP: --optimizer adamw|sgd
// EVALOPT: llmc compile: error: --optimizer is an optimizer option, and --eval compiles no optimizer
// EVALSTEP: llmc compile: error: {{.*}}an eval plan is compiled from @forward, and the module has only @train_step
// EVALSLOT: llmc compile: error: {{.*}}unnamed.mlir:{{[0-9]+}}:{{[0-9]+}}: an eval plan needs the loss in a scalar slot: @forward must return it as a rank-0 f32 result named 'loss' (llmc.output)

//--- call.mlir
// A hand-written training step is lowered as it is; its call has no kernel.
func.func private @helper(tensor<4xf32>) -> tensor<4xf32>
func.func @train_step(%x: tensor<4xf32> {llmc.input = "x"}) -> (tensor<4xf32> {llmc.output = "y"}) {
  %0 = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

//--- f64.mlir
func.func @forward(%w: tensor<4xf64> {llmc.param = "w", llmc.init_rule = "ones"},
                   %x: tensor<4xf64> {llmc.input = "x"}) -> (tensor<f64> {llmc.output = "loss"}) {
  %0 = llmc.mul %w, %x : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %1 = llmc.reduce_sum %0 axes [0] : (tensor<4xf64>) -> tensor<f64>
  return %1 : tensor<f64>
}

//--- noforward.mlir
func.func @other(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- noloss.mlir
// Neither a loss (rank 0) nor logits (rank >= 2): the pipeline stops at
// append-loss, before any code is generated.
func.func @forward(%w: tensor<4xf32> {llmc.param = "w", llmc.init_rule = "ones"},
                   %x: tensor<4xf32> {llmc.input = "x"}) -> (tensor<4xf32> {llmc.output = "y"}) {
  %0 = llmc.mul %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

//--- bigram.mlir
func.func @forward(%w: tensor<4xf32> {llmc.param = "w", llmc.init_rule = "ones"},
                   %x: tensor<4xf32> {llmc.input = "x"}) -> (tensor<f32> {llmc.output = "loss"}) {
  %0 = llmc.mul %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = llmc.reduce_sum %0 axes [0] : (tensor<4xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

//--- inplace.mlir
// A hand-written step whose group claims the wrong argument's buffer.
func.func @train_step(%w: tensor<4x4xf32> {llmc.param = "w", llmc.init_rule = "zeros"},
                      %v: tensor<4x4xf32> {llmc.param = "v", llmc.init_rule = "zeros"})
    -> (tensor<4x4xf32> {llmc.next = 0 : i64}) {
  %0 = llmc.kernel -> (tensor<4x4xf32>) attributes {in_place = array<i64: 1>} {
    %1 = llmc.transpose %w [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    llmc.yield %1 : tensor<4x4xf32>
  }
  return %0 : tensor<4x4xf32>
}

//--- slot.mlir
// A hand-written step that asks for a vector in the scalar slot 'lr'.
func.func @train_step(%w: tensor<4xf32> {llmc.param = "w", llmc.init_rule = "zeros", llmc.slot = "lr"})
    -> (tensor<4xf32> {llmc.next = 0 : i64}) {
  %0 = llmc.neg %w : tensor<4xf32>
  return %0 : tensor<4xf32>
}

//--- unnamed.mlir
// A loss (rank 0) under another name: it trains (autodiff takes the only
// rank-0 result), but an eval plan has nothing to read the loss from.
func.func @forward(%w: tensor<4xf32> {llmc.param = "w", llmc.init_rule = "ones"},
                   %x: tensor<4xf32> {llmc.input = "x"}) -> (tensor<f32> {llmc.output = "total"}) {
  %0 = llmc.mul %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = llmc.reduce_sum %0 axes [0] : (tensor<4xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

//--- model.txt
not a model
