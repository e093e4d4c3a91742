// `llmc compile` on the test models: NVRTC needs no GPU, so CI compiles every
// kernel. The second gpt2-tiny compile finds every kernel in the cache.
// RUN: rm -rf %t.cache
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/gpt2-tiny.mlir -o %t.gpt2.llmc --arch sm_90 | FileCheck %s --check-prefix=GPT2
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/gpt2-tiny.mlir -o %t.gpt2.llmc --arch sm_90 | FileCheck %s --check-prefix=CACHED
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/tiny_gpt_dynamo_loss.onnx -o %t.onnx.llmc --arch sm_90 | FileCheck %s --check-prefix=ONNX
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/bigram-tiny.mlir -o %t.bigram.llmc --arch sm_90 --optimizer sgd --momentum 0.9 | FileCheck %s --check-prefix=BIGRAM
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/train-step-copy.mlir -o %t.copy.llmc --arch sm_90 | FileCheck %s --check-prefix=COPY
// RUN: test -s %t.gpt2.llmc && test -s %t.onnx.llmc && test -s %t.bigram.llmc
// The plan records the loss's vocabulary, which `llmc train` checks the data
// against (the bigram spells its loss out: no cross_entropy, 0, no check).
// RUN: %python %S/Inputs/bundle_field.py %t.onnx.llmc vocab | FileCheck %s --check-prefix=VOCAB
// RUN: %python %S/Inputs/bundle_field.py %t.bigram.llmc vocab | FileCheck %s --check-prefix=NOVOCAB
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/gpt2-tiny.mlir --eval -o %t.eval.llmc --arch sm_90 | FileCheck %s --check-prefix=EVAL
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/tiny_gpt_dynamo_loss_opt.onnx -o %t.opt.llmc --arch sm_90 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/tiny_gpt_dynamo_loss_opt.onnx --eval -o %t.opt.llmc --arch sm_90 2>/dev/null | FileCheck %s --check-prefix=OPTEVAL
// RUN: test -s %t.eval.llmc && test -s %t.opt.llmc

// GPT2:      wrote {{.*}}.gpt2.llmc: gpt2-tiny
// GPT2-NEXT: arch            sm_90 (NVRTC {{[0-9.]+}})
// GPT2-NEXT: precision       fp32
// GPT2-NEXT: kernels         28 (0 from the cache)
// GPT2-NEXT: launches        44 per step (kernel launches and cuBLASLt calls)
// GPT2-NEXT: cuBLASLt calls  15
// GPT2-NEXT: memsets         0
// GPT2-NEXT: arena           {{[0-9.]+}} MiB ({{[0-9]+}} bytes; persistent {{[0-9.]+}} MiB; one buffer per value would take {{[0-9.]+}} MiB)
// The device memory report: the arena and the runtime's fixed costs by name.
// GPT2-NEXT: device memory   {{[0-9.]+}} MiB before the first step ({{[0-9]+}} bytes: the arena and the runtime's fixed costs)
// GPT2-NEXT:   arena buffers            {{[0-9.]+}} MiB  (116 buffers, planned)
// GPT2-NEXT:   scalar slots             0.75 KiB  (3 slots of 256 bytes)
// GPT2-NEXT:   cuBLASLt workspace      32.00 MiB  (after the arena)
// GPT2-NEXT:   allocation rounding {{[0-9.]+ [KM]iB}}  (the arena's cuMemAlloc in 2 MiB pages)
// GPT2-NEXT:   modules {{[0-9.]+ [KM]iB}}  (28 cubins, 64 KiB granules)
// GPT2-NEXT:   local memory             0 bytes  (known when loaded on a GPU)
// GPT2-NEXT:   CUDA graph              44.00 KiB  (44 nodes)
// GPT2-NEXT:   cuBLASLt library         2.00 MiB  (handle and lazily loaded kernels)
// GPT2-NEXT:   input staging            0 bytes  (batches are copied straight into the arena)
// GPT2-NEXT:   total {{[0-9.]+ MiB}}  ({{[0-9]+}} bytes)
// GPT2-NEXT:   on the device {{[0-9.]+ MiB}} to {{[0-9.]+ MiB}}  (cuMemGetInfo's 2 MiB pages: the driver may fit modules, graph and library in pages it holds)
// GPT2-NEXT: parameters      83904
// GPT2-NEXT: tokens/step     32
// GPT2-NEXT: FLOPs/step      1.65e+07 (6 * params * tokens + attention; cuBLASLt calls {{.*}})
// GPT2-NEXT: updates         49 in place, 0 copied
// GPT2-NEXT: compile time    {{[0-9.]+}} s (import {{[0-9.]+}} s, pipeline {{[0-9.]+}} s, codegen {{[0-9.]+}} s, NVRTC {{[0-9.]+}} s, bundle write {{[0-9.]+}} s)

// VOCAB: {{^}}512{{$}}
// NOVOCAB: {{^}}0{{$}}

// CACHED: kernels         [[N:[0-9]+]] ([[N]] from the cache)

// ONNX:      wrote {{.*}}.onnx.llmc: tiny_gpt_dynamo_loss
// ONNX:      parameters      169728
// ONNX-NEXT: tokens/step     32
// ONNX:      updates         88 in place, 0 copied

// SGD with momentum: params and momentum buffers updated in place.
// BIGRAM:      wrote {{.*}}.bigram.llmc: bigram-tiny
// BIGRAM:      cuBLASLt calls  2
// BIGRAM:      parameters      65792
// BIGRAM-NEXT: tokens/step     128
// BIGRAM-NEXT: FLOPs/step      5.053e+07
// BIGRAM-NEXT: updates         4 in place, 0 copied

// A hand-written @train_step is lowered as it is; its two updates cannot
// happen in place, so two copy kernels follow the step's four launches (the
// update's mul and sub are one fused kernel).
// COPY:      wrote {{.*}}.copy.llmc: train-step-copy
// COPY-NEXT: arch            sm_90
// COPY-NEXT: precision       fp32
// COPY-NEXT: kernels         5 (
// COPY-NEXT: launches        6 per step
// COPY:      updates         0 in place, 2 copied

// The eval plan of gpt2-tiny: the forward and loss, a third of the step's
// FLOPs, its forward GEMMs only, nothing updated.
// EVAL:      wrote {{.*}}.eval.llmc: gpt2-tiny
// EVAL:      cuBLASLt calls  5
// EVAL:      parameters      83904
// EVAL-NEXT: tokens/step     32
// EVAL-NEXT: FLOPs/step      5.501e+06 (2 * params * tokens + attention; cuBLASLt calls {{.*}})
// EVAL-NEXT: updates         none (eval plan: forward and loss only)

// The exporter-optimized export folded its causal mask into an initializer.
// Folded from no parameter (the optimizer's folded_from says so), it imports
// as a constant and attention is causal, so its training step compiles, with
// the warnings about the folded and merged parameters it trains; its eval
// plan is what `llmc verify --device cuda` runs on it.
// OPT: warning: {{.*}}LayerNormalization nodes
// OPT: warning: 10 initializers are copies of parameters that the exporter's optimizer folded
// OPT: wrote {{.*}}.opt.llmc: tiny_gpt_dynamo_loss_opt
// OPTEVAL:      wrote {{.*}}.opt.llmc: tiny_gpt_dynamo_loss_opt
// OPTEVAL:      updates         none (eval plan: forward and loss only)
