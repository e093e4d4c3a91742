// Fused elementwise kernels (compiler/codegen/FusedEmitters.cpp), and a
// reduction that loads and stores through exact casts.
// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s
// RUN: llmc codegen %s --split-input-file | FileCheck %s --check-prefix=PLAN
// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=NVRTC

// A vertical chain (cast, add, a row-vector mul, a scalar mul, gelu, cast)
// and, across the constant, a horizontal second segment: one kernel. The
// [4, 8] segment moves 4 elements per thread: vector loads of the full
// inputs, the row vector at its column, the scalar once; the add's result
// is read outside (the return), so it is stored too.
// CHECK-LABEL: // ===== cast_1.cu =====
// CHECK:       //   fused elementwise group (llmc-fuse-elementwise): 2 segment(s)
// CHECK-NEXT:  //   segment [4, 8] V=4: llmc.cast at {{.*}}; llmc.add at {{.*}}; llmc.mul at {{.*}}; llmc.mul at {{.*}}; llmc.gelu at {{.*}}; llmc.cast at {{.*}};
// CHECK-NEXT:  //   segment [3] V=1: llmc.exp at {{.*}};
// CHECK:       constexpr index_t kItems = 11;
// CHECK:       cast_1(const __nv_bfloat16 *__restrict__ in0, const float *__restrict__ in1, const float *__restrict__ in2, const float *__restrict__ in3, const float *__restrict__ in4, float *__restrict__ out0, __nv_bfloat16 *__restrict__ out1, float *__restrict__ out2) {
// CHECK:       if (item < 8) {
// CHECK-NEXT:    const index_t i = (item - 0) * 4;
// CHECK-NEXT:    const index_t i_c1 = i % 8;
// CHECK-NEXT:    const Vec<__nv_bfloat16, 4> x0 = *reinterpret_cast<const Vec<__nv_bfloat16, 4> *>(in0 + i);
// CHECK-NEXT:    const Vec<float, 4> x1 = *reinterpret_cast<const Vec<float, 4> *>(in1 + i);
// CHECK-NEXT:    const Vec<float, 4> x2 = *reinterpret_cast<const Vec<float, 4> *>(in2 + i_c1);
// CHECK-NEXT:    const float x3 = in3[0];
// The intermediate bf16 rounding of the last cast is the one-op kernel's.
// CHECK:         s5 = __float2bfloat16((float)a);
// CHECK:         y0.v[e] = s1;
// CHECK-NEXT:    y1.v[e] = s5;
// CHECK:         *reinterpret_cast<Vec<float, 4> *>(out0 + i) = y0;
// CHECK-NEXT:    *reinterpret_cast<Vec<__nv_bfloat16, 4> *>(out1 + i) = y1;
// CHECK:       } else {
// CHECK-NEXT:    const index_t i = (item - 8);
// PLAN-LABEL:  # forward: 8 buffers
// PLAN:        step 0 launch cast_1 grid [1, 1, 1] block [256, 1, 1] smem 0 args (arg0, arg1, arg2, arg3, constant_0.out0, cast_1.out0, cast_1.out1, cast_1.out2)
// PLAN-NOT:    step 1
func.func @forward(%m: tensor<4x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<8xf32>, %s: tensor<f32>) -> (tensor<4x8xbf16>, tensor<4x8xf32>, tensor<3xf32>) {
  %0 = llmc.cast %m : tensor<4x8xbf16> -> tensor<4x8xf32>
  %1 = llmc.add %r, %0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = llmc.mul %1, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %3 = llmc.mul %2, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %4 = llmc.gelu tanh %3 : tensor<4x8xf32>
  %5 = llmc.cast %4 : tensor<4x8xf32> -> tensor<4x8xbf16>
  %c = llmc.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %6 = llmc.exp %c : tensor<3xf32>
  return %5, %1, %6 : tensor<4x8xbf16>, tensor<4x8xf32>, tensor<3xf32>
}

// -----

// A row of 6 does not hold whole vectors of 4: one element per thread.
// CHECK-LABEL: // ===== neg_0.cu =====
// CHECK:       //   segment [5, 6] V=1: llmc.neg at {{.*}}; llmc.exp at {{.*}};
// CHECK:       const index_t i = (item - 0);
// CHECK-NEXT:  const float x0 = in0[i];
func.func @forward(%x: tensor<5x6xf32>) -> tensor<5x6xf32> {
  %0 = llmc.neg %x : tensor<5x6xf32>
  %1 = llmc.exp %0 : tensor<5x6xf32>
  return %1 : tensor<5x6xf32>
}

// -----

