// RUN: llmc-opt %models/gpt2-tiny.mlir --llmc-autodiff --llmc-append-optimizer -o %t.tiny.mlir
// RUN: llmc codegen %t.tiny.mlir --compile | FileCheck %s
// RUN: llmc import %models/hf_gpt2_dynamo_loss.onnx -o %t.gpt2.mlir
// RUN: llmc-opt %t.gpt2.mlir --llmc-autodiff --llmc-append-optimizer -o %t.gpt2.train.mlir
// RUN: llmc codegen %t.gpt2.train.mlir --compile | FileCheck %s --check-prefix=GPT2
// RUN: llmc import %models/hf_llama_dynamo_loss.onnx -o %t.llama.mlir
// RUN: llmc-opt %t.llama.mlir --llmc-autodiff --llmc-append-optimizer -o %t.llama.train.mlir
// RUN: llmc codegen %t.llama.train.mlir --compile | FileCheck %s --check-prefix=LLAMA
// RUN: llmc import %models/hf_bert_dynamo_loss.onnx -o %t.bert.mlir
// RUN: llmc-opt %t.bert.mlir --llmc-autodiff --llmc-append-optimizer -o %t.bert.train.mlir
// RUN: llmc codegen %t.bert.train.mlir --compile | FileCheck %s --check-prefix=BERT

// Whole training steps (forward, loss, backward, AdamW) lower to kernels
// and cuBLASLt calls with no op left without an emitter, and every kernel
// compiles with NVRTC: the GPT-2 fixture and the HF exports. The fixture's
// four bias adds are fused into their matmuls' bias epilogues (68 kernels
// and 83 steps before), attention reads and writes [B, T, H, D] (no
// transposes: 79 steps before) and the loss and its gradient are one
// classifier group (71 before); the two residual-gradient adds ride in
// their layer norm gradients' stores (the norm epilogue: 66 before); each
// layer norm gradient is one launch (tickets, not a second kernel) and
// sums the bias gradient of the residual gradient it writes (the column
// sums: 64 before); the embedding gradient is four launches (the count
// kernel scans in its last block: 61 steps and 44 kernels before); the
// step counter rides in the clip coefficient's kernel (57 steps before).

// CHECK:      # train_step: {{[0-9]+}} buffers, {{[0-9]+}} bytes unplanned; 56 steps
// CHECK:      step 3 matmul matmul_3 m 32 n 192 k 64 batch 1 {{.*}} -> matmul_3.out0) bias arg5:h.0.attn.c_attn.bias
// CHECK-NOT:  launch add_4 grid
// Attention reads q, k, v out of the packed c_attn output (qkv_heads).
// CHECK:      step 4 launch attention_lse_6 grid [1, 4, 2]
// CHECK-SAME: args (matmul_3.out0, matmul_3.out0+256, matmul_3.out0+512, attention_lse_6.out0, attention_lse_6.out1)
// The fused classifier writes the logits' gradient over the logits.
// CHECK:      step 13 launch cross_entropy_21_rows grid [32, 1, 1]
// CHECK-SAME: args (matmul_19.out0, arg17:targets, constant_20.out0, cross_entropy_21.count, cross_entropy_21.row_loss, matmul_19.out0)
// CHECK:      step 17 launch layer_norm_grad_27 grid [4, 1, 1] {{.*}} args (layer_norm_18.out0, matmul_23.out0, arg14:ln_f.weight, layer_norm_grad_27.out0, layer_norm_grad_27.partials, layer_norm_grad_27.tickets, layer_norm_grad_27.out1, layer_norm_grad_27.out2, layer_norm_grad_27.out3)
// A reshape of one result of a multi-result op names that result's buffer.
// CHECK:      step 19 matmul matmul_32 m 256 n 64 k 32 batch 1 transA 1 transB 0 strideA 0 strideB 0 (gelu_14.out0, layer_norm_grad_27.out0 -> matmul_32.out0)
// CHECK:      step 20 launch gelu_grad_33
// The packed gradient goes straight to the c_attn matmuls: no concat.
// CHECK:      step 27 launch attention_grad_47_dot
// CHECK-NEXT: step 28 launch attention_grad_47_kv grid [1, 4, 2] block [256, 1, 1] smem 41472
// CHECK-NEXT: step 29 launch attention_grad_47_q
// CHECK-NEXT: step 30 launch reduce_sum_49 {{.*}} args (attention_grad_47.out0, reduce_sum_49.out0)
// CHECK-NEXT: step 31 matmul matmul_50 {{.*}} (attention_grad_47.out0, arg4:h.0.attn.c_attn.weight -> matmul_50.out0)
// CHECK:      step 35 launch gather_grad_57_count grid [1, 1, 1] block [1024, 1, 1]
// CHECK:      step 38 launch gather_grad_57_sum
// The tied embedding's gradient sum and the step count's increment (written
// in place into `step`) are one horizontal kernel.
// CHECK:      step 39 launch add_59 grid [33, 1, 1] block [256, 1, 1] smem 0 args (matmul_26.out0, gather_grad_57.out0, arg19, constant_58.out0, add_59.out0, add_59.out1)
// CHECK-NEXT: step 40 launch adamw_update_61 grid [128, 1, 1] block [256, 1, 1] smem 0 args (arg0:wte, add_59.out0, arg20, arg36, arg18:lr, add_59.out1, adamw_update_61.out0, adamw_update_61.out1, adamw_update_61.out2)
// CHECK:      step 55 launch adamw_update_76
// Each step's phase (StepPhases.h): the forward pass through the loss's
// reduction, the backward pass, then the optimizer from the step count's
// increment (it reads the `step` state) on: here its kernel also sums the
// embedding's gradient.
// CHECK-NEXT: phases: forward 0-14, backward 15-38, optimizer 39-55{{$}}
// CHECK:      compiled 41 kernels for sm_90 with NVRTC

// GPT2:  launch attention_grad_{{[0-9]+}}_kv
// GPT2:  launch adamw_update_
// GPT2:  compiled {{[0-9]+}} kernels for sm_90 with NVRTC

// LLAMA: launch rms_norm_grad_{{[0-9]+}} grid
// LLAMA: launch attention_grad_{{[0-9]+}}_kv
// The SwiGLU backward (silu_grad and its muls) is one fused kernel, which
// recomputes silu(gate) from gate (read for silu_grad anyway): it reads
// gate, dy and up, and writes d_up and d_gate.
// LLAMA: launch silu_{{[0-9]+}} grid {{.*}} args (matmul_{{[0-9]+}}.out0, matmul_{{[0-9]+}}.out0, matmul_{{[0-9]+}}.out0, silu_{{[0-9]+}}.out0, silu_{{[0-9]+}}.out1)
// LLAMA: compiled {{[0-9]+}} kernels for sm_90 with NVRTC

// BERT:  launch layer_norm_grad_{{[0-9]+}} grid
// BERT:  launch attention_grad_{{[0-9]+}}_kv
// BERT:  launch gather_grad_{{[0-9]+}}_sum
// BERT:  phases: forward 0-{{[0-9]+}}, backward {{[0-9]+}}-{{[0-9]+}}, optimizer {{[0-9]+}}-{{[0-9]+}}{{$}}
// BERT:  compiled {{[0-9]+}} kernels for sm_90 with NVRTC
