// `llmc compile --precision bf16` (docs/precision.md): the step lowered by
// llmc-lower-precision, every kernel compiled by NVRTC (no GPU needed). The
// bf16 matmuls are cuBLASLt calls with bf16 A/B/D, the casts elementwise
// kernels; the GPU numbers are test/gpu/verify-models.sh's.
// RUN: rm -rf %t.cache
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/tiny_gpt_dynamo_loss.onnx -o %t.llmc --arch sm_90 --precision bf16 | FileCheck %s
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/hf_gpt2_dynamo_loss.onnx -o %t.gpt2.llmc --arch sm_90 --precision bf16 | FileCheck %s
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/tiny_gpt_dynamo_loss_opt.onnx --eval -o %t.eval.llmc --arch sm_90 --precision bf16 2>/dev/null | FileCheck %s
// RUN: not llmc compile %models/train-step-copy.mlir -o %t.copy.llmc --arch sm_90 --precision bf16 2>&1 | FileCheck %s --check-prefix=HANDWRITTEN
// RUN: not llmc compile %models/gpt2-tiny.mlir -o %t.x.llmc --precision fp8 2>&1 | FileCheck %s --check-prefix=BADPREC
// RUN: not llmc compile %models/gpt2-tiny.mlir -o %t.x.llmc --precision 2>&1 | FileCheck %s --check-prefix=NOVALUE

// CHECK:      arch            sm_90
// CHECK-NEXT: precision       bf16 (autocast: docs/precision.md)
// CHECK-NEXT: kernels         {{[0-9]+}}

// HANDWRITTEN: error: {{.*}}train-step-copy.mlir: --precision bf16 lowers @forward before autodiff, and the module has only a hand-written @train_step
// BADPREC: llmc compile: error: --precision needs fp32, bf16, fp16 or tf32, got 'fp8'
// NOVALUE: llmc compile: error: --precision needs a value
