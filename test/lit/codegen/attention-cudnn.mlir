// RUN: llmc codegen %s --split-input-file --attention-backend cudnn | FileCheck %s
// RUN: llmc codegen %s --split-input-file | FileCheck %s --check-prefix=DEFAULT
// RUN: not llmc codegen %s --attention-backend fastest 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not llmc codegen %s --attention-backend 2>&1 | FileCheck %s --check-prefix=NOVALUE

// `--attention-backend cudnn` (docs/codegen.md "cuDNN attention"): the
// attention_lse and attention_grad ops cuDNN's fused engines take become
// cudnn attention steps, with each view's buffer, byte offset and
// [b, h, s, d] element strides; the others keep their generated kernels,
// and the report says why. `llmc codegen` shows the generated kernels
// unless asked (DEFAULT). The runtime's GPU tests check the steps' numbers
// (test/gpu/CudnnAttentionGpuTest.cpp).

// DEFAULT-NOT: cudnn attention
// BAD: llmc codegen: error: --attention-backend needs generated, cudnn or auto, got 'fastest'
// NOVALUE: llmc codegen: error: --attention-backend needs a value

// bf16, causal, dense [B, H, T, D]: both ops become cuDNN steps; lse is
// the forward's stats and the backward's input.
// CHECK-LABEL: # attention: cuDNN where it takes the op (--attention-backend cudnn): 2 of 2 ops
// CHECK:       cudnn attention forward attention_lse_0 bf16 [2, 4/4, 128x128, 64] causal ({{[^ ]+}} [32768, 8192, 64, 1], {{[^ ]+}} [32768, 8192, 64, 1], {{[^ ]+}} [32768, 8192, 64, 1] -> {{[^ ]+}} [32768, 8192, 64, 1], [[LSE:[^ )]+]])
// CHECK:       cudnn attention backward attention_grad_1 bf16 [2, 4/4, 128x128, 64] causal ({{.*}}, [[LSE]], {{[^ ]+}} [32768, 8192, 64, 1] -> {{[^ ]+}} [32768, 8192, 64, 1], {{[^ ]+}} [32768, 8192, 64, 1], {{[^ ]+}} [32768, 8192, 64, 1])
// CHECK-NOT:   launch

func.func @forward(%q: tensor<2x4x128x64xbf16>, %k: tensor<2x4x128x64xbf16>, %v: tensor<2x4x128x64xbf16>, %dy: tensor<2x4x128x64xbf16>) -> (tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>) {
  %o, %lse = llmc.attention_lse %q, %k, %v {causal} : (tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>) -> (tensor<2x4x128x64xbf16>, tensor<2x4x128xf32>)
  %dq, %dk, %dv = llmc.attention_grad %q, %k, %v, %o, %lse, %dy {causal} : (tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128xf32>, tensor<2x4x128x64xbf16>) -> (tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>)
  return %o, %dq, %dk, %dv : tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>
}

// -----

// GQA (8 query heads on 2 kv heads), f16, not causal, a given scale.
// CHECK-LABEL: # attention: cuDNN where it takes the op (--attention-backend cudnn): 2 of 2 ops
// CHECK:       cudnn attention forward attention_lse_0 f16 [1, 8/2, 64x96, 32] ({{[^ ]+}} [16384, 2048, 32, 1], {{[^ ]+}} [6144, 3072, 32, 1], {{[^ ]+}} [6144, 3072, 32, 1] ->
// CHECK:       cudnn attention backward attention_grad_1 f16 [1, 8/2, 64x96, 32] (

func.func @forward(%q: tensor<1x8x64x32xf16>, %k: tensor<1x2x96x32xf16>, %v: tensor<1x2x96x32xf16>, %dy: tensor<1x8x64x32xf16>) -> (tensor<1x8x64x32xf16>, tensor<1x8x64x32xf16>, tensor<1x2x96x32xf16>, tensor<1x2x96x32xf16>) {
  %o, %lse = llmc.attention_lse %q, %k, %v {scale = 0.25 : f64} : (tensor<1x8x64x32xf16>, tensor<1x2x96x32xf16>, tensor<1x2x96x32xf16>) -> (tensor<1x8x64x32xf16>, tensor<1x8x64xf32>)
  %dq, %dk, %dv = llmc.attention_grad %q, %k, %v, %o, %lse, %dy {scale = 0.25 : f64} : (tensor<1x8x64x32xf16>, tensor<1x2x96x32xf16>, tensor<1x2x96x32xf16>, tensor<1x8x64x32xf16>, tensor<1x8x64xf32>, tensor<1x8x64x32xf16>) -> (tensor<1x8x64x32xf16>, tensor<1x2x96x32xf16>, tensor<1x2x96x32xf16>)
  return %o, %dq, %dk, %dv : tensor<1x8x64x32xf16>, tensor<1x8x64x32xf16>, tensor<1x2x96x32xf16>, tensor<1x2x96x32xf16>
}

