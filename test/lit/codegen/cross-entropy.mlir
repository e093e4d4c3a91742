// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s
// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=NVRTC
// RUN: env LLMC_CE_ROW_CACHE=none llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=L2
// RUN: env LLMC_CE_ROW_CACHE=cluster LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=CLUSTER
// RUN: env LLMC_CE_ROW_CACHE=cluster8 llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=CLUSTER8
// exp(a - b) is ex2.approx of one FMA in every row kernel (the loss alone
// too: fused and unfused stay bitwise equal); LLMC_CE_EXP=expf keeps expf,
// with the same plan.
// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=EX2
// RUN: env LLMC_CE_EXP=expf LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=EXPF
// RUN: env LLMC_CE_EXP=expf llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=NVRTC
// Clusters are sm_90's: for another arch (a bundle recompiled on an older
// GPU) the cluster kernels compile their body without clusters, the same
// launches; cluster-fallback selects that body on sm_90.
// RUN: env LLMC_CE_ROW_CACHE=cluster8 llmc codegen %s --split-input-file --compile --arch sm_80 | FileCheck %s --check-prefix=CLUSTER8
// RUN: env LLMC_CE_ROW_CACHE=cluster-fallback LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=FALLBACK

// mean and sum: a row kernel writes per-position losses to scratch, one
// block reduces them in a fixed order (deterministic, no atomics).

// CHECK-LABEL: // ===== cross_entropy_0_rows.cu =====
// CHECK:       // cross_entropy_0_rows: llmc.cross_entropy "/loss/SoftmaxCrossEntropyLoss"
// CHECK:       //   cross_entropy (mean): one block per position; the row is read in vectors of 1 elements, online max/sum of exp, loss = max + log(sum) - x[target] into `row_loss`
// CHECK:       constexpr index_t kRows = 2048;  // positions
// CHECK-NEXT:  constexpr index_t kCols = 50257;  // columns of a row
// CHECK:       constexpr index_t kIgnore = -100;  // ignore_index
// CHECK:       if (target == kIgnore) {
// CHECK:         row_loss[row] = 0.0f;
// CHECK:       const float xt = threadIdx.x == 0 && valid ? logits[row * kCols + target] : 0.0f;
// CHECK:       row_loss[row] = valid ? m + logf(s) - xt : NAN;
// CHECK-LABEL: // ===== cross_entropy_0_reduce.cu =====
// CHECK:       static_assert(kRows < (1 << 24), "the count is exact in f32");
// CHECK:       const float counted = blockSum(count);
// CHECK:       out[0] = total / counted;
// NVRTC:      buffer cross_entropy_0.row_loss scratch f32[2048]
// NVRTC:      step 0 launch cross_entropy_0_rows grid [2048, 1, 1] block [1024, 1, 1] smem 0 args (arg0, arg1, cross_entropy_0.row_loss)
// NVRTC-NEXT: step 1 launch cross_entropy_0_reduce grid [1, 1, 1] block [1024, 1, 1] smem 0 args (cross_entropy_0.row_loss, arg1, cross_entropy_0.out0)
// NVRTC:      compiled 2 kernels for sm_90
// EX2-LABEL:   // ===== cross_entropy_0_rows.cu =====
// EX2:         asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(fmaf(a, l, -(b * l))));
// Vectors wholly of real classes skip the padding test; the last one
// enters its padding as -inf.
// EX2:         xs[e] = in.v[e];
// EX2:         xs[e] = v * kVec + e < kClasses ? in.v[e] : -INFINITY;
// EX2:         onlineAddVecEx2(m, s, xs);
// EX2-NOT:     expf(
// EX2:         // ===== cross_entropy_0_reduce.cu =====
// EXPF-LABEL:  // ===== cross_entropy_0_rows.cu =====
// EXPF-NOT:    onlineAddEx2
// EXPF:        onlineAdd(m, s, in.v[e]);
// EXPF:        // ===== cross_entropy_0_reduce.cu =====
// A loss alone is one pass over the row: no cluster.
// CLUSTER-LABEL: // ===== cross_entropy_0_rows.cu =====
// CLUSTER-NOT:   __cluster_dims__
// CLUSTER:       // ===== cross_entropy_0_reduce.cu =====
// CLUSTER8:      launch cross_entropy_0_rows grid [2048, 1, 1] block [1024, 1, 1] smem 0
func.func @forward(%logits: tensor<2x1024x50257xf32>, %t: tensor<2x1024xi64>) -> tensor<f32> {
  %0 = llmc.cross_entropy mean %logits, %t : (tensor<2x1024x50257xf32>, tensor<2x1024xi64>) -> tensor<f32> loc("/loss/SoftmaxCrossEntropyLoss")
  return %0 : tensor<f32>
}

