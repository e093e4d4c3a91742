// Fusion as `llmc compile` reports it (docs/fusion.md): launches per step
// with each fusion switched off, `--explain` and `--explain-json`, and the
// errors of a bad `--no-fuse`. NVRTC needs no GPU.
// RUN: rm -rf %t.cache
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/gpt2-tiny.mlir -o %t.llmc --arch sm_90 --precision bf16 | FileCheck %s --check-prefix=TINY
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/gpt2-tiny.mlir -o %t.llmc --arch sm_90 --precision bf16 --no-fuse=elementwise,reductions,horizontal,classifier | FileCheck %s --check-prefix=TINY-EPI
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/gpt2-tiny.mlir -o %t.llmc --arch sm_90 --precision bf16 --no-fuse=all | FileCheck %s --check-prefix=TINY-OFF
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/gpt2-tiny.mlir -o %t.llmc --arch sm_90 --precision bf16 --no-fuse=gelu-epilogue,bias-grad-epilogue | FileCheck %s --check-prefix=TINY-NOGELU
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/hf_gpt2_dynamo_loss.onnx -o %t.llmc --arch sm_90 --precision bf16 --explain --explain-json %t.json | FileCheck %s --check-prefix=HF
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/hf_gpt2_dynamo_loss.onnx -o %t.llmc --arch sm_90 --precision bf16 --no-fuse elementwise,reductions,horizontal,classifier | FileCheck %s --check-prefix=HF-EPI
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/hf_gpt2_dynamo_loss.onnx -o %t.llmc --arch sm_90 --precision bf16 --no-fuse=norm-prologue,norm-epilogue --explain | FileCheck %s --check-prefix=HF-NONORM
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/gpt2-tiny.mlir -o %t.llmc --arch sm_90 --precision bf16 --explain | FileCheck %s --check-prefix=TINY-COLSUM
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/gpt2-tiny.mlir -o %t.llmc --arch sm_90 --precision bf16 --no-fuse=colsum --explain | FileCheck %s --check-prefix=TINY-NOCOLSUM
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/hf_llama_dynamo_loss.onnx -o %t.llmc --arch sm_90 --precision bf16 --explain | FileCheck %s --check-prefix=LLAMA
// RUN: env LLMC_CACHE_DIR=%t.cache llmc compile %models/hf_llama_dynamo_loss.onnx -o %t.llmc --arch sm_90 --precision bf16 --no-fuse=reductions | FileCheck %s --check-prefix=LLAMA-OFF
// RUN: %python -c "import json,sys; d=json.load(open(sys.argv[1])); g=d['groups']; print(len(g), sum(len(x['members'])>1 for x in g), g[0]['kind'], g[0]['members'][0]['names'][0], d['fusion']['elementwise'])" %t.json | FileCheck %s --check-prefix=JSON
// RUN: not llmc compile %models/gpt2-tiny.mlir -o %t.x.llmc --no-fuse=bogus 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not llmc compile %models/gpt2-tiny.mlir -o %t.x.llmc --no-fuse 2>&1 | FileCheck %s --check-prefix=EMPTY

// gpt2-tiny in bf16, launches per step: 48 with the default fusion
// (attention reading the packed qkv, the norm prologues and epilogues, the
// four bias gradients in their weight gradients as BGRADA since the
// weights are [in, out], the MLP's gelu in its matmul as GELU_AUX_BIAS);
// 64 with only the cuBLASLt epilogues, strided attention, the packed qkv
// and the norm prologues and epilogues; 91 with no fusion at all (a bf16
// linear layer's bias add still rides with its matmul, being part of its
// one rounding; 72 and 99 before the optimizer read the bf16 weight
// gradients without their 8 widening casts). DGELU (the gelu_grad in the
// c_proj input-gradient matmul) is on by default since session 9: one
// launch fewer everywhere it applies (43 -> 42, 59 -> 58); turning the GELU
// and bias-gradient epilogues off gives the gelu and the column sums back
// (46 -> 45, DGELU staying).
// Every norm gradient is one launch (its parameter sums take tickets in
// the row kernel: 3 launches fewer than the former rows + params pairs, 5
// in the HF export). Column sums (the bias gradients of the residual
// gradients, summed in the norm kernels) move two sums out of BGRADA
// without changing the count; with the bias-gradient epilogues off they
// are two column-sum kernels fewer (53 -> 48). The position embedding's
// gradient sums the residual gradient over the batch only: not a column
// sum of the rows, it stays a kernel of its own. Since session 10 the
// optimizer's step counter (written in place) joins the clip
// coefficient's horizontal kernel: one launch fewer everywhere but with
// horizontal fusion off (42 -> 41, 45 -> 44; HF 65 -> 64, Llama 99 -> 98).
// TINY-COLSUM: llmc.reduce_sum
// TINY-COLSUM: not fused with group {{[0-9]+}}: a column sum of the norm group's result: the sum is not over every axis before the norm's (a column sum of the rows)
// TINY-COLSUM: launches        41 per step
// TINY-NOCOLSUM: not fused with group {{[0-9]+}}: column sums in norm gradients are off (--no-fuse=colsum)
// TINY-NOCOLSUM: launches        41 per step
// TINY:      launches        41 per step
// TINY-EPI:  launches        58 per step
// TINY-OFF:  launches        86 per step
// TINY-NOGELU: launches      44 per step

