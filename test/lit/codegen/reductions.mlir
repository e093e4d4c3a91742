// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s
// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=NVRTC

// Trailing axes of a float tensor: one block per row with a block
// reduction. Any other axes (or integers): one thread per result element.

// CHECK-LABEL: // ===== reduce_sum_0.cu =====
// CHECK:       //   reduce_sum over trailing axes: one block per row, strided loads, block reduction (warp shuffles, then shared memory)
// CHECK:       constexpr index_t kRows = 6;  // result elements
// CHECK-NEXT:  constexpr index_t kCols = 3500;  // reduced elements per row
// CHECK-NEXT:  constexpr index_t kBlock = 896;  // threads per block
// CHECK-NEXT:  static_assert(kBlock % 32 == 0 && kBlock <= 1024, "whole warps, one block");
// CHECK:       __device__ float blockSum(float v) {
// CHECK:       const float total = blockSum(acc);
// CHECK-LABEL: // ===== reduce_mean_1.cu =====
// CHECK:       //   reduce_mean: one thread per result element, loop over the 5 reduced elements
// CHECK:       const index_t base = i_c0 * 3500 + i_c1;
// CHECK:       const float x = in[base + r_c0 * 700];
// CHECK:       out[i] = acc / (float)kR;
// CHECK-LABEL: // ===== reduce_max_2.cu =====
// CHECK:       acc = (acc != acc || x != x) ? NAN : fmaxf(acc, x);
// NVRTC: step 0 launch reduce_sum_0 grid [6, 1, 1] block [896, 1, 1]
// NVRTC: compiled 3 kernels for sm_90
func.func @forward(%x: tensor<6x5x700xf32>) -> (tensor<6xf32>, tensor<6x1x700xf32>, tensor<5xf32>) {
  %0 = llmc.reduce_sum %x axes [1, 2] : (tensor<6x5x700xf32>) -> tensor<6xf32>
  %1 = llmc.reduce_mean %x axes [1] keepdims : (tensor<6x5x700xf32>) -> tensor<6x1x700xf32>
  %2 = llmc.reduce_max %x axes [0, 2] : (tensor<6x5x700xf32>) -> tensor<5xf32>
  return %0, %1, %2 : tensor<6xf32>, tensor<6x1x700xf32>, tensor<5xf32>
}

// -----

// Integer sums wrap in 64-bit unsigned arithmetic, then to the width.
// CHECK-LABEL: // ===== reduce_sum_0.cu =====
// CHECK:       unsigned long long acc = 0ull;
// CHECK:       acc += (unsigned long long)(long long)x;
// CHECK:       out[i] = (int)(long long)acc;
// CHECK-LABEL: // ===== reduce_mean_1.cu =====
// CHECK:       out[i] = (int)((int)(long long)acc / (int)kR);
// NVRTC: compiled 2 kernels for sm_90
func.func @forward(%x: tensor<3x50xi32>) -> (tensor<3xi32>, tensor<50xi32>) {
  %0 = llmc.reduce_sum %x axes [1] : (tensor<3x50xi32>) -> tensor<3xi32>
  %1 = llmc.reduce_mean %x axes [0] : (tensor<3x50xi32>) -> tensor<50xi32>
  return %0, %1 : tensor<3xi32>, tensor<50xi32>
}

// -----