// -----

// The GPT block: after the strided and qkv-slice folds attention reads q, k
// and v as head windows of the packed qkv [B, T, 3C] (k 512 bytes in, v
// 1024) and writes one packed gradient the same way.
// CHECK-LABEL: # attention: cuDNN where it takes the op (--attention-backend cudnn): 2 of 2 ops
// CHECK:       cudnn attention forward attention_lse_{{[0-9]+}} bf16 [2, 4/4, 64x64, 64] causal ([[QKV:[^ +]+]] [49152, 64, 768, 1], [[QKV]]+512 [49152, 64, 768, 1], [[QKV]]+1024 [49152, 64, 768, 1] -> {{[^ ]+}} [16384, 64, 256, 1], {{[^ )]+}})
// CHECK:       cudnn attention backward attention_grad_{{[0-9]+}} bf16 [2, 4/4, 64x64, 64] causal ({{.*}} -> [[DQKV:[^ +]+]] [49152, 64, 768, 1], [[DQKV]]+512 [49152, 64, 768, 1], [[DQKV]]+1024 [49152, 64, 768, 1])

func.func @forward(%qkv: tensor<2x64x768xbf16>, %dy: tensor<2x64x256xbf16>) -> (tensor<2x64x256xbf16>, tensor<2x64x768xbf16>) {
  %q, %k, %v = llmc.split %qkv axis 2 sizes [256, 256, 256] : (tensor<2x64x768xbf16>) -> (tensor<2x64x256xbf16>, tensor<2x64x256xbf16>, tensor<2x64x256xbf16>)
  %q4 = llmc.reshape %q : tensor<2x64x256xbf16> -> tensor<2x64x4x64xbf16>
  %qt = llmc.transpose %q4 [0, 2, 1, 3] : (tensor<2x64x4x64xbf16>) -> tensor<2x4x64x64xbf16>
  %k4 = llmc.reshape %k : tensor<2x64x256xbf16> -> tensor<2x64x4x64xbf16>
  %kt = llmc.transpose %k4 [0, 2, 1, 3] : (tensor<2x64x4x64xbf16>) -> tensor<2x4x64x64xbf16>
  %v4 = llmc.reshape %v : tensor<2x64x256xbf16> -> tensor<2x64x4x64xbf16>
  %vt = llmc.transpose %v4 [0, 2, 1, 3] : (tensor<2x64x4x64xbf16>) -> tensor<2x4x64x64xbf16>
  %dy4 = llmc.reshape %dy : tensor<2x64x256xbf16> -> tensor<2x64x4x64xbf16>
  %dyt = llmc.transpose %dy4 [0, 2, 1, 3] : (tensor<2x64x4x64xbf16>) -> tensor<2x4x64x64xbf16>
  %o, %lse = llmc.attention_lse %qt, %kt, %vt {causal} : (tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16>) -> (tensor<2x4x64x64xbf16>, tensor<2x4x64xf32>)
  %ot = llmc.transpose %o [0, 2, 1, 3] : (tensor<2x4x64x64xbf16>) -> tensor<2x64x4x64xbf16>
  %y = llmc.reshape %ot : tensor<2x64x4x64xbf16> -> tensor<2x64x256xbf16>
  %dq, %dk, %dv = llmc.attention_grad %qt, %kt, %vt, %o, %lse, %dyt {causal} : (tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x4x64xf32>, tensor<2x4x64x64xbf16>) -> (tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16>)
  %dqt = llmc.transpose %dq [0, 2, 1, 3] : (tensor<2x4x64x64xbf16>) -> tensor<2x64x4x64xbf16>
  %dqr = llmc.reshape %dqt : tensor<2x64x4x64xbf16> -> tensor<2x64x256xbf16>
  %dkt = llmc.transpose %dk [0, 2, 1, 3] : (tensor<2x4x64x64xbf16>) -> tensor<2x64x4x64xbf16>
  %dkr = llmc.reshape %dkt : tensor<2x64x4x64xbf16> -> tensor<2x64x256xbf16>
  %dvt = llmc.transpose %dv [0, 2, 1, 3] : (tensor<2x4x64x64xbf16>) -> tensor<2x64x4x64xbf16>
  %dvr = llmc.reshape %dvt : tensor<2x64x4x64xbf16> -> tensor<2x64x256xbf16>
  %dqkv = llmc.concat %dqr, %dkr, %dvr axis 2 : (tensor<2x64x256xbf16>, tensor<2x64x256xbf16>, tensor<2x64x256xbf16>) -> tensor<2x64x768xbf16>
  return %y, %dqkv : tensor<2x64x256xbf16>, tensor<2x64x768xbf16>
}

// -----

// Negative: f32 attention stays on the generated kernels, and says why.
// CHECK-LABEL: # attention: cuDNN where it takes the op (--attention-backend cudnn): 0 of 2 ops
// CHECK-NEXT:  # attention:   2 attention op(s) keep the generated kernels: q, k and v are not all bf16 or all f16
// CHECK:       launch attention_lse_0
// CHECK-NOT:   cudnn attention