// The HF GPT-2 export (2 layers): 158 -> 78, 67 -> 65 with DGELU (the gelu reads its fc
// product through a view and still joins it as GELU_AUX_BIAS: 80 without;
// the lm_head transposes
// fold into its matmuls, the bias gradients ride as BGRADA, the norm
// epilogues are on; 95 before those; 174 -> 124 without the 16 transposes around attention and the
// fused classifier; 103 without the norm prologues and epilogues; 107
// before the widening casts behind a reshape rode in the norm gradients). Each group with its members
// and their ONNX node names; the weight casts are one horizontal group.
// HF:      fusion of @train_step: {{[0-9]+}} groups
// HF-NEXT: group 0 (elementwise, 17 ops)
// HF-NEXT:     llmc.cast "m.transformer.h.0.attn.c_attn.weight" at {{.*}}hf_gpt2_dynamo_loss.onnx
// HF:      group {{[0-9]+}} (reduction+casts, 2 ops)
// HF-NEXT:     llmc.layer_norm "node_layer_norm" at
// HF-NEXT:     llmc.cast "node_view_1" at
// HF:      group {{[0-9]+}} (reduction+elementwise, 4 ops)
// HF-NEXT:     llmc.cast "node_view_8" at
// HF-NEXT:     llmc.add "node_add_4" at
// HF-NEXT:     llmc.layer_norm "node_layer_norm_1" at
// HF-NEXT:     llmc.cast "node_view_9" at
// HF-NEXT:     not fused with group {{[0-9]+}}: the elementwise group broadcasts a value (the row kernel loads every operand at the row's offsets)
// HF:      not fused with group {{[0-9]+}}: 'llmc.matmul' is a cuBLASLt call: it reads its operands from memory as they are (no prologue)
// HF:      group {{[0-9]+}} (classifier, 4 ops)
// HF-NEXT:     llmc.cast "node_view_26"
// HF-NEXT:     llmc.cross_entropy "node_cross_entropy_loss"
// HF-NEXT:     llmc.cross_entropy_grad "node_cross_entropy_loss"
// HF-NEXT:     llmc.cast
// HF:      launches        64 per step
// HF-EPI:  launches        99 per step
// HF-NONORM: norm prologues are off (--no-fuse=norm-prologue)
// HF-NONORM: launches        73 per step
// The HF Llama export (2 layers) in bf16: its 5 RMS norm gradients (2 a
// layer and the final norm) sum their weight gradients in the same launch
// as the rows, no separate _params kernel (128 -> 123). Autocast runs RoPE
// in f32 between the bf16 projections and attention, so q and k are
// widened, rotated and rounded back, and the same in the backward (dq, dk
// from attention_grad to the projections' gradient GEMMs): the casts ride
// in the rotary kernel's load and store, 8 launches a layer (123 -> 107).
// SwiGLU's backward groups (d_up = dy * silu(gate), then d_gate =
// silu_grad(gate, dy * up) after the up projection's GEMMs) both read dy:
// sibling fusion makes them one kernel, one a layer (107 -> 105). The
// residual adds (the bf16 projection widened and added to the f32 stream)
// run in the next RMS norm's warp row kernel, a norm prologue as GPT-2's
// layer norms take (issue 19): 4 launches (105 -> 101). With the cast
// rewrites off (LLAMA-OFF) the norms' narrowing casts join them as
// epilogues instead (128 -> 119). The SwiGLU backward kernel computes
// silu(gate) again from gate, which it reads for silu_grad, instead of
// reading the forward's (which the forward then no longer writes).
// Every count here is 2 lower since the token embedding's gradient scans
// in its count kernel (four launches, not six), and the HF GPT-2 export's
// 4 lower again since its position embedding is a window of its table
// and its gradient the batch sum (llmc-fold-position-gathers): gpt2-tiny
// 45 -> 43, HF GPT-2 73 -> 67, HF Llama 101 -> 99.
// LLAMA:      group {{[0-9]+}} (reduction+casts, 3 ops)
// LLAMA-NEXT:     llmc.cast "node_view" at
// LLAMA-NEXT:     llmc.rotary "node_add_4" at
// LLAMA-NEXT:     llmc.cast "node_transpose_1" at
// LLAMA:      group {{[0-9]+}} (reduction+elementwise, 4 ops)
// LLAMA-NEXT:     llmc.cast "node_linear_3" at
// LLAMA-NEXT:     llmc.add "node_add_6" at
// LLAMA-NEXT:     llmc.rms_norm "node_mul_9" at
// LLAMA-NEXT:     llmc.cast "node_mul_9" at
// LLAMA:      group {{[0-9]+}} (elementwise, 4 ops)
// LLAMA-NEXT:     llmc.silu "node_silu_1" at
// LLAMA-NEXT:     llmc.mul "node_mul_19" at
// LLAMA-NEXT:     llmc.mul "node_mul_19" at
// LLAMA-NEXT:     llmc.silu_grad "node_silu_1" at
// LLAMA:          llmc.attention_grad "node_scaled_dot_product_attention_1" at
// LLAMA:      group {{[0-9]+}} (reduction+casts, 3 ops)
// LLAMA-NEXT:     llmc.cast "node_transpose_6" at
// LLAMA-NEXT:     llmc.rotary "node_add_11" at
// LLAMA-NEXT:     llmc.cast "node_view_5" at
// LLAMA:      launches        98 per step
// LLAMA-OFF:  launches        116 per step
// JSON: {{^}}[[N:[0-9]+]] {{[0-9]+}} elementwise m.transformer.h.0.attn.c_attn.weight True{{$}}

// BAD: llmc compile: error: --no-fuse: unknown fusion 'bogus' (elementwise, reductions, horizontal, norm-prologue, norm-epilogue, colsum, epilogues, gelu-epilogue, gelu-grad-epilogue, bias-grad-epilogue, strided, qkv-slices, classifier or all)
// EMPTY: llmc compile: error: --no-fuse needs a value