// The cross-entropy gradient reads bf16 logits and writes bf16 gradients
// itself: the casts of its group are its load and store types.
// CHECK-LABEL: // ===== cross_entropy_grad_1.cu =====
// CHECK:       //   (bf16[4, 16], i64[4], f32[]) -> bf16[4, 16]
// PLAN-LABEL:  # forward:
// PLAN:        launch cross_entropy_grad_1{{.*}} args (arg0, arg1
// PLAN-NOT:    launch cast
func.func @forward(%logits: tensor<4x16xbf16>, %t: tensor<4xi64>, %d: tensor<f32>) -> tensor<4x16xbf16> {
  %0 = llmc.cast %logits : tensor<4x16xbf16> -> tensor<4x16xf32>
  %1 = llmc.cross_entropy_grad mean %0, %t, %d : (tensor<4x16xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x16xf32>
  %2 = llmc.cast %1 : tensor<4x16xf32> -> tensor<4x16xbf16>
  return %2 : tensor<4x16xbf16>
}

// -----

// RoPE under autocast: the rotary kernel loads the bf16 projection and
// stores bf16 itself; its f32 arithmetic is the one-op kernel's, with the
// widening in the load and one rounding in the store (the copied
// features too). No cast kernel is left.
// CHECK-LABEL: // ===== rotary_1.cu =====
// CHECK:       //   (bf16[2, 5, 4, 16], f32[5, 1, 8], f32[5, 1, 8]) -> bf16[2, 5, 4, 16]
// CHECK:       rotary_1(const __nv_bfloat16 *__restrict__ in, const float *__restrict__ cos_table, const float *__restrict__ sin_table, __nv_bfloat16 *__restrict__ out) {
// CHECK:         const Vec<__nv_bfloat16, kVec> xv = reinterpret_cast<const Vec<__nv_bfloat16, kVec> *>(in)[v];
// CHECK:           o.v[e] = __float2bfloat16(__bfloat162float(xv.v[e]));
// CHECK:         const float x = __bfloat162float(xv.v[e]);
// CHECK:         o.v[e] = __float2bfloat16(__fmaf_rn(x, c, __fmul_rn(p, s)));
// PLAN:        step 0 launch rotary_1{{.*}} args (arg0, arg1, arg2, rotary_1.out0)
// PLAN-NEXT:   phases: forward 0
func.func @forward(%q: tensor<2x5x4x16xbf16>, %c: tensor<5x1x8xf32>, %s: tensor<5x1x8xf32>) -> tensor<2x5x4x16xbf16> {
  %0 = llmc.cast %q : tensor<2x5x4x16xbf16> -> tensor<2x5x4x16xf32>
  %1 = llmc.rotary %0, %c, %s : (tensor<2x5x4x16xf32>, tensor<5x1x8xf32>, tensor<5x1x8xf32>) -> tensor<2x5x4x16xf32>
  %2 = llmc.cast %1 : tensor<2x5x4x16xf32> -> tensor<2x5x4x16xbf16>
  return %2 : tensor<2x5x4x16xbf16>
}

// -----

// Siblings: SwiGLU's two backward groups, joined because both read dy, are
// one segment: dy is loaded once per item (x0) and read by both muls.
// CHECK-LABEL: // ===== mul_1.cu =====
// CHECK:       //   fused elementwise group (llmc-fuse-elementwise): 1 segment(s)
// CHECK-NEXT:  //   segment [4, 16] V=8: llmc.mul at {{.*}}; llmc.mul at {{.*}}; llmc.silu_grad at {{.*}};
// CHECK:         const Vec<__nv_bfloat16, 8> x0 = *reinterpret_cast<const Vec<__nv_bfloat16, 8> *>(in0 + i);
// CHECK:           const float a = __bfloat162float(x0.v[e]);
// CHECK:           const float a = __bfloat162float(x0.v[e]);
// CHECK:         *reinterpret_cast<Vec<__nv_bfloat16, 8> *>(out1 + i) = y1;
// PLAN:        step 1 launch mul_1{{.*}} args (matmul_0.out0, arg3, arg2, arg1, mul_1.out0, mul_1.out1)
// PLAN-NEXT:   step 2 matmul matmul_4 {{.*}} (mul_1.out0, arg4 -> matmul_4.out0)
func.func @forward(%h: tensor<4x8xbf16>, %gate: tensor<4x16xbf16>, %up: tensor<4x16xbf16>, %s: tensor<4x16xbf16>, %w: tensor<16x8xbf16>, %wd: tensor<8x16xbf16>) -> (tensor<4x8xbf16>, tensor<4x16xbf16>) {
  %dy = llmc.matmul %h, %wd : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %0 = llmc.mul %dy, %s : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %1 = llmc.matmul %0, %w : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %2 = llmc.mul %dy, %up : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %3 = llmc.silu_grad %gate, %2 : tensor<4x16xbf16>
  return %1, %3 : tensor<4x8xbf16>, tensor<4x16xbf16>
}

// -----

// A bf16 rounding inside an all-f32 kernel (Qwen3's bf16 q/k norm rounds
// its normalized value before the weight, docs/precision.md): no operand or
// result of the kernel is bf16, yet the intermediate needs cuda_bf16.h. The
// NVRTC run (NVRTC-COUNT) compiles it; it failed with "__nv_bfloat16 is
// undefined" before the emitter registered intermediate types.
// CHECK-LABEL: // ===== cast_0.cu =====
// CHECK:       #include <cuda_bf16.h>
// CHECK:       cast_0(const float *__restrict__ in0, const float *__restrict__ in1, float *__restrict__ out0) {
// CHECK:         __nv_bfloat16 s0;  // llmc.cast
func.func @forward(%x: tensor<4x8xf32>, %w: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = llmc.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
  %1 = llmc.cast %0 : tensor<4x8xbf16> -> tensor<4x8xf32>
  %2 = llmc.mul %1, %w : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// NVRTC-COUNT-6: compiled {{[0-9]+}} kernels for sm_90
