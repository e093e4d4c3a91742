// RUN: rm -rf %t && llmc codegen %models/gpt2-tiny.mlir --dump-cuda %t --compile | FileCheck %s
// RUN: ls %t | FileCheck %s --check-prefix=FILES
// RUN: FileCheck %s --check-prefix=TABLE < %t/launch-table.txt
// RUN: FileCheck %s --check-prefix=ATTN < %t/attention_6.cu

// The whole GPT-2 fixture: 11 kernels and 5 cuBLASLt calls, every kernel
// compiled by NVRTC for sm_90 (no GPU needed), one .cu per kernel. The four
// bias adds ride in their matmuls' bias epilogues (20 kernels before); the
// residual adds and the logits matmul (no bias) stay as they were; attention
// reads q, k, v as [B, T, H, D] (seq_major), so the four transposes around
// it are gone (16 kernels before), and as head windows of the packed qkv
// (qkv_heads: q, k, v 256 bytes apart in each token's row), so the split is
// gone too (12 kernels before).

// CHECK: # forward: {{[0-9]+}} buffers, {{[0-9]+}} bytes unplanned; 16 steps
// CHECK: step 0 launch gather_0
// CHECK: step 3 matmul matmul_3 m 32 n 192 k 64 batch 1 {{.*}} -> matmul_3.out0) bias arg5:h.0.attn.c_attn.bias
// CHECK-NEXT: step 4 launch attention_6 {{.*}} args (matmul_3.out0, matmul_3.out0+256, matmul_3.out0+512, attention_6.out0, attention_6.lse)
// CHECK-NEXT: step 5 matmul matmul_8 {{.*}} (attention_6.out0, arg6:h.0.attn.c_proj.weight -> matmul_8.out0) bias arg7:h.0.attn.c_proj.bias
// CHECK-NEXT: step 6 launch add_10 {{.*}} args (add_1.out0, matmul_8.out0, add_10.out0)
// CHECK: step 8 matmul matmul_12 {{.*}} bias arg11:h.0.mlp.c_fc.bias
// CHECK-NEXT: step 9 launch gelu_14 {{.*}} args (matmul_12.out0, gelu_14.out0)
// CHECK: step 10 matmul matmul_15 {{.*}} bias arg13:h.0.mlp.c_proj.bias
// CHECK: step 13 matmul matmul_19 {{.*}} (layer_norm_18.out0, arg0:wte -> matmul_19.out0){{$}}
// CHECK: step 15 launch cross_entropy_20_reduce
// CHECK: compiled 11 kernels for sm_90 with NVRTC

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
// TABLE: step 1 launch add_1 grid [8, 1, 1] block [256, 1, 1] smem 0 args (gather_0.out0, arg1:wpe, add_1.out0)

// ATTN:      // attention_6: llmc.attention at gpt2-tiny.mlir:{{[0-9]+}}:{{[0-9]+}}
// ATTN-NEXT: //   (f32[2, 16, 12, 16], f32[2, 16, 12, 16], f32[2, 16, 12, 16]) -> f32[2, 16, 4, 16]
// ATTN:      constexpr float kScale = 0.25f;
// ATTN:      extern "C" __global__ void __launch_bounds__(256)
