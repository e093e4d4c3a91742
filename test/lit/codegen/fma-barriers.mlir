// No FMA across the ops of a fused kernel (docs/fusion.md "No FMA across
// ops"): NVRTC and ptxas contract a plain multiply whose value feeds a plain
// add, and in a fused kernel the ops meet in registers, where the one-op
// kernels store and load. add/sub/mul are explicitly rounded (__fadd_rn,
// __fsub_rn, __fmul_rn: never contracted); a value that may end in a plain
// multiply (a library function's, a norm's f32 row result) is "open", and an
// op that could absorb it reads it sealed: __fmul_rn(v, 1.0f).
// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s
// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file --no-fuse=all 2>&1 >/dev/null | FileCheck %s --check-prefix=ONEOP
// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=NVRTC
// NVRTC-COUNT-5: compiled {{[0-9]+}} kernels for sm_90
// A norm gradient's epilogue row inputs loaded with x and dy
// (LLMC_NORM_GRAD_KERNEL=early, NormGradWarpKernel.cpp): the same code on
// the loaded values.
// RUN: env LLMC_DEBUG=4 LLMC_NORM_GRAD_KERNEL=early llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=EARLY

// An elementwise chain. The rounded ops read every value as it is; exp's
// value (open) goes to sub as it is, and through neg (which passes it on)
// to gelu sealed; gelu ends in __fmul_rn, so neither neg nor the next gelu
// needs a seal.
// CHECK-LABEL: // ===== mul_0.cu =====
// CHECK:         float s0;  // llmc.mul
// CHECK:           s0 = __fmul_rn(a, b);
// CHECK:         float s1;  // llmc.add
// CHECK-NEXT:    {
// CHECK-NEXT:      const float a = s0;
// CHECK-NEXT:      const float b = x2.v[e];
// CHECK-NEXT:      s1 = __fadd_rn(a, b);
// CHECK:         float s3;  // llmc.sub
// CHECK-NEXT:    {
// CHECK-NEXT:      const float a = s2;
// CHECK-NEXT:      const float b = x2.v[e];
// CHECK-NEXT:      s3 = __fsub_rn(a, b);
// CHECK:         float s6;  // llmc.gelu
// CHECK-NEXT:    {
// CHECK-NEXT:      const float a = __fmul_rn(s5, 1.0f);  // sealed: no FMA across the ops
// CHECK-NEXT:      s6 = __fmul_rn(0.5f * a, 1.0f + tanhf(0.7978845608f * (a + 0.044715f * a * a * a)));
// CHECK:         float s8;  // llmc.gelu
// CHECK-NEXT:    {
// CHECK-NEXT:      const float a = s7;
// CHECK-NEXT:      s8 = __fmul_rn(0.5f * a, 1.0f + tanhf(
// CHECK-NOT:     sealed
// CHECK:         y0.v[e] = s8;
// The one-op kernels compute the same expressions between a load and a
// store, where `__fadd_rn(a, b)` is `a + b`.
// ONEOP-LABEL: // ===== mul_0.cu =====
// ONEOP:         out[i] = __fmul_rn(a, b);
// ONEOP-LABEL: // ===== add_1.cu =====
// ONEOP:         out[i] = __fadd_rn(a, b);
// ONEOP-LABEL: // ===== exp_2.cu =====
// ONEOP:         out[i] = expf(a);
// ONEOP-LABEL: // ===== gelu_6.cu =====
// ONEOP:         out[i] = __fmul_rn(0.5f * a, 1.0f + tanhf(
// ONEOP-NOT:   sealed
func.func @forward(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = llmc.mul %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = llmc.add %0, %z : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = llmc.exp %1 : tensor<4x8xf32>
  %3 = llmc.sub %2, %z : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = llmc.exp %3 : tensor<4x8xf32>
  %5 = llmc.neg %4 : tensor<4x8xf32>
  %6 = llmc.gelu tanh %5 : tensor<4x8xf32>
  %7 = llmc.neg %6 : tensor<4x8xf32>
  %8 = llmc.gelu tanh %7 : tensor<4x8xf32>
  return %8 : tensor<4x8xf32>
}

// -----

