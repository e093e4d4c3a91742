// The one-op emitters: fusion off (fused kernels: fused-elementwise.mlir).
// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file --no-fuse=all 2>&1 >/dev/null | FileCheck %s
// RUN: llmc codegen %s --split-input-file --no-fuse=all --compile | FileCheck %s --check-prefix=NVRTC
// The warp kernel's measurement variants (NormGradWarpKernel.cpp,
// warpGradVariant): session 7's (the tail's loop not unrolled), an L2
// prefetch of each warp's next row, the sums in shared memory at 16 warps
// an SM.
// RUN: env LLMC_DEBUG=4 LLMC_NORM_GRAD_KERNEL=session7 llmc codegen %s --split-input-file --no-fuse=all 2>&1 >/dev/null | FileCheck %s --check-prefix=S7
// RUN: env LLMC_DEBUG=4 LLMC_NORM_GRAD_KERNEL=prefetch llmc codegen %s --split-input-file --no-fuse=all 2>&1 >/dev/null | FileCheck %s --check-prefix=PF
// RUN: env LLMC_DEBUG=4 LLMC_NORM_GRAD_KERNEL=smem llmc codegen %s --split-input-file --no-fuse=all 2>&1 >/dev/null | FileCheck %s --check-prefix=SMEM
// Fused, every kernel still compiles with NVRTC.
// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=FUSED
// FUSED: compiled {{[1-9][0-9]*}} kernels for sm_90

// Backward row ops: layer_norm_grad and rms_norm_grad recompute the row
// statistics, write dx, and sum dweight/dbias deterministically (rows of
// 4k <= 1024: in the same launch, by tickets; other rows: per-block
// partial sums, then a fixed-order second kernel); softmax
// grads take one block per row; activation grads are elementwise. Rows of
// 4k <= 1024 elements: one warp per row, in registers, 4-element vectors.

