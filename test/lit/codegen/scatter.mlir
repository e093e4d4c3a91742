// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s
// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=NVRTC

// The adjoints of data movement, deterministic without float atomics.
// gather_grad (the embedding backward) sorts the positions into per-row
// buckets on the device (integer atomics only), then one thread per table
// element adds its bucket's grad rows in position order. Four launches: the
// count kernel's last block scans the counts and puts them back to zero
// (persistent counts and ticket), so there is no zeroing or scan launch.

// CHECK-LABEL: // ===== gather_grad_0_count.cu =====
// CHECK:       // gather_grad_0_count: llmc.gather_grad "/transformer/wte/Gather"
// CHECK-NEXT:  //   (f32[16, 1024, 768], i64[16, 1024]) -> f32[50257, 768]
// CHECK:       constexpr index_t kDim = 50257;  // rows of the result along axis 0
// CHECK-NEXT:  constexpr index_t kIndices = 16384;  // indices
// CHECK:       constexpr index_t kBlocks = 16;  // blocks of this launch
// CHECK:       if (k < 0 || k >= kDim)
// CHECK:       atomicAdd(&counts[k], 1);
// CHECK:       last = atomicAdd(&tickets[0], 1u) == (unsigned int)(kBlocks - 1);
// CHECK:       const int local = v < kDim ? __ldcg(&counts[v]) : 0;
// CHECK:       offsets[v] = before;
// CHECK-NEXT:  cursor[v] = before;
// CHECK-NEXT:  counts[v] = 0;
// CHECK:       offsets[kDim] = carry;
// CHECK-NEXT:  tickets[0] = 0;
// CHECK-LABEL: // ===== gather_grad_0_place.cu =====
// CHECK:       list[atomicAdd(&cursor[k], 1)] = (int)i;
// CHECK-LABEL: // ===== gather_grad_0_rank.cu =====
// CHECK:       const int begin = offsets[k], end = offsets[k + 1];
// CHECK:       rank += list[e] < (int)i;
// CHECK:       sorted[begin + rank] = (int)i;
// CHECK-LABEL: // ===== gather_grad_0_sum.cu =====
// CHECK:       constexpr index_t kN = 38597376;  // elements of the result [50257, 768]
// CHECK:       gather_grad_0_sum(const float *__restrict__ grad, const int *__restrict__ offsets, const int *__restrict__ sorted, float *__restrict__ out)
// CHECK:       const int begin = offsets[v], end = offsets[v + 1];
// CHECK:       s += grad[(o * kIndices + sorted[e]) * kInner + c];
// NVRTC:       buffer gather_grad_0.counts scratch i32[50257]
// NVRTC:       buffer gather_grad_0.offsets scratch i32[50258]
// NVRTC:       buffer gather_grad_0.sorted scratch i32[16384]
// NVRTC:       buffer gather_grad_0.tickets scratch i32[1]
// NVRTC:       step 0 launch gather_grad_0_count grid [16, 1, 1] block [1024, 1, 1] smem 0 args (arg1, gather_grad_0.counts, gather_grad_0.offsets, gather_grad_0.cursor, gather_grad_0.tickets)
// NVRTC-NEXT:  step 1 launch gather_grad_0_place grid [64, 1, 1] block [256, 1, 1] smem 0 args (arg1, gather_grad_0.cursor, gather_grad_0.list)
// NVRTC-NEXT:  step 2 launch gather_grad_0_rank grid [64, 1, 1] block [256, 1, 1] smem 0 args (arg1, gather_grad_0.offsets, gather_grad_0.list, gather_grad_0.sorted)
// NVRTC-NEXT:  step 3 launch gather_grad_0_sum grid [2112, 1, 1] block [256, 1, 1] smem 0 args (arg0, gather_grad_0.offsets, gather_grad_0.sorted, gather_grad_0.out0)
// NVRTC:       compiled 4 kernels for sm_90
func.func @forward(%dy: tensor<16x1024x768xf32>, %idx: tensor<16x1024xi64>) -> tensor<50257x768xf32> {
  %0 = llmc.gather_grad %dy, %idx axis 0 : (tensor<16x1024x768xf32>, tensor<16x1024xi64>) -> tensor<50257x768xf32> loc("/transformer/wte/Gather")
  return %0 : tensor<50257x768xf32>
}

// -----

// gather_grad along a middle axis of bf16: [outer, V, inner] with outer 6.
// CHECK-LABEL: // ===== gather_grad_0_sum.cu =====
// CHECK:       constexpr index_t kInner = 1;  // elements after the axis
// CHECK:       const index_t o = i / (kInner * kDim);
// CHECK:       s += __bfloat162float(grad[(o * kIndices + sorted[e]) * kInner + c]);
// CHECK:       out[i] = __float2bfloat16(s);
// NVRTC:       compiled 4 kernels for sm_90
func.func @forward(%dy: tensor<6x3x4xbf16>, %idx: tensor<3x4xi32>) -> tensor<6x11xbf16> {
  %0 = llmc.gather_grad %dy, %idx axis 1 : (tensor<6x3x4xbf16>, tensor<3x4xi32>) -> tensor<6x11xbf16>
  return %0 : tensor<6x11xbf16>
}

// -----

// gather_elements_grad scans the indices along the axis for each result
// element; elements beyond the indices' extent in another dim are 0.
// CHECK-LABEL: // ===== gather_elements_grad_0.cu =====
// CHECK:       constexpr index_t kScan = 2;  // grad/indices size along the axis
// CHECK-NEXT:  constexpr index_t kAxisStride = 5;  // grad/indices stride of the axis
// CHECK:       if (i_c1 >= 3) {
// CHECK:       const index_t base = i_c0 * 30 + i_c1 * 10 + i_c3 * 1;
// CHECK:       if (k == i_c2)
// CHECK-NEXT:  s += grad[base + j * kAxisStride];
// CHECK-LABEL: // ===== slice_grad_1.cu =====
// CHECK:       //   slice_grad: one thread per result element; grad at its place in the window [start + c * step], 0 elsewhere
// CHECK:       const index_t r1 = (i_c1 - 1);
// CHECK-NEXT:  if (i_c1 < 1)
// CHECK:       if (i_c3 < 1 || (i_c3 - 1) % 2 != 0 || r3 >= 2)
// CHECK:       out[i] = inside ? grad[r0 * 8 + r1 * 4 + r2 * 2 + r3 * 1] : 0.0f;
// NVRTC:       compiled 2 kernels for sm_90
func.func @forward(%ge: tensor<2x3x2x5xf32>, %ie: tensor<2x3x2x5xi32>, %gs: tensor<2x2x2x2xf32>) -> (tensor<2x4x4x5xf32>, tensor<2x3x4x5xf32>) {
  %0 = llmc.gather_elements_grad %ge, %ie axis 2 : (tensor<2x3x2x5xf32>, tensor<2x3x2x5xi32>) -> tensor<2x4x4x5xf32>
  %1 = llmc.slice_grad %gs starts [0, 1, 0, 1] limits [2, 3, 4, 5] strides [1, 1, 2, 2] : (tensor<2x2x2x2xf32>) -> tensor<2x3x4x5xf32>
  return %0, %1 : tensor<2x4x4x5xf32>, tensor<2x3x4x5xf32>
}