// Leading axes of many rows (a bias gradient), one launch: per-chunk
// partial sums of 32 columns, then the block that draws its column group's
// last ticket adds the group's chunks in order and puts the ticket back.
// CHECK-LABEL: // ===== reduce_sum_0.cu =====
// CHECK:       //   reduce_sum over leading axes, phase 1: a block sums kChunkRows rows of 32 columns
// CHECK-SAME:  phase 2 in the same launch
// CHECK:       constexpr index_t kRows = 600;  // reduced rows
// CHECK-NEXT:  constexpr index_t kCols = 70;  // kept columns
// CHECK:       constexpr index_t kChunks = 5;  // blocks per column group (grid y)
// CHECK:       constexpr index_t kGroupCols = 32;  // columns per block (grid x)
// CHECK:       reduce_sum_0(const float *__restrict__ in, float *__restrict__ partials, unsigned int *__restrict__ tickets, float *__restrict__ out)
// CHECK:       acc += in[r * kCols + col];
// CHECK:       partials[(index_t)blockIdx.y * kCols + col] = total;
// CHECK:       __threadfence();
// CHECK-NEXT:  __syncthreads();
// CHECK-NEXT:  if (threadIdx.x == 0)
// CHECK-NEXT:    last = atomicAdd(&tickets[blockIdx.x], 1u) ==
// CHECK:       if (!last)
// CHECK-NEXT:    return;
// CHECK:       sum += __ldcg(&partials[c * kCols + i]);
// CHECK-NEXT:  out[i] = sum;
// CHECK:       tickets[blockIdx.x] = 0;
// CHECK-NOT:   ===== reduce_sum_0_partial.cu
// CHECK-LABEL: // ===== reduce_mean_1.cu =====
// CHECK:       out[i] = sum / (float)kRows;
// CHECK-LABEL: // ===== reduce_sum_2.cu =====
// CHECK:       //   reduce_sum: one thread per result element, loop over the 200 reduced elements
// NVRTC: buffer reduce_sum_0.tickets scratch i32[3]
// NVRTC: step 0 launch reduce_sum_0 grid [3, 5, 1] block [256, 1, 1] smem 0 args (arg0, reduce_sum_0.partials, reduce_sum_0.tickets, reduce_sum_0.out0)
// NVRTC: step 1 launch reduce_mean_1 grid [3, 5, 1]
// NVRTC: step 2 launch reduce_sum_2 grid
// NVRTC: compiled 3 kernels for sm_90
func.func @forward(%x: tensor<20x30x70xf32>, %y: tensor<200x7xf32>) -> (tensor<70xf32>, tensor<1x1x70xf32>, tensor<7xf32>) {
  %0 = llmc.reduce_sum %x axes [0, 1] : (tensor<20x30x70xf32>) -> tensor<70xf32>
  %1 = llmc.reduce_mean %x axes [0, 1] keepdims : (tensor<20x30x70xf32>) -> tensor<1x1x70xf32>
  %2 = llmc.reduce_sum %y axes [0] : (tensor<200x7xf32>) -> tensor<7xf32>
  return %0, %1, %2 : tensor<70xf32>, tensor<1x1x70xf32>, tensor<7xf32>
}

// -----

// Rows of whole 16-byte vectors (8 bf16 or 4 f32 columns): a thread loads a
// vector per row, a block covers 32 vectors; the per-column order (row
// lanes r0 + ty + 8k, then the 8 lanes) is the scalar kernel's.
// CHECK-LABEL: // ===== reduce_sum_0.cu =====
// CHECK:       //   reduce_sum over leading axes, phase 1: a block sums kChunkRows rows of 32 vectors of kVec columns (16-byte loads
// CHECK:       constexpr index_t kCols = 3072;  // kept columns
// CHECK:       constexpr index_t kVec = 8;  // columns per load
// CHECK-NEXT:  constexpr index_t kGroupCols = 256;  // columns per block (grid x)
// CHECK:       static_assert(kCols % kVec == 0, "whole vectors per row");
// CHECK:       __shared__ float sums[8][kVec][33];
// CHECK:       const Vec<__nv_bfloat16, kVec> v = reinterpret_cast<const Vec<__nv_bfloat16, kVec> *>(in + r * kCols)[vc];
// CHECK:       acc[e] += __bfloat162float(v.v[e]);
// CHECK:       total += sums[j][e][tx];
// CHECK-NEXT:  partials[(index_t)blockIdx.y * kCols + vc * kVec + e] = total;
// CHECK:       out[i] = __float2bfloat16(sum);
// CHECK-LABEL: // ===== reduce_sum_1.cu =====
// CHECK:       constexpr index_t kVec = 4;  // columns per load
// CHECK-NEXT:  constexpr index_t kGroupCols = 128;  // columns per block (grid x)
// NVRTC: step 0 launch reduce_sum_0 grid [12, 4, 1] block [256, 1, 1]
// NVRTC: step 1 launch reduce_sum_1 grid [6, 4, 1] block [256, 1, 1]
// NVRTC: compiled 2 kernels for sm_90
func.func @forward(%g: tensor<512x3072xbf16>, %h: tensor<2x256x768xf32>) -> (tensor<3072xbf16>, tensor<768xf32>) {
  %0 = llmc.reduce_sum %g axes [0] : (tensor<512x3072xbf16>) -> tensor<3072xbf16>
  %1 = llmc.reduce_sum %h axes [0, 1] : (tensor<2x256x768xf32>) -> tensor<768xf32>
  return %0, %1 : tensor<3072xbf16>, tensor<768xf32>
}