// One launch: the block adds its 8 warps' parameter sums in warp order
// (shared memory) into its row of `partials`; the last block of each run of
// 8 blocks (a ticket) adds the run's rows, the last run's block the 16 runs,
// in order, and resets the tickets. The tail's adds are unrolled, every
// load in bounds.
// CHECK-LABEL: // ===== layer_norm_grad_0.cu =====
// CHECK:       // layer_norm_grad_0: llmc.layer_norm_grad "/transformer/h.0/ln_1/LayerNormalization"
// CHECK-NEXT:  //   (bf16[8, 1024, 768], bf16[8, 1024, 768], bf16[768]) -> bf16[8, 1024, 768], bf16[768], bf16[768]
// CHECK-NEXT:  //   layer_norm_grad: 1024 warps stride over the rows, one row per warp in registers
// CHECK-NEXT:  //   each warp adds up its rows' parameter gradients per column in registers; the block adds its warps in order (shared memory) into its row of the f32 scratch `partials`; the last block of each run of kGroupBlocks (tickets) adds the run's rows in order, the last run's block adds the runs in order: one launch, deterministic, no atomics on data
// CHECK:       constexpr index_t kRows = 8192;  // rows
// CHECK-NEXT:  constexpr index_t kCols = 768;  // elements per row
// CHECK-NEXT:  constexpr index_t kBlock = 256;  // threads per block, one warp per row
// CHECK-NEXT:  constexpr index_t kPartials = 1024;  // warps, 8 per block
// CHECK-NEXT:  constexpr index_t kBlocks = 128;  // blocks
// CHECK-NEXT:  constexpr index_t kGroupBlocks = 8;  // blocks per ticket run
// CHECK-NEXT:  constexpr index_t kRuns = 16;  // ticket runs
// CHECK-NEXT:  constexpr index_t kSums = 2;
// CHECK-NOT:   prefetch
// CHECK:       layer_norm_grad_0(const __nv_bfloat16 *__restrict__ in, const __nv_bfloat16 *__restrict__ grad, const __nv_bfloat16 *__restrict__ weight, __nv_bfloat16 *__restrict__ dx, float *__restrict__ partials, unsigned int *__restrict__ tickets, __nv_bfloat16 *__restrict__ dweight, __nv_bfloat16 *__restrict__ dbias)
// CHECK:       for (index_t row = warp; row < kRows; row += kPartials) {
// CHECK-NOT:   prefetch
// CHECK:       const float mean = warpAllSum(sum) / (float)kCols;
// CHECK:       const float rstd = 1.0f / sqrtf(warpAllSum(sq) / (float)kCols + kEps);
// CHECK:       const float meanG = warpAllSum(sumG) / (float)kCols;
// CHECK-NEXT:  const float meanGX = warpAllSum(sumGX) / (float)kCols;
// CHECK:       o.v[e] = __float2bfloat16(rstd * (g - meanG - xhat * meanGX));
// CHECK-NEXT:  dweightAcc[u] += dy[u] * xhat;
// CHECK-NEXT:  dbiasAcc[u] += dy[u];
// CHECK:       reinterpret_cast<float4 *>(red[wib])[c] = make_float4(dweightAcc[4 * i],
// CHECK:       t += red[w][j];
// CHECK-NEXT:  partials[(0 * kStride + blockIdx.x) * kCols + j] = t;
// CHECK:       reinterpret_cast<float4 *>(red[wib])[c] = make_float4(dbiasAcc[4 * i],
// CHECK:       partials[(1 * kStride + blockIdx.x) * kCols + j] = t;
// CHECK:       last = atomicAdd(&tickets[run], 1u) == (unsigned int)(members - 1);
// CHECK:       if (!last)
// CHECK-NEXT:    return;
// CHECK:       #pragma unroll
// CHECK-NEXT:  for (int b = 0; b < kGroupBlocks; ++b) {
// CHECK-NEXT:    const float4 v = __ldcg(reinterpret_cast<const float4 *>(
// CHECK-NEXT:        partials + (s * kStride + first + min(b, members - 1)) * kCols) + c);
// CHECK-NEXT:    if (b < members) {
// CHECK:       tickets[run] = 0;
// CHECK:       last = atomicAdd(&tickets[kRuns], 1u) == (unsigned int)(kRuns - 1);
// CHECK:       #pragma unroll
// CHECK-NEXT:  for (int b = 0; b < kRuns; ++b) {
// CHECK:       dweight[4 * c] = __float2bfloat16(t.x);
// CHECK:       dbias[4 * c + 3] = __float2bfloat16(t.w);
// CHECK:       tickets[kRuns] = 0;
// S7-LABEL:    // ===== layer_norm_grad_0.cu =====
// S7:          for (int b = 0; b < members; ++b) {
// S7:          for (int b = 0; b < kRuns; ++b) {
// S7-LABEL:    // ===== rms_norm_grad_1.cu =====
// PF-LABEL:    // ===== layer_norm_grad_0.cu =====
// PF:          //   each warp asks L2 for its row kAhead of its rows later (prefetch.L2), so that the DRAM streams while the warps reduce and store
// PF:          constexpr index_t kAhead = 1;
// PF:          asm volatile("prefetch.L2 [%0];" : : "l"(a));
// PF:          for (index_t row = warp; row < kRows; row += kPartials) {
// PF-NEXT:       for (int a = row == warp ? 1 : kAhead; a <= kAhead; ++a)
// PF-NEXT:         if (row + a * kPartials < kRows) {
// PF-NEXT:           const index_t next = row + a * kPartials;
// PF-NEXT:           prefetchL2(in + next * kCols, kCols * (int)sizeof(*in), lane);
// PF-NEXT:           prefetchL2(grad + next * kCols, kCols * (int)sizeof(*grad), lane);
// PF-NEXT:         }
// PF-LABEL:    // ===== rms_norm_grad_1.cu =====
// SMEM-LABEL:  // ===== layer_norm_grad_0.cu =====
// SMEM:        constexpr index_t kBlock = 128;
// SMEM-NEXT:   constexpr index_t kPartials = 2048;  // warps, 4 per block
// SMEM-NEXT:   constexpr index_t kBlocks = 512;
// SMEM-NEXT:   constexpr index_t kGroupBlocks = 16;
// SMEM-NEXT:   constexpr index_t kRuns = 32;
// SMEM:        __launch_bounds__(kBlock, 4)
// SMEM:        __shared__ __align__(16) float acc[kSums][kWarps][kCols];
// SMEM:        float4 dweightAcc = reinterpret_cast<float4 *>(acc[0][wib])[c];
// SMEM:        reinterpret_cast<float *>(&dweightAcc)[e] += dy[u] * xhat;
// SMEM:        reinterpret_cast<float4 *>(acc[0][wib])[c] = dweightAcc;
// SMEM:        t += acc[1][w][j];
// SMEM-LABEL:  // ===== rms_norm_grad_1.cu =====
// CHECK-LABEL: // ===== rms_norm_grad_1.cu =====
// CHECK:       (void)sum;
// CHECK:       const float mean = 0.0f;
// CHECK-NEXT:  const float rstd = 1.0f / sqrtf(warpAllSum(sq) / (float)kCols + kEps);
// CHECK:       dweight[4 * c] = __float2bfloat16(t.x);
// NVRTC:       buffer layer_norm_grad_0.partials scratch f32[2, 144, 768]
// NVRTC-NEXT:  buffer layer_norm_grad_0.tickets scratch i32[17]
// NVRTC:       step 0 launch layer_norm_grad_0 grid [128, 1, 1] block [256, 1, 1] smem 0 args (arg0, arg1, arg2, layer_norm_grad_0.out0, layer_norm_grad_0.partials, layer_norm_grad_0.tickets, layer_norm_grad_0.out1, layer_norm_grad_0.out2)
// NVRTC-NEXT:  step 1 launch rms_norm_grad_1 grid [128, 1, 1]
// NVRTC:       compiled 2 kernels for sm_90
func.func @forward(%x: tensor<8x1024x768xbf16>, %dy: tensor<8x1024x768xbf16>, %w: tensor<768xbf16>)
    -> (tensor<8x1024x768xbf16>, tensor<768xbf16>, tensor<768xbf16>, tensor<8x1024x768xbf16>, tensor<768xbf16>) {
  %0, %1, %2 = llmc.layer_norm_grad %x, %dy weight %w {bias_grad, epsilon = 1.0e-05 : f64} : (tensor<8x1024x768xbf16>, tensor<8x1024x768xbf16>, tensor<768xbf16>) -> (tensor<8x1024x768xbf16>, tensor<768xbf16>, tensor<768xbf16>) loc("/transformer/h.0/ln_1/LayerNormalization")
  %3, %4 = llmc.rms_norm_grad %x, %dy weight %w : (tensor<8x1024x768xbf16>, tensor<8x1024x768xbf16>, tensor<768xbf16>) -> (tensor<8x1024x768xbf16>, tensor<768xbf16>)
  return %0, %1, %2, %3, %4 : tensor<8x1024x768xbf16>, tensor<768xbf16>, tensor<768xbf16>, tensor<8x1024x768xbf16>, tensor<768xbf16>
}