func.func @forward(%q: tensor<1x2x32x64xf32>, %k: tensor<1x2x32x64xf32>, %v: tensor<1x2x32x64xf32>, %dy: tensor<1x2x32x64xf32>) -> (tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>) {
  %o, %lse = llmc.attention_lse %q, %k, %v {causal} : (tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>) -> (tensor<1x2x32x64xf32>, tensor<1x2x32xf32>)
  %dq, %dk, %dv = llmc.attention_grad %q, %k, %v, %o, %lse, %dy {causal} : (tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32xf32>, tensor<1x2x32x64xf32>) -> (tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>)
  return %o, %dq, %dk, %dv : tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>
}

// -----

// Negative: a mask operand.
// CHECK-LABEL: # attention: cuDNN where it takes the op (--attention-backend cudnn): 0 of 2 ops
// CHECK-NEXT:  # attention:   2 attention op(s) keep the generated kernels: a mask operand (cuDNN's graphs here take causal only)
// CHECK-NOT:   cudnn attention

func.func @forward(%q: tensor<1x2x32x64xbf16>, %k: tensor<1x2x32x64xbf16>, %v: tensor<1x2x32x64xbf16>, %dy: tensor<1x2x32x64xbf16>, %m: tensor<1x1x32x32xi1>) -> (tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16>) {
  %o, %lse = llmc.attention_lse %q, %k, %v mask %m  : (tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16>, tensor<1x1x32x32xi1>) -> (tensor<1x2x32x64xbf16>, tensor<1x2x32xf32>)
  %dq, %dk, %dv = llmc.attention_grad %q, %k, %v, %o, %lse, %dy mask %m  : (tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16>, tensor<1x2x32xf32>, tensor<1x2x32x64xbf16>, tensor<1x1x32x32xi1>) -> (tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16>)
  return %o, %dq, %dk, %dv : tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16>
}

// -----

// Negative: a head dim cuDNN's fused engines do not take.
// CHECK-LABEL: # attention: cuDNN where it takes the op (--attention-backend cudnn): 0 of 2 ops
// CHECK-NEXT:  # attention:   2 attention op(s) keep the generated kernels: head dim 20 (cuDNN: a multiple of 8, at most 128)
// CHECK-NOT:   cudnn attention

func.func @forward(%q: tensor<1x2x32x20xbf16>, %k: tensor<1x2x32x20xbf16>, %v: tensor<1x2x32x20xbf16>, %dy: tensor<1x2x32x20xbf16>) -> (tensor<1x2x32x20xbf16>, tensor<1x2x32x20xbf16>, tensor<1x2x32x20xbf16>, tensor<1x2x32x20xbf16>) {
  %o, %lse = llmc.attention_lse %q, %k, %v {causal} : (tensor<1x2x32x20xbf16>, tensor<1x2x32x20xbf16>, tensor<1x2x32x20xbf16>) -> (tensor<1x2x32x20xbf16>, tensor<1x2x32xf32>)
  %dq, %dk, %dv = llmc.attention_grad %q, %k, %v, %o, %lse, %dy {causal} : (tensor<1x2x32x20xbf16>, tensor<1x2x32x20xbf16>, tensor<1x2x32x20xbf16>, tensor<1x2x32x20xbf16>, tensor<1x2x32xf32>, tensor<1x2x32x20xbf16>) -> (tensor<1x2x32x20xbf16>, tensor<1x2x32x20xbf16>, tensor<1x2x32x20xbf16>)
  return %o, %dq, %dk, %dv : tensor<1x2x32x20xbf16>, tensor<1x2x32x20xbf16>, tensor<1x2x32x20xbf16>, tensor<1x2x32x20xbf16>
}

// -----

// Negative: causal with different lengths (llmc's mask is aligned bottom
// right, cuDNN's graph top left).
// CHECK-LABEL: # attention: cuDNN where it takes the op (--attention-backend cudnn): 0 of 2 ops
// CHECK-NEXT:  # attention:   2 attention op(s) keep the generated kernels: causal with different query and key lengths
// CHECK-NOT:   cudnn attention

func.func @forward(%q: tensor<1x2x32x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>, %dy: tensor<1x2x32x64xbf16>) -> (tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>) {
  %o, %lse = llmc.attention_lse %q, %k, %v {causal} : (tensor<1x2x32x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>) -> (tensor<1x2x32x64xbf16>, tensor<1x2x32xf32>)
  %dq, %dk, %dv = llmc.attention_grad %q, %k, %v, %o, %lse, %dy {causal} : (tensor<1x2x32x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x32x64xbf16>, tensor<1x2x32xf32>, tensor<1x2x32x64xbf16>) -> (tensor<1x2x32x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>)
  return %o, %dq, %dk, %dv : tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>
}