// The bf16 residual-gradient epilogue of a layer norm gradient (the case
// that was not bitwise on the H100): dx, `rstd * (...)`, ends in a plain
// multiply and is open; the add reads it with __fadd_rn, which ptxas does
// not contract with it. No empty asm (ptxas sees through it).
// CHECK-LABEL: // ===== layer_norm_grad_1.cu =====
// CHECK:       epilogue [ llmc.add llmc.cast ] in the stores
// CHECK-NOT:   asm(
// CHECK:           x[4 * i + e] = p1.v[e];
// CHECK-NEXT:      dy[4 * i + e] = s0;
// CHECK:           float nr = rstd * (g - meanG - xhat * meanGX);
// CHECK-NEXT:      float s2;  // llmc.add
// CHECK-NEXT:      {
// CHECK-NEXT:        const float a = q3.v[e];
// CHECK-NEXT:        const float b = nr;
// CHECK-NEXT:        s2 = __fadd_rn(a, b);
// CHECK-NEXT:      }
// CHECK-NEXT:      __nv_bfloat16 s3;  // llmc.cast
// CHECK-NEXT:      {
// CHECK-NEXT:        const float a = s2;
// CHECK-NEXT:        s3 = __float2bfloat16((float)a);
// CHECK-NOT:   asm(
// CHECK:       tickets[kRuns] = 0;
// EARLY-LABEL: // ===== layer_norm_grad_1.cu =====
// EARLY:       for (index_t row = warp; row < kRows; row += kPartials) {
// EARLY-NEXT:    Vec<float, 4> q3s[kPerLane];
// EARLY-NEXT:  #pragma unroll
// EARLY-NEXT:    for (int i = 0; i < kPerLane; ++i) {
// EARLY-NEXT:      const int c = lane + 32 * i;
// EARLY-NEXT:      if (c < kChunks)
// EARLY-NEXT:        q3s[i] = reinterpret_cast<const Vec<float, 4> *>(in3 + row * kCols)[c];
// EARLY-NEXT:    }
// EARLY-NEXT:    float x[kPerLane * 4], dy[kPerLane * 4];
// EARLY:         const Vec<float, 4> q3 = q3s[i];
// EARLY:             const float a = q3.v[e];
// EARLY:       tickets[kRuns] = 0;
func.func @forward(%x: tensor<6x128xf32>, %dy: tensor<6x128xbf16>, %w: tensor<128xf32>, %dres: tensor<6x128xf32>) -> (tensor<6x128xf32>, tensor<6x128xbf16>, tensor<128xf32>) {
  %0 = llmc.cast %dy : tensor<6x128xbf16> -> tensor<6x128xf32>
  %1:2 = llmc.layer_norm_grad %x, %0 weight %w {axis = 1 : i64} : (tensor<6x128xf32>, tensor<6x128xf32>, tensor<128xf32>) -> (tensor<6x128xf32>, tensor<128xf32>)
  %2 = llmc.add %dres, %1#0 : (tensor<6x128xf32>, tensor<6x128xf32>) -> tensor<6x128xf32>
  %3 = llmc.cast %2 : tensor<6x128xf32> -> tensor<6x128xbf16>
  return %2, %3, %1#1 : tensor<6x128xf32>, tensor<6x128xbf16>, tensor<128xf32>
}

// -----

// An epilogue op that could absorb the open dx (gelu adds its operand to
// its cube) reads it sealed.
// CHECK-LABEL: // ===== rms_norm_grad_0.cu =====
// CHECK:           float nr = rstd * (g - meanG - xhat * meanGX);
// CHECK-NEXT:      float s1;  // llmc.gelu
// CHECK-NEXT:      {
// CHECK-NEXT:        const float a = __fmul_rn(nr, 1.0f);  // sealed: no FMA across the ops
func.func @forward(%x: tensor<6x128xf32>, %dy: tensor<6x128xf32>, %w: tensor<128xf32>) -> (tensor<6x128xf32>, tensor<128xf32>) {
  %0:2 = llmc.rms_norm_grad %x, %dy weight %w : (tensor<6x128xf32>, tensor<6x128xf32>, tensor<128xf32>) -> (tensor<6x128xf32>, tensor<128xf32>)
  %1 = llmc.gelu tanh %0#0 : tensor<6x128xf32>
  return %1, %0#1 : tensor<6x128xf32>, tensor<128xf32>
}

// -----

// Prologues: a residual add ends rounded, so the norm loads its value as
// it is; exp's value as the row operand is sealed (the norm adds it up).
// CHECK-LABEL: // ===== layer_norm_2.cu =====
// CHECK:       prologue [ llmc.exp llmc.add ] computed in the loads
// CHECK:             s1 = __fadd_rn(a, b);
// CHECK-NEXT:      }
// CHECK-NEXT:      x[i][e] = s1;
func.func @forward(%a: tensor<6x128xf32>, %h: tensor<6x128xf32>, %w: tensor<128xf32>) -> tensor<6x128xf32> {
  %0 = llmc.exp %h : tensor<6x128xf32>
  %1 = llmc.add %a, %0 : (tensor<6x128xf32>, tensor<6x128xf32>) -> tensor<6x128xf32>
  %2 = llmc.layer_norm %1 weight %w {axis = 1 : i64} : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6x128xf32>
  return %2 : tensor<6x128xf32>
}

// -----

// CHECK-LABEL: // ===== layer_norm_1.cu =====
// CHECK:       prologue [ llmc.exp ] computed in the loads
// CHECK:           x[i][e] = __fmul_rn(s0, 1.0f);
func.func @forward(%h: tensor<6x128xf32>, %w: tensor<128xf32>) -> tensor<6x128xf32> {
  %0 = llmc.exp %h : tensor<6x128xf32>
  %1 = llmc.layer_norm %0 weight %w {axis = 1 : i64} : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6x128xf32>
  return %1 : tensor<6x128xf32>
}
