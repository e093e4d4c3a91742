// RUN: rm -rf %t && llmc codegen %models/gpt2-tiny.mlir --dump-cuda %t --compile | FileCheck %s
// RUN: ls %t | FileCheck %s --check-prefix=FILES
// RUN: FileCheck %s --check-prefix=TABLE < %t/launch-table.txt
// RUN: FileCheck %s --check-prefix=ATTN < %t/attention_9.cu

// The whole GPT-2 fixture: 10 kernels and 5 cuBLASLt calls, every kernel
// compiled by NVRTC for sm_90 (no GPU needed), one .cu per kernel. The four
// bias adds ride in their matmuls' bias epilogues (20 kernels before); the
// residual adds ride in the loads of the layer norms that read them (norm
// prologues: 12 kernels before) and the logits matmul (no bias) stays; attention
// reads q, k, v as [B, T, H, D] straight from the split (seq_major), so the
// four transposes around it are gone (16 kernels before).

// CHECK: # forward: {{[0-9]+}} buffers, {{[0-9]+}} bytes unplanned; 15 steps
// CHECK: step 0 launch gather_0
// CHECK: step 3 matmul matmul_3 m 32 n 192 k 64 batch 1 {{.*}} -> matmul_3.out0) bias arg5:h.0.attn.c_attn.bias
// CHECK-NEXT: step 4 launch split_5
// CHECK-NEXT: step 5 launch attention_9 {{.*}} args (split_5.out0, split_5.out1, split_5.out2, attention_9.out0, attention_9.lse)
// CHECK-NEXT: step 6 matmul matmul_11 {{.*}} (attention_9.out0, arg6:h.0.attn.c_proj.weight -> matmul_11.out0) bias arg7:h.0.attn.c_proj.bias
// CHECK-NEXT: step 7 launch layer_norm_14 {{.*}} args (add_1.out0, matmul_11.out0, arg8:h.0.ln_2.weight, arg9:h.0.ln_2.bias, layer_norm_14.out0, layer_norm_14.out1)
// CHECK: step 8 matmul matmul_15 {{.*}} bias arg11:h.0.mlp.c_fc.bias
// CHECK-NEXT: step 9 launch gelu_17 {{.*}} args (matmul_15.out0, gelu_17.out0)
// CHECK: step 10 matmul matmul_18 {{.*}} bias arg13:h.0.mlp.c_proj.bias
// CHECK: step 12 matmul matmul_22 {{.*}} (layer_norm_21.out0, arg0:wte -> matmul_22.out0){{$}}
// CHECK: step 14 launch cross_entropy_23_reduce
// A forward function (no autodiff, no optimizer) is forward throughout.
// CHECK-NEXT: phases: forward 0-14{{$}}
// CHECK: compiled 10 kernels for sm_90 with NVRTC

// FILES: add_1.cu
// FILES: attention_9.cu
// FILES: cross_entropy_23_reduce.cu
// FILES: cross_entropy_23_rows.cu
// FILES: gather_0.cu
// FILES: gelu_17.cu
// FILES: launch-table.txt
// FILES: layer_norm_2.cu
// FILES: split_5.cu
// FILES-NOT: transpose

// TABLE: buffer arg0:wte param f32[512, 64] offset 0
// TABLE: buffer arg16:idx input i64[2, 16]
// One add alone is a group of one, lowered with 16-byte vectors: 4 f32 a
// thread, 512 items, 2 blocks.
// TABLE: step 1 launch add_1 grid [2, 1, 1] block [256, 1, 1] smem 0 args (gather_0.out0, arg1:wpe, add_1.out0)

// ATTN:      // attention_9: llmc.attention at gpt2-tiny.mlir:{{[0-9]+}}:{{[0-9]+}}
// ATTN-NEXT: //   (f32[2, 16, 4, 16], f32[2, 16, 4, 16], f32[2, 16, 4, 16]) -> f32[2, 16, 4, 16]
// ATTN:      constexpr float kScale = 0.25f;
// ATTN:      extern "C" __global__ void __launch_bounds__(256)
