// RUN: rm -rf %t && llmc codegen %models/gpt2-tiny.mlir --dump-cuda %t --compile | FileCheck %s
// RUN: ls %t | FileCheck %s --check-prefix=FILES
// RUN: FileCheck %s --check-prefix=TABLE < %t/launch-table.txt
// RUN: FileCheck %s --check-prefix=ATTN < %t/attention_12.cu

// The whole GPT-2 fixture: 16 kernels and 5 cuBLASLt calls, every kernel
// compiled by NVRTC for sm_90 (no GPU needed), one .cu per kernel. The four
// bias adds ride in their matmuls' bias epilogues (20 kernels before); the
// residual adds and the logits matmul (no bias) stay as they were.

// CHECK: # forward: {{[0-9]+}} buffers, {{[0-9]+}} bytes unplanned; 21 steps
// CHECK: step 0 launch gather_0
// CHECK: step 3 matmul matmul_3 m 32 n 192 k 64 batch 1 {{.*}} -> matmul_3.out0) bias arg5:h.0.attn.c_attn.bias
// CHECK: step 10 matmul matmul_15 {{.*}} -> matmul_15.out0) bias arg7:h.0.attn.c_proj.bias
// CHECK-NEXT: step 11 launch add_17 {{.*}} args (add_1.out0, matmul_15.out0, add_17.out0)
// CHECK: step 13 matmul matmul_19 {{.*}} bias arg11:h.0.mlp.c_fc.bias
// CHECK-NEXT: step 14 launch gelu_21 {{.*}} args (matmul_19.out0, gelu_21.out0)
// CHECK: step 15 matmul matmul_22 {{.*}} bias arg13:h.0.mlp.c_proj.bias
// CHECK: step 18 matmul matmul_26 {{.*}} (layer_norm_25.out0, arg0:wte -> matmul_26.out0){{$}}
// CHECK: step 20 launch cross_entropy_27_reduce
// CHECK: compiled 16 kernels for sm_90 with NVRTC

// FILES: add_1.cu
// FILES: attention_12.cu
// FILES: cross_entropy_27_reduce.cu
// FILES: cross_entropy_27_rows.cu
// FILES: gather_0.cu
// FILES: gelu_21.cu
// FILES: launch-table.txt
// FILES: layer_norm_2.cu
// FILES: split_5.cu
// FILES: transpose_9.cu

// TABLE: buffer arg0:wte param f32[512, 64] offset 0
// TABLE: buffer arg16:idx input i64[2, 16]
// TABLE: step 1 launch add_1 grid [8, 1, 1] block [256, 1, 1] smem 0 args (gather_0.out0, arg1:wpe, add_1.out0)

// ATTN:      // attention_12: llmc.attention at gpt2-tiny.mlir:{{[0-9]+}}:{{[0-9]+}}
// ATTN-NEXT: //   (f32[2, 4, 16, 16], f32[2, 4, 16, 16], f32[2, 4, 16, 16]) -> f32[2, 4, 16, 16]
// ATTN:      constexpr float kScale = 0.25f;
// ATTN:      extern "C" __global__ void __launch_bounds__(256)
