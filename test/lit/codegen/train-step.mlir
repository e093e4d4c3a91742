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
// classifier group (71 before).

// CHECK:      # train_step: {{[0-9]+}} buffers, {{[0-9]+}} bytes unplanned; 66 steps
// CHECK:      step 3 matmul matmul_3 m 32 n 192 k 64 batch 1 {{.*}} -> matmul_3.out0) bias arg5:h.0.attn.c_attn.bias
// CHECK-NOT:  launch add_4 grid
// CHECK:      step 5 launch attention_lse_9 grid [1, 4, 2]
// CHECK-SAME: args (split_5.out0, split_5.out1, split_5.out2, attention_lse_9.out0, attention_lse_9.out1)
// The fused classifier writes the logits' gradient over the logits.
// CHECK:      step 14 launch cross_entropy_24_rows grid [32, 1, 1]
// CHECK-SAME: args (matmul_22.out0, arg17:targets, constant_23.out0, cross_entropy_24.count, cross_entropy_24.row_loss, matmul_22.out0)
// CHECK:      step 18 launch layer_norm_grad_30_rows
// CHECK-NEXT: step 19 launch layer_norm_grad_30_params
// A reshape of one result of a multi-result op names that result's buffer.
// CHECK:      step 22 matmul matmul_35 m 256 n 64 k 32 batch 1 transA 1 transB 0 strideA 0 strideB 0 (gelu_17.out0, layer_norm_grad_30.out0 -> matmul_35.out0)
// CHECK:      step 23 launch gelu_grad_36
// CHECK:      step 32 launch attention_grad_50_dot
// CHECK-NEXT: step 33 launch attention_grad_50_kv grid [1, 4, 2] block [256, 1, 1] smem 41472
// CHECK-NEXT: step 34 launch attention_grad_50_q
// CHECK-NEXT: step 35 launch concat_54 {{.*}} args (attention_grad_50.out0, attention_grad_50.out1, attention_grad_50.out2, concat_54.out0)
// CHECK:      step 42 launch gather_grad_63_zero
// CHECK:      step 47 launch gather_grad_63_sum
// CHECK:      step 49 launch add_66 grid [1, 1, 1] block [256, 1, 1] smem 0 args (arg19, constant_65.out0, add_66.out0)
// CHECK-NEXT: step 50 launch adamw_update_67 grid [128, 1, 1] block [256, 1, 1] smem 0 args (arg0:wte, add_64.out0, arg20, arg36, arg18:lr, add_66.out0, adamw_update_67.out0, adamw_update_67.out1, adamw_update_67.out2)
// CHECK:      step 65 launch adamw_update_82
// Each step's phase (StepPhases.h): the forward pass through the loss's
// reduction, the backward pass, then the optimizer from the step count's
// increment (it reads the `step` state) on.
// CHECK-NEXT: phases: forward 0-{{[0-9]+}}, backward {{[0-9]+}}-{{[0-9]+}}, optimizer {{[0-9]+}}-65{{$}}
// CHECK:      compiled 51 kernels for sm_90 with NVRTC

// GPT2:  launch attention_grad_{{[0-9]+}}_kv
// GPT2:  launch adamw_update_
// GPT2:  compiled {{[0-9]+}} kernels for sm_90 with NVRTC

// LLAMA: launch rms_norm_grad_{{[0-9]+}}_rows
// LLAMA: launch attention_grad_{{[0-9]+}}_kv
// The SwiGLU backward (silu_grad and its muls) is one fused kernel.
// LLAMA: launch mul_{{[0-9]+}} grid
// LLAMA: compiled {{[0-9]+}} kernels for sm_90 with NVRTC

// BERT:  launch layer_norm_grad_{{[0-9]+}}_rows
// BERT:  launch attention_grad_{{[0-9]+}}_kv
// BERT:  launch gather_grad_{{[0-9]+}}_sum
// BERT:  phases: forward 0-{{[0-9]+}}, backward {{[0-9]+}}-{{[0-9]+}}, optimizer {{[0-9]+}}-{{[0-9]+}}{{$}}
// BERT:  compiled {{[0-9]+}} kernels for sm_90 with NVRTC