// -----

// none: one kernel writes the losses; sum: no count.
// CHECK-LABEL: // ===== cross_entropy_0.cu =====
// CHECK:       out[row] = __float2bfloat16(valid ? m + logf(s) - xt : NAN);
// CHECK-LABEL: // ===== cross_entropy_1_reduce.cu =====
// CHECK-NOT:   counted
// CHECK:       out[0] = __float2bfloat16(total);
// NVRTC: compiled 3 kernels for sm_90
func.func @forward(%logits: tensor<4x7xbf16>, %t: tensor<4xi32>) -> (tensor<4xbf16>, tensor<bf16>) {
  %0 = llmc.cross_entropy none %logits, %t {ignore_index = 0 : i64} : (tensor<4x7xbf16>, tensor<4xi32>) -> tensor<4xbf16>
  %1 = llmc.cross_entropy sum %logits, %t : (tensor<4x7xbf16>, tensor<4xi32>) -> tensor<bf16>
  return %0, %1 : tensor<4xbf16>, tensor<bf16>
}

// -----

// A classifier group (llmc-fuse-classifier): bf16 logits from a matmul,
// padded to 16 columns (13 classes). The count, one row kernel that writes
// each row's loss and the bf16 gradient over the logits (vectors of 8 bf16
// kept in registers), and the fixed-order sum.
// CHECK-LABEL: // ===== cross_entropy_2_rows.cu =====
// CHECK:       //   cross_entropy and its gradient (mean): one block per position; the row is read in vectors of 8 elements, online max/sum of exp, loss = max + log(sum) - x[target] into `row_loss`, then w * (exp(x - max) / sum - onehot(target)) over the row from registers
// CHECK:       struct alignas(16) InVec {
// CHECK:       cross_entropy_2_rows(const __nv_bfloat16 *logits, const long long *__restrict__ targets, const float *__restrict__ dloss, const float *__restrict__ count, float *__restrict__ row_loss, __nv_bfloat16 *dlogits)
// CHECK:       InVec cached[kIters];
// CHECK:       blockOnline(m, s);
// CHECK:       o.v[e] = __float2bfloat16(w * (p - (j == target ? 1.0f : 0.0f)));
// CHECK-LABEL: // ===== cross_entropy_2_reduce.cu =====
// CHECK:       out[0] = total / count[0];
// The gradient is written over the matmul's buffer, which the next matmul
// reads.
// NVRTC:      step 1 launch cross_entropy_2_count grid [1, 1, 1] block [1024, 1, 1] smem 0 args (arg2, cross_entropy_2.count)
// NVRTC-NEXT: step 2 launch cross_entropy_2_rows grid [4, 1, 1] block [32, 1, 1] smem 0 args (matmul_0.out0, arg2, arg3, cross_entropy_2.count, cross_entropy_2.row_loss, matmul_0.out0)
// NVRTC-NEXT: step 3 launch cross_entropy_2_reduce grid [1, 1, 1] block [1024, 1, 1] smem 0 args (cross_entropy_2.row_loss, cross_entropy_2.count, cross_entropy_2.out0)
// NVRTC-NEXT: step 4 matmul matmul_5 {{.*}} (matmul_0.out0, arg1 -> matmul_5.out0)
// NVRTC:      compiled 3 kernels for sm_90
// Rows kept in registers: no cluster.
// CLUSTER-LABEL: // ===== cross_entropy_2_rows.cu =====
// CLUSTER:       over the row from registers
// CLUSTER-NOT:   __cluster_dims__
// CLUSTER:       // ===== cross_entropy_2_reduce.cu =====
// CLUSTER8:      launch cross_entropy_2_rows grid [4, 1, 1] block [32, 1, 1] smem 0
func.func @forward(%h: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %t: tensor<4xi64>, %d: tensor<f32>) -> (tensor<f32>, tensor<4x8xbf16>) {
  %x = llmc.matmul %h, %w : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %0 = llmc.cast %x : tensor<4x16xbf16> -> tensor<4x16xf32>
  %1 = llmc.cross_entropy mean %0, %t {classes = 13 : i64, ignore_index = -1 : i64} : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  %2 = llmc.cross_entropy_grad mean %0, %t, %d {classes = 13 : i64, ignore_index = -1 : i64} : (tensor<4x16xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x16xf32>
  %3 = llmc.cast %2 : tensor<4x16xf32> -> tensor<4x16xbf16>
  %4 = llmc.matmul %3, %w {transpose_rhs} : (tensor<4x16xbf16>, tensor<8x16xbf16>) -> tensor<4x8xbf16>
  return %1, %4 : tensor<f32>, tensor<4x8xbf16>
}

// -----

// GPT-2's row (50304 bf16 columns, 50257 classes): too long for registers,
// staged once in shared memory (100608 bytes, two blocks per SM) by
// cp.async, one commit group per vector, folded as each group lands; x[target]
// is read from the staged row after the block's reduction. With
// LLMC_CE_ROW_CACHE=none the gradient re-reads the row from L2 instead.
// Blocks of 1024 threads: the row that draws the last ticket sums the row
// losses in the `_reduce` kernel's order, so there is no `_reduce` launch.
// CHECK-LABEL: // ===== cross_entropy_2_rows.cu =====
// CHECK:       over the row from shared memory (the row staged once)
// CHECK:       constexpr index_t kIters = 7;
// CHECK:       constexpr index_t kMinBlocks = 2;
// CHECK:       asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
// CHECK:       asm volatile("cp.async.wait_group 0;" ::: "memory");
// CHECK:       __launch_bounds__(kBlock, kMinBlocks)
// CHECK:       extern __shared__ InVec staged[];
// CHECK:         stageVec(&staged[v], &x[v]);
// CHECK-NEXT:    commitStaged();
// CHECK:         waitStaged(kIters - 1 - i);
// CHECK:       blockOnline(m, s);
// CHECK-NEXT:  const float xt = threadIdx.x == 0 && valid ? __bfloat162float(reinterpret_cast<const __nv_bfloat16 *>(staged)[target]) : 0.0f;
// CHECK:         row_loss[row] = valid ? m + logf(s) - xt : NAN;
// CHECK-NEXT:    __threadfence();
// CHECK-NEXT:    sawLast |= atomicAdd(ticket, 1u) == (unsigned int)(kRows - 1);
// CHECK:         const InVec in = staged[v];
// CHECK:         d[v] = o;
// CHECK:       __syncthreads();
// CHECK:       if (!last)
// CHECK-NEXT:    return;
// CHECK:         sum += __ldcg(&row_loss[j]);
// CHECK:         out[0] = total / count[0];
// CHECK-NEXT:    *ticket = 0;
// CHECK-NOT:   ===== cross_entropy_2_reduce.cu
// NVRTC:       buffer cross_entropy_2.tickets scratch i32[1]
// NVRTC:       launch cross_entropy_2_rows grid [4, 1, 1] block [1024, 1, 1] smem 100608 args (matmul_0.out0, arg2, arg3, cross_entropy_2.count, cross_entropy_2.row_loss, matmul_0.out0, cross_entropy_2.tickets, cross_entropy_2.out0)
// NVRTC-NEXT:  matmul
// NVRTC:       compiled 2 kernels
// L2:          launch cross_entropy_2_rows grid [4, 1, 1] block [1024, 1, 1] smem 0 args (matmul_0.out0, arg2, arg3, cross_entropy_2.count, cross_entropy_2.row_loss, matmul_0.out0, cross_entropy_2.tickets, cross_entropy_2.out0)
// With LLMC_CE_ROW_CACHE=cluster: a cluster of 4 CTAs of 256 threads per
// row, each staging its 7 x 256 vectors (28672 bytes); the partials meet
// through distributed shared memory. The CTA that stores a row's loss
// draws its ticket; the last one sums the losses, its 256 threads playing
// reduceKernel's 1024 in 4 turns (the same order): no `_reduce` launch.
// EX2-LABEL:     // ===== cross_entropy_2_rows.cu =====
// EX2:           onlineAddVecEx2(m, s, xs);
// Only the vector holding the target (or padding) tests the one-hot.
// EX2:           if (v < kFullVecs && (target < v * kVec || target >= v * kVec + kVec)) {
// EX2:           o.v[e] = __float2bfloat16(w * (r * inv));
// EX2:           } else {
// EX2:           const float p = j >= kClasses ? 0.0f : exp2Diff(__bfloat162float(in.v[e]), m) * inv;
// EXPF-LABEL:    // ===== cross_entropy_2_rows.cu =====
// EXPF:          onlineAdd(m, s, __bfloat162float(in.v[e]));
// EXPF:          const float p = j >= kClasses ? 0.0f : expf(__bfloat162float(in.v[e]) - m) * inv;
// CLUSTER-LABEL: // ===== cross_entropy_2_rows.cu =====
// CLUSTER:       one cluster of 4 CTAs per position
// CLUSTER-SAME:  each CTA of the cluster staging its slice once
// CLUSTER:       constexpr index_t kBlock = 1024;
// CLUSTER:       constexpr index_t kCluster = 4;
// CLUSTER-NEXT:  constexpr index_t kCtaThreads = 256;
// CLUSTER-NEXT:  constexpr index_t kCtaWarps = 8;
// CLUSTER-NEXT:  constexpr index_t kMinBlocks = 7;
// CLUSTER-NOT:   LLMC_CE_NO_CLUSTERS
// CLUSTER:       #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(LLMC_CE_NO_CLUSTERS)
// CLUSTER:       asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
// CLUSTER:       __device__ void clusterOnline(float &m, float &s) {
// CLUSTER:       #define LLMC_CE_CLUSTER_DIMS __cluster_dims__(kCluster, 1, 1)
// CLUSTER:       asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
// CLUSTER:       __global__ void LLMC_CE_CLUSTER_DIMS __launch_bounds__(kCtaThreads, kMinBlocks)
// CLUSTER:       #ifdef LLMC_CE_CLUSTERS
// CLUSTER-NEXT:  extern __shared__ InVec staged[]; // this CTA's slice, 28672 bytes
// CLUSTER:       const unsigned tid = rank * kCtaThreads + threadIdx.x;
// CLUSTER:       const index_t v = tid + i * kBlock;
// CLUSTER-NEXT:    if (v < kVecs)
// CLUSTER-NEXT:      stageVec(&staged[i * kCtaThreads + threadIdx.x], &x[v]);
// CLUSTER:       clusterOnline(m, s);
// CLUSTER:       if (threadIdx.x == 0 && rank == (unsigned)((tv % kBlock) / kCtaThreads)) {
// CLUSTER:         row_loss[row] = valid ? m + logf(s) - xt : NAN;
// CLUSTER-NEXT:    __threadfence();
// CLUSTER-NEXT:    sawLast |= atomicAdd(ticket, 1u) == (unsigned int)(kRows - 1);
// CLUSTER:       clusterWait();
// CLUSTER-NEXT:  }
// CLUSTER-NEXT:  #else
// CLUSTER:       if (blockIdx.x % kCluster != 0)
// CLUSTER:       const float xt = threadIdx.x == 0 && valid ? __bfloat162float(logits[row * kCols + target]) : 0.0f;
// CLUSTER:       for (int c = 0; c < kCluster; ++c) {
// CLUSTER-NEXT:    const unsigned tid = c * kCtaThreads + threadIdx.x;
// CLUSTER:           partial[0][c * kCtaWarps + warp] = m;
// CLUSTER:       #endif
// CLUSTER:       for (int c = 0; c < kCluster; ++c) {
// CLUSTER-NEXT:    float sum = 0.0f;
// CLUSTER-NEXT:    for (index_t j = c * kCtaThreads + threadIdx.x; j < kRows; j += kBlock)
// CLUSTER-NEXT:      sum += __ldcg(&row_loss[j]);
// CLUSTER:       const float total = warpSum(sumLane < (int)(kBlock / 32) ? sums[sumLane] : 0.0f);
// CLUSTER:         out[0] = total / count[0];
// CLUSTER-NEXT:    *ticket = 0;
// CLUSTER-NOT:   ===== cross_entropy_2_reduce.cu
// FALLBACK-LABEL: // ===== cross_entropy_2_rows.cu =====
// FALLBACK:       #define LLMC_CE_NO_CLUSTERS 1
// FALLBACK:       #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(LLMC_CE_NO_CLUSTERS)
// CLUSTER8:      launch cross_entropy_2_rows grid [32, 1, 1] block [128, 1, 1] smem 14336 args (matmul_0.out0, arg2, arg3, cross_entropy_2.count, cross_entropy_2.row_loss, matmul_0.out0, cross_entropy_2.tickets, cross_entropy_2.out0)
// CLUSTER8-NEXT: matmul
func.func @forward(%h: tensor<4x8xbf16>, %w: tensor<8x50304xbf16>, %t: tensor<4xi64>, %d: tensor<f32>) -> (tensor<f32>, tensor<4x8xbf16>) {
  %x = llmc.matmul %h, %w : (tensor<4x8xbf16>, tensor<8x50304xbf16>) -> tensor<4x50304xbf16>
  %0 = llmc.cast %x : tensor<4x50304xbf16> -> tensor<4x50304xf32>
  %1 = llmc.cross_entropy mean %0, %t {classes = 50257 : i64} : (tensor<4x50304xf32>, tensor<4xi64>) -> tensor<f32>
  %2 = llmc.cross_entropy_grad mean %0, %t, %d {classes = 50257 : i64} : (tensor<4x50304xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x50304xf32>
  %3 = llmc.cast %2 : tensor<4x50304xf32> -> tensor<4x50304xbf16>
  %4 = llmc.matmul %3, %w {transpose_rhs} : (tensor<4x50304xbf16>, tensor<8x50304xbf16>) -> tensor<4x8xbf16>
  return %1, %4 : tensor<f32>, tensor<4x8xbf16>
}

// -----

// An odd row (50257 bf16: vectors of 1 element, 2 bytes, under cp.async's
// 4) in shared memory by plain copies, unrolled by 8 (fully, 50 loads
// would spill under the two-block register cap); no waits.
// CHECK-LABEL: // ===== cross_entropy_grad_0.cu =====
// CHECK:       over the row from shared memory (the row staged once)
// CHECK:       // Elements narrower than 16 bytes: plain copies
// CHECK-NOT:   cp.async
// CHECK:       #pragma unroll 8
// CHECK:         stageVec(&staged[v], &x[v]);
// NVRTC:       launch cross_entropy_grad_0 grid [2, 1, 1] block [1024, 1, 1] smem 100528 args
// L2:          launch cross_entropy_grad_0 grid [2, 1, 1] block [1024, 1, 1] smem 0 args
// The unfused gradient takes the cluster too: 50 plain copies a thread.
// CLUSTER-LABEL: // ===== cross_entropy_grad_0.cu =====
// CLUSTER:       __cluster_dims__(kCluster, 1, 1)
// CLUSTER8:      launch cross_entropy_grad_0 grid [16, 1, 1] block [128, 1, 1] smem 12800 args
func.func @forward(%logits: tensor<2x50257xbf16>, %t: tensor<2xi64>, %d: tensor<bf16>) -> tensor<2x50257xbf16> {
  %0 = llmc.cross_entropy_grad sum %logits, %t, %d : (tensor<2x50257xbf16>, tensor<2xi64>, tensor<bf16>) -> tensor<2x50257xbf16>
  return %0 : tensor<2x50257xbf16>
}

// -----

// f32 rows of 50304 (201 KiB) leave room for one block per SM: the row is
// re-read from L2, which runs two.
// CHECK-LABEL: // ===== cross_entropy_grad_0.cu =====
// CHECK:       over the row (the row re-read from L2)
// CHECK-NOT:   kMinBlocks
// CHECK-NOT:   staged
// CHECK:       __launch_bounds__(kBlock)
// NVRTC:       launch cross_entropy_grad_0 grid [2, 1, 1] block [1024, 1, 1] smem 0 args
// L2:          launch cross_entropy_grad_0 grid [2, 1, 1] block [1024, 1, 1] smem 0 args
// A cluster's f32 slices (7 x 256 vectors of 32 bytes) fit three CTAs per
// SM where the whole row fitted one.
// CLUSTER-LABEL: // ===== cross_entropy_grad_0.cu =====
// CLUSTER:       constexpr index_t kMinBlocks = 3;
// CLUSTER:       extern __shared__ InVec staged[]; // this CTA's slice, 57344 bytes
// CLUSTER8:      launch cross_entropy_grad_0 grid [16, 1, 1] block [128, 1, 1] smem 28672 args
func.func @forward(%logits: tensor<2x50304xf32>, %t: tensor<2xi64>, %d: tensor<f32>) -> tensor<2x50304xf32> {
  %0 = llmc.cross_entropy_grad sum %logits, %t, %d : (tensor<2x50304xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x50304xf32>
  return %0 : tensor<2x50304xf32>
}