// -----

// Rows that are not whole vectors (770) or longer than 1024: one block per
// row, Welford, per-block partial sums.
// CHECK-LABEL: // ===== layer_norm_grad_0_rows.cu =====
// CHECK:       //   each block adds up dy * xhat and dy over its rows per column into its row of the f32 scratch `partials`; layer_norm_grad_0_params sums the blocks in a fixed order
// CHECK:       constexpr index_t kCols = 770;  // elements per row
// CHECK-NEXT:  constexpr index_t kBlock = 192;  // threads per block
// CHECK-NEXT:  constexpr index_t kPartials = 64;  // blocks, one partial sum each
// CHECK-NEXT:  constexpr index_t kPerThread = 5;  // columns per thread
// CHECK:       static_assert(kPerThread * kBlock >= kCols, "every column has a thread");
// CHECK:       blockWelford(n, mean, m2);
// CHECK:       const float meanG = blockSum(sumG) / (float)kCols;
// CHECK-NEXT:  const float meanGX = blockSum(sumGX) / (float)kCols;
// CHECK:       dx[row * kCols + j] = rstd * (g - meanG - xhat * meanGX);
// CHECK:       partials[(0 * kPartials + blockIdx.x) * kCols + j] = dweightAcc[u];
// CHECK-NEXT:  partials[(1 * kPartials + blockIdx.x) * kCols + j] = dbiasAcc[u];
// CHECK-LABEL: // ===== rms_norm_grad_1_rows.cu =====
// CHECK:       //   each block adds up dy * xhat over its rows per column
// CHECK-NOT:   blockWelford(n
// CHECK:       const float rstd = 1.0f / sqrtf(blockSum(sq) / (float)kCols + kEps);
// NVRTC:       compiled 4 kernels for sm_90
func.func @forward(%x: tensor<64x770xf32>, %dy: tensor<64x770xf32>, %w: tensor<770xf32>, %y: tensor<4x2048xf32>, %w2: tensor<2048xf32>)
    -> (tensor<64x770xf32>, tensor<770xf32>, tensor<770xf32>, tensor<4x2048xf32>, tensor<2048xf32>) {
  %0, %1, %2 = llmc.layer_norm_grad %x, %dy weight %w {bias_grad} : (tensor<64x770xf32>, tensor<64x770xf32>, tensor<770xf32>) -> (tensor<64x770xf32>, tensor<770xf32>, tensor<770xf32>)
  %3, %4 = llmc.rms_norm_grad %y, %y weight %w2 : (tensor<4x2048xf32>, tensor<4x2048xf32>, tensor<2048xf32>) -> (tensor<4x2048xf32>, tensor<2048xf32>)
  return %0, %1, %2, %3, %4 : tensor<64x770xf32>, tensor<770xf32>, tensor<770xf32>, tensor<4x2048xf32>, tensor<2048xf32>
}

