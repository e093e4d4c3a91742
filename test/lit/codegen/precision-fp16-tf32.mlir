// `--precision fp16` and `tf32` through the whole pipeline and the code
// generator; every kernel compiles with NVRTC (no GPU needed).
// RUN: rm -rf %t && mkdir -p %t
// RUN: llmc-opt %models/gpt2-tiny.mlir --llmc-pipeline=precision=fp16 -o %t/fp16.mlir
// RUN: FileCheck %s --check-prefix=FP16-IR < %t/fp16.mlir
// RUN: llmc codegen %t/fp16.mlir --dump-cuda %t/fp16-cuda --compile --arch sm_90 | FileCheck %s --check-prefix=FP16
// RUN: cat %t/fp16-cuda/*.cu | FileCheck %s --check-prefix=FP16-CUDA
// RUN: cat %t/fp16-cuda/attention*.cu | FileCheck %s --check-prefix=FP16-ATTN
// RUN: llmc-opt %models/gpt2-tiny.mlir --llmc-pipeline=precision=tf32 -o %t/tf32.mlir
// RUN: llmc codegen %t/tf32.mlir --compile --arch sm_90 > %t/tf32.plan
// RUN: FileCheck %s --check-prefix=TF32 < %t/tf32.plan
// RUN: awk '/ matmul / && !/ tf32$/' %t/tf32.plan | FileCheck %s --check-prefix=ALLTF32 --allow-empty
// RUN: llmc-opt %models/gpt2-tiny.mlir --llmc-pipeline -o %t/fp32.mlir
// RUN: llmc codegen %t/fp32.mlir | FileCheck %s --check-prefix=FP32

// fp16: the state of the scaler is in the plan (checkpointed with the
// moments), the linear layers are f16 cuBLASLt calls, and the kernels read
// and write __half.
// FP16-IR-DAG: tensor<f32> {llmc.init = dense<6.553600e+04> : tensor<f32>, llmc.state = "amp.scale"}
// FP16-IR-DAG: tensor<i64> {llmc.init_rule = "zeros", llmc.state = "amp.growth_tracker"}
// FP16-IR-DAG: tensor<i64> {llmc.init_rule = "zeros", llmc.state = "amp.skipped"}
// FP16-IR-DAG: llmc.global_norm
// FP16: buffer matmul_{{[0-9]+}}.out0 scratch f16[2, 16, 192]
// FP16: step {{[0-9]+}} matmul
// FP16-NOT: tf32
// FP16: compiled {{[0-9]+}} kernels
// FP16-CUDA: __half
// Attention forward and backward on f16 tensor cores (head dim 16).
// FP16-ATTN: tensor cores (f16 mma.sync m16n8k16)
// FP16-ATTN: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// FP16-ATTN-NOT: 3xTF32

// tf32: every matmul of the step, forward and backward, in TF32; fp32 none.
// TF32: matmul {{.*}} tf32
// TF32: compiled {{[0-9]+}} kernels
// ALLTF32-NOT: matmul
// FP32: matmul
// FP32-NOT: tf32
