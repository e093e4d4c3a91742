// RUN: rm -rf %t && llmc codegen %models/gpt2-tiny.mlir --dump-cuda %t --compile | FileCheck %s
// RUN: ls %t | FileCheck %s --check-prefix=FILES
// RUN: FileCheck %s --check-prefix=TABLE < %t/launch-table.txt
// RUN: FileCheck %s --check-prefix=ATTN < %t/attention_6.cu

// The whole GPT-2 fixture: 9 kernels and 5 cuBLASLt calls, every kernel
// compiled by NVRTC for sm_90 (no GPU needed), one .cu per kernel. The four
// bias adds ride in their matmuls' bias epilogues (20 kernels before); the
// residual adds ride in the loads of the layer norms that read them (norm
// prologues: 12 kernels before) and the logits matmul (no bias) stays; attention
// reads q, k, v as [B, T, H, D] straight from the split (seq_major), so the
// four transposes around it are gone (16 kernels before), and it reads them
// out of the c_attn output, so the split is gone too (10 before).

// CHECK: # forward: {{[0-9]+}} buffers, {{[0-9]+}} bytes unplanned; 14 steps
// CHECK: step 0 launch gather_0
// CHECK: step 3 matmul matmul_3 m 32 n 192 k 64 batch 1 {{.*}} -> matmul_3.out0) bias arg5:h.0.attn.c_attn.bias
// Attention reads q, k, v out of the packed c_attn output (qkv_heads): no split.
// CHECK-NEXT: step 4 launch attention_6 {{.*}} args (matmul_3.out0, matmul_3.out0+256, matmul_3.out0+512, attention_6.out0, attention_6.lse)
// CHECK-NEXT: step 5 matmul matmul_8 {{.*}} (attention_6.out0, arg6:h.0.attn.c_proj.weight -> matmul_8.out0) bias arg7:h.0.attn.c_proj.bias
// CHECK-NEXT: step 6 launch layer_norm_11 {{.*}} args (add_1.out0, matmul_8.out0, arg8:h.0.ln_2.weight, arg9:h.0.ln_2.bias, layer_norm_11.out0, layer_norm_11.out1)
// CHECK: step 7 matmul matmul_12 {{.*}} bias arg11:h.0.mlp.c_fc.bias
// CHECK-NEXT: step 8 launch gelu_14 {{.*}} args (matmul_12.out0, gelu_14.out0)
// CHECK: step 9 matmul matmul_15 {{.*}} bias arg13:h.0.mlp.c_proj.bias
// CHECK: step 11 matmul matmul_19 {{.*}} (layer_norm_18.out0, arg0:wte -> matmul_19.out0){{$}}
// CHECK: step 13 launch cross_entropy_20_reduce
// A forward function (no autodiff, no optimizer) is forward throughout.
// CHECK-NEXT: phases: forward 0-13{{$}}
// CHECK: compiled 9 kernels for sm_90 with NVRTC

// FILES: add_1.cu
// FILES: attention_6.cu
// FILES: cross_entropy_20_reduce.cu
// FILES: cross_entropy_20_rows.cu
// FILES: gather_0.cu
// FILES: gelu_14.cu
// FILES: launch-table.txt
// FILES: layer_norm_2.cu
// FILES-NOT: split
// FILES-NOT: transpose

// TABLE: buffer arg0:wte param f32[512, 64] offset 0
// TABLE: buffer arg16:idx input i64[2, 16]
// One add alone is a group of one, lowered with 16-byte vectors: 4 f32 a
// thread, 512 items, 2 blocks.
// TABLE: step 1 launch add_1 grid [2, 1, 1] block [256, 1, 1] smem 0 args (gather_0.out0, arg1:wpe, add_1.out0)

// ATTN:      // attention_6: llmc.attention at gpt2-tiny.mlir:{{[0-9]+}}:{{[0-9]+}}
// ATTN-NEXT: //   (f32[2, 16, 12, 16], f32[2, 16, 12, 16], f32[2, 16, 12, 16]) -> f32[2, 16, 4, 16]
// ATTN:      constexpr float kScale = 0.25f;
// ATTN:      extern "C" __global__ void __launch_bounds__(256)
