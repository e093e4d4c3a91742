// The one-op emitter (elementwise fusion off), then the vector emitter a
// group of one lowers through by default.
// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file --no-fuse=elementwise 2>&1 >/dev/null | FileCheck %s
// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=VEC
// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=NVRTC

// Kernels index with 64-bit offsets when a tensor they touch can pass 2^31
// elements (grid-stride loops run up to gridDim * blockDim past the end, so
// the switch is 2^24 elements early), and with 32-bit ints when it provably
// cannot. GPT-2's logits pass 2^31 from batch 42 at T 1024.

// CHECK-LABEL: // ===== add_0.cu =====
// CHECK:       typedef int index_t;
// CHECK:       constexpr index_t kN = 2130706431;
// VEC-LABEL:   // ===== add_0.cu =====
// VEC:         typedef int index_t;
// VEC:         constexpr index_t kItems = 2130706431;
// NVRTC: compiled 1 kernels for sm_90
func.func @forward(%a: tensor<2130706431xf32>) -> tensor<2130706431xf32> {
  %0 = llmc.add %a, %a : (tensor<2130706431xf32>, tensor<2130706431xf32>) -> tensor<2130706431xf32>
  return %0 : tensor<2130706431xf32>
}

// -----

// CHECK-LABEL: // ===== add_0.cu =====
// CHECK:       typedef long long index_t;
// CHECK:       constexpr index_t kN = 2130706432;
// VEC-LABEL:   // ===== add_0.cu =====
// VEC:         typedef long long index_t;
// VEC:         constexpr index_t kItems = 532676608;
// NVRTC: compiled 1 kernels for sm_90
func.func @forward(%a: tensor<2130706432xf32>) -> tensor<2130706432xf32> {
  %0 = llmc.add %a, %a : (tensor<2130706432xf32>, tensor<2130706432xf32>) -> tensor<2130706432xf32>
  return %0 : tensor<2130706432xf32>
}

// -----

// Cross-entropy over GPT-2's [B*T, V] logits at batch 48, T 1024: 2.47e9
// elements. The row offset `row * kCols` is computed in index_t.
// CHECK-LABEL: // ===== cross_entropy_0_rows.cu =====
// CHECK:       typedef long long index_t;
// CHECK:       for (index_t row = blockIdx.x; row < kRows; row += gridDim.x) {
// CHECK:       const InVec *x = reinterpret_cast<const InVec *>(logits + row * kCols);
// CHECK-LABEL: // ===== cross_entropy_0_reduce.cu =====
// CHECK:       typedef long long index_t;
// NVRTC: compiled 2 kernels for sm_90
func.func @forward(%logits: tensor<48x1024x50304xbf16>, %t: tensor<48x1024xi64>) -> tensor<bf16> {
  %0 = llmc.cross_entropy mean %logits, %t : (tensor<48x1024x50304xbf16>, tensor<48x1024xi64>) -> tensor<bf16>
  return %0 : tensor<bf16>
}

// -----

// The same at batch 16: 8.2e8 elements, 32-bit indexing.
// CHECK-LABEL: // ===== cross_entropy_0_rows.cu =====
// CHECK:       typedef int index_t;
// NVRTC: compiled 2 kernels for sm_90
func.func @forward(%logits: tensor<16x1024x50304xbf16>, %t: tensor<16x1024xi64>) -> tensor<bf16> {
  %0 = llmc.cross_entropy mean %logits, %t : (tensor<16x1024x50304xbf16>, tensor<16x1024xi64>) -> tensor<bf16>
  return %0 : tensor<bf16>
}

// -----

// A row reduction over the large logits.
// CHECK-LABEL: // ===== reduce_max_0.cu =====
// CHECK:       typedef long long index_t;
// NVRTC: compiled 1 kernels for sm_90
func.func @forward(%x: tensor<49152x50304xf32>) -> tensor<49152xf32> {
  %0 = llmc.reduce_max %x axes [1] : (tensor<49152x50304xf32>) -> tensor<49152xf32>
  return %0 : tensor<49152xf32>
}