// -----

// softmax grads read a row kInner apart, as the forward; a layer_norm_grad
// without weight and bias is one kernel and no scratch.
// CHECK-LABEL: // ===== softmax_grad_0.cu =====
// CHECK:       //   softmax_grad along axis 1: one block per row; sum(dy * y) by a block reduction, then y * (dy - sum)
// CHECK:       constexpr index_t kInner = 5;  // stride between a row's elements
// CHECK:       acc += grad[at] * out[at];
// CHECK:       dx[at] = y * (dy - sum);
// CHECK-LABEL: // ===== log_softmax_grad_1.cu =====
// CHECK:       constexpr index_t kInner = 1;
// CHECK:       acc += grad[at];
// CHECK:       dx[at] = dy - expf(y) * sum;
// CHECK-LABEL: // ===== layer_norm_grad_2.cu =====
// CHECK-NOT:   partials
// CHECK:       const float g = dy[u];
// NVRTC:       step 2 launch layer_norm_grad_2 grid [24, 1, 1] block [32, 1, 1] smem 0 args (arg0, arg1, layer_norm_grad_2.out0)
// NVRTC:       compiled 3 kernels for sm_90
func.func @forward(%x: tensor<4x6x5xf32>, %dy: tensor<4x6x5xf32>) -> (tensor<4x6x5xf32>, tensor<4x6x5xf32>, tensor<4x6x5xf32>) {
  %0 = llmc.softmax_grad %x, %dy {axis = 1 : i64} : tensor<4x6x5xf32>
  %1 = llmc.log_softmax_grad %x, %dy : tensor<4x6x5xf32>
  %2 = llmc.layer_norm_grad %x, %dy : (tensor<4x6x5xf32>, tensor<4x6x5xf32>) -> tensor<4x6x5xf32>
  return %0, %1, %2 : tensor<4x6x5xf32>, tensor<4x6x5xf32>, tensor<4x6x5xf32>
}

// -----

// Activation grads: a = the forward input, b = the cotangent.
// CHECK-LABEL: // ===== gelu_grad_0.cu =====
// CHECK:       //   one thread per element, grid-stride loop; gelu_grad tanh: y = dy * gelu'(x)
// CHECK:       __device__ __forceinline__ float geluTanhGrad(float x) {
// CHECK:       out[i] = __float2bfloat16(__fmul_rn(b, geluTanhGrad(a)));
// CHECK-LABEL: // ===== gelu_grad_1.cu =====
// CHECK:       __device__ __forceinline__ float geluErfGrad(float x) {
// CHECK:       out[i] = __float2bfloat16(__fmul_rn(b, geluErfGrad(a)));
// CHECK-LABEL: // ===== silu_grad_2.cu =====
// CHECK:       out[i] = __float2bfloat16(__fmul_rn(b, siluGrad(a)));
// NVRTC:       compiled 3 kernels for sm_90
func.func @forward(%x: tensor<8x1024x3072xbf16>, %dy: tensor<8x1024x3072xbf16>) -> (tensor<8x1024x3072xbf16>, tensor<8x1024x3072xbf16>, tensor<8x1024x3072xbf16>) {
  %0 = llmc.gelu_grad tanh %x, %dy : tensor<8x1024x3072xbf16>
  %1 = llmc.gelu_grad erf %x, %dy : tensor<8x1024x3072xbf16>
  %2 = llmc.silu_grad %x, %dy : tensor<8x1024x3072xbf16>
  return %0, %1, %2 : tensor<8x1024x3072xbf16>, tensor<8x1024x3072xbf16>, tensor<8x1024x3072xbf16>
}
