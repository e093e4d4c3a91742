// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s
// RUN: env LLMC_DEBUG=4 LLMC_ROTARY_SCALAR=1 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=SCALAR
// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=NVRTC
// NVRTC-COUNT-5: compiled 1 kernels for sm_90

// The rotary kernel (AttentionEmitters.cpp): a vector of 16 bytes per
// thread of the wider of the input and result types (or the largest power
// of two under it), when every vector lies in one region of a row; each element computed with one explicit FMA, as
// the one-element kernel does (LLMC_ROTARY_SCALAR=1), so the two are
// bitwise equal (test/gpu/codegen/RotaryGpuTest.cpp).

// Llama's RoPE under autocast, the casts in the load and store: vectors of
// 8 bf16, the rotate-half partner the vector R/2 further (or back) in the
// row, the f32 tables loaded as vectors at the first element's offset.
// CHECK-LABEL: // ===== rotary_1.cu =====
// CHECK:       //   rotary (rotate-half): a vector of 8 elements per thread (the partner half another vector of the row)
// CHECK:       constexpr index_t kVec = 8;  // elements per thread
// CHECK:       static_assert(kVec == 1 || (kD % kVec == 0 && (kR / 2) % kVec == 0), "a vector lies in one region of a row");
// CHECK:       for (index_t v = (index_t)blockIdx.x * blockDim.x + threadIdx.x; v < kN / kVec;
// CHECK:       const Vec<__nv_bfloat16, kVec> xv = reinterpret_cast<const Vec<__nv_bfloat16, kVec> *>(in)[v];
// CHECK:       if (d >= kR) {
// CHECK:       const bool first = d < kR / 2;
// CHECK-NEXT:  const Vec<__nv_bfloat16, kVec> pv = reinterpret_cast<const Vec<__nv_bfloat16, kVec> *>(in)[(first ? i + kR / 2 : i - kR / 2) / kVec];
// CHECK:       const Vec<float, kVec> cv = *reinterpret_cast<const Vec<float, kVec> *>(cos_table + co);
// CHECK:       const float p = (first ? -__bfloat162float(pv.v[e]) : __bfloat162float(pv.v[e]));
// CHECK-NEXT:  o.v[e] = __float2bfloat16(__fmaf_rn(x, c, __fmul_rn(p, s)));
// CHECK:       reinterpret_cast<Vec<__nv_bfloat16, kVec> *>(out)[v] = o;
// SCALAR-LABEL: // ===== rotary_1.cu =====
// SCALAR:       one thread per element
// SCALAR:       constexpr index_t kVec = 1;
// SCALAR:       const float p = (d < kR / 2 ? -__bfloat162float(in[i + kR / 2]) : __bfloat162float(in[i - kR / 2]));
// SCALAR-NEXT:  out[i] = __float2bfloat16(__fmaf_rn(x, c, __fmul_rn(p, s)));
func.func @forward(%q: tensor<2x17x4x64xbf16>, %c: tensor<17x1x64xf32>, %s: tensor<17x1x64xf32>) -> tensor<2x17x4x64xbf16> {
  %0 = llmc.cast %q : tensor<2x17x4x64xbf16> -> tensor<2x17x4x64xf32>
  %1 = llmc.rotary %0, %c, %s : (tensor<2x17x4x64xf32>, tensor<17x1x64xf32>, tensor<17x1x64xf32>) -> tensor<2x17x4x64xf32>
  %2 = llmc.cast %1 : tensor<2x17x4x64xf32> -> tensor<2x17x4x64xbf16>
  return %2 : tensor<2x17x4x64xbf16>
}

// -----

// f32, partial rotary (R 32 of D 96): vectors of 4; the copied features
// are whole vectors.
// CHECK-LABEL: // ===== rotary_0.cu =====
// CHECK:       constexpr index_t kVec = 4;
// CHECK:       o.v[e] = xv.v[e];
func.func @forward(%q: tensor<3x2x13x96xf32>, %c: tensor<13x32xf32>, %s: tensor<13x32xf32>) -> tensor<3x2x13x96xf32> {
  %0 = llmc.rotary %q, %c, %s : (tensor<3x2x13x96xf32>, tensor<13x32xf32>, tensor<13x32xf32>) -> tensor<3x2x13x96xf32>
  return %0 : tensor<3x2x13x96xf32>
}

// -----

// Interleaved pairs (GPT-J) in f16 with f32 tables: the partner is inside
// the vector (element e ^ 1), negated at even features.
// CHECK-LABEL: // ===== rotary_1.cu =====
// CHECK:       rotary (interleaved pairs 2j, 2j+1): a vector of 8 elements per thread
// CHECK-NOT:   pv
// CHECK:       const float p = (e % 2 == 0 ? -__half2float(xv.v[e ^ 1]) : __half2float(xv.v[e ^ 1]));
func.func @forward(%q: tensor<3x2x9x16xf16>, %c: tensor<9x16xf32>, %s: tensor<9x16xf32>) -> tensor<3x2x9x16xf16> {
  %0 = llmc.cast %q : tensor<3x2x9x16xf16> -> tensor<3x2x9x16xf32>
  %1 = llmc.rotary %0, %c, %s {interleaved} : (tensor<3x2x9x16xf32>, tensor<9x16xf32>, tensor<9x16xf32>) -> tensor<3x2x9x16xf32>
  %2 = llmc.cast %1 : tensor<3x2x9x16xf32> -> tensor<3x2x9x16xf16>
  return %2 : tensor<3x2x9x16xf16>
}

// -----

// R/2 = 6 features: no 4-element vector fits, 2 do.
// CHECK-LABEL: // ===== rotary_0.cu =====
// CHECK:       a vector of 2 elements per thread
// CHECK:       constexpr index_t kVec = 2;
func.func @forward(%q: tensor<2x7x20xf32>, %c: tensor<7x12xf32>, %s: tensor<7x12xf32>) -> tensor<2x7x20xf32> {
  %0 = llmc.rotary %q, %c, %s : (tensor<2x7x20xf32>, tensor<7x12xf32>, tensor<7x12xf32>) -> tensor<2x7x20xf32>
  return %0 : tensor<2x7x20xf32>
}

// -----

// Negative: R/2 = 3 features is no multiple of a vector: one element per
// thread.
// CHECK-LABEL: // ===== rotary_0.cu =====
// CHECK:       one thread per element
// CHECK:       constexpr index_t kVec = 1;
// CHECK:       for (index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x; i < kN / kVec;
// CHECK:       out[i] = __fmaf_rn(x, c, __fmul_rn(p, s));
func.func @forward(%q: tensor<2x7x20xf32>, %c: tensor<7x6xf32>, %s: tensor<7x6xf32>) -> tensor<2x7x20xf32> {
  %0 = llmc.rotary %q, %c, %s : (tensor<2x7x20xf32>, tensor<7x6xf32>, tensor<7x6xf32>) -> tensor<2x7x20xf32>
  return %0 : tensor<2x7x20xf32>
}
