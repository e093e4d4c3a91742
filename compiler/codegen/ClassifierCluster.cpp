//===- ClassifierCluster.cpp - A cross-entropy row over a cluster ---------===//
//
// The kBlock threads of the one-block row kernel are split into kCluster
// CTAs of kCtaThreads (whole warps): thread t of the CTA of rank c plays
// thread c * kCtaThreads + t (`tid`), so each CTA stages and folds exactly
// the vectors those threads fold (tid + i * kBlock, i rising), and the
// warp partials meet in blockOnline's butterfly: lane l of every warp
// reads global warp l's partial from CTA l / kCtaWarps (mapa +
// ld.shared::cluster). Every thread gets the one-block kernel's bits.
//
// Clusters need sm_90. A bundle's kernels are recompiled from source on
// another GPU (Compile.cpp), so the source also holds the body without
// clusters: CTA 0 of each cluster does the row alone, each thread playing
// its kCluster threads in turn, the row re-read from L2, the other CTAs
// leave at once; the same order, the same bits, more slowly. Defining
// LLMC_CE_NO_CLUSTERS (LLMC_CE_ROW_CACHE=cluster-fallback) selects it on
// sm_90 too, so that its bits are checked on the GPUs we test on.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/ClassifierCluster.h"

namespace llmc::codegen {

std::string clusterHelpers() {
  return R"(#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(LLMC_CE_NO_CLUSTERS)
#define LLMC_CE_CLUSTERS 1
// The CTA's rank in its cluster and the cluster's index (a row each).
__device__ __forceinline__ unsigned clusterRank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned clusterIndex() {
  unsigned r;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
  return r;
}
// The split cluster barrier: arrive releases this thread's shared-memory
// writes to the cluster, wait acquires every CTA's.
__device__ __forceinline__ void clusterArrive() {
  asm volatile("barrier.cluster.arrive.aligned;" ::: "memory");
}
__device__ __forceinline__ void clusterWait() {
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}
// The float at `p` in the shared memory of the cluster's CTA `rank`.
__device__ __forceinline__ float loadRemote(const float *p, unsigned rank) {
  const unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(p));
  unsigned remote;
  float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote) : "r"(local), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];"
               : "=f"(v) : "r"(remote) : "memory");
  return v;
}
// blockOnline over the cluster. Leaves the barrier arrived-at once more:
// the caller waits on it before leaving, so that no CTA exits while
// another still reads its partials.
__device__ void clusterOnline(float &m, float &s) {
  __shared__ float partial[2][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  warpOnline(m, s);
  if (lane == 0) {
    partial[0][warp] = m;
    partial[1][warp] = s;
  }
  // Every CTA's partials written; also this CTA's staged slice, for the
  // thread that reads x[target] from it.
  clusterArrive();
  clusterWait();
  const bool has = lane < (int)(kBlock / 32);
  const unsigned rank = lane / kCtaWarps, w = lane % kCtaWarps;
  m = has ? loadRemote(&partial[0][w], rank) : -INFINITY;
  s = has ? loadRemote(&partial[1][w], rank) : 0.0f;
  warpOnline(m, s);
  clusterArrive();
}
#define LLMC_CE_CLUSTER_DIMS __cluster_dims__(kCluster, 1, 1)
#else
#define LLMC_CE_CLUSTER_DIMS
#endif
)";
}

std::string clusterRowsAttributes() {
  return "LLMC_CE_CLUSTER_DIMS __launch_bounds__(kCtaThreads, kMinBlocks)";
}

namespace {

/// The zero gradient of an ignored row over this thread's vectors and the
/// loss 0 from the thread that plays thread 0; then the `else` of a row
/// that is not ignored (no early return: the last-row reduction follows).
std::string ignoredRow(const ClusterRowParts &p, const std::string &first,
                       const std::string &step) {
  std::string s = "  if (target == kIgnore) { // uniformly for the row: no "
                  "barrier\n"
                  "    OutVec zero;\n"
                  "    for (int e = 0; e < kVec; ++e)\n"
                  "      zero.v[e] = " +
                  p.zero +
                  ";\n"
                  "    for (index_t v = " +
                  first + "; v < kVecs; v += " + step +
                  ")\n"
                  "      d[v] = zero;\n";
  if (p.loss)
    s += "    if (" + first + " == 0) " + p.storeLoss("0.0f");
  return s + "  } else {\n";
}

std::string rowPointers() {
  return "  const InVec *x = reinterpret_cast<const InVec *>(logits + row * "
         "kCols);\n"
         "  OutVec *d = reinterpret_cast<OutVec *>(dlogits + row * kCols);\n"
         "  const long long target = targets[row];\n";
}

std::string clusterBody(const ClusterRowParts &p) {
  std::string slot = "staged[i * kCtaThreads + threadIdx.x]";
  std::string b = "  extern __shared__ InVec staged[]; // this CTA's slice, " +
                  std::to_string(p.sharedBytes) +
                  " bytes\n"
                  "  const index_t row = clusterIndex();\n"
                  "  const unsigned rank = clusterRank();\n"
                  "  const unsigned tid = rank * kCtaThreads + threadIdx.x;\n" +
                  rowPointers() + ignoredRow(p, "tid", "kBlock");
  b += "  const bool valid = target >= 0 && target < kClasses;\n"
       "  float m = -INFINITY, s = 0.0f;\n"
       "  // Every vector of this thread in flight at once, one commit group "
       "each.\n" +
       p.unrolled("      if (v < kVecs)\n"
                  "        stageVec(&" +
                      slot +
                      ", &x[v]);\n"
                      "      commitStaged();\n",
                  "tid") +
       p.unrolled("      waitStaged(kIters - 1 - i);\n"
                  "      if (v < kVecs) {\n"
                  "        const InVec in = " +
                      slot + ";\n" + p.fold + "      }\n",
                  "tid") +
       "  clusterOnline(m, s);\n";
  if (p.loss)
    b += "  // x[target] lies in the slice of the CTA whose thread folded its\n"
         "  // vector; an invalid target's NaN loss is CTA 0's.\n"
         "  const index_t tv = valid ? target / kVec : 0;\n"
         "  if (threadIdx.x == 0 && rank == (unsigned)((tv % kBlock) / "
         "kCtaThreads)) {\n"
         "    const float xt = valid ? " +
         p.loadLogit("reinterpret_cast<const " + p.logitType +
                     " *>(&staged[(tv / kBlock) * kCtaThreads + tv % "
                     "kCtaThreads])[target % kVec]") +
         " : 0.0f;\n    " + p.storeLoss("valid ? m + logf(s) - xt : NAN") +
         "  }\n";
  return b + "  const float w = valid ? " + p.weight +
         " : NAN;\n"
         "  const float inv = 1.0f / s;\n" +
         p.unrolled("      if (v < kVecs) {\n"
                    "        const InVec in = " +
                        slot + ";\n" + p.grads + "      }\n",
                    "tid") +
         "  // No CTA leaves while another may still read its partials.\n"
         "  clusterWait();\n"
         "  }\n";
}

/// Without clusters: CTA 0 plays the kCluster CTAs in turn (c), their
/// warp partials at c * kCtaWarps + warp, as clusterOnline reads them.
std::string fallbackBody(const ClusterRowParts &p) {
  std::string b = "  if (blockIdx.x % kCluster != 0)\n"
                  "    return;\n"
                  "  const index_t row = blockIdx.x / kCluster;\n" +
                  rowPointers() + ignoredRow(p, "threadIdx.x", "kCtaThreads");
  b += "  const bool valid = target >= 0 && target < kClasses;\n";
  if (p.loss)
    b += "  // x[target], read before any of the row is overwritten.\n"
         "  const float xt = threadIdx.x == 0 && valid ? " +
         p.loadLogit("logits[row * kCols + target]") + " : 0.0f;\n";
  b += "  __shared__ float partial[2][32];\n"
       "  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;\n"
       "  float m, s;\n"
       "  for (int c = 0; c < kCluster; ++c) {\n"
       "    const unsigned tid = c * kCtaThreads + threadIdx.x;\n"
       "    m = -INFINITY, s = 0.0f;\n"
       "    for (int i = 0; i < kIters; ++i) {\n"
       "      const index_t v = tid + i * kBlock;\n"
       "      if (v < kVecs) {\n"
       "        const InVec in = x[v];\n" +
       p.fold +
       "      }\n"
       "    }\n"
       "    warpOnline(m, s);\n"
       "    if (lane == 0) {\n"
       "      partial[0][c * kCtaWarps + warp] = m;\n"
       "      partial[1][c * kCtaWarps + warp] = s;\n"
       "    }\n"
       "  }\n"
       "  __syncthreads();\n"
       "  const bool has = lane < (int)(kBlock / 32);\n"
       "  m = has ? partial[0][lane] : -INFINITY;\n"
       "  s = has ? partial[1][lane] : 0.0f;\n"
       "  warpOnline(m, s);\n";
  if (p.loss)
    b += "  if (threadIdx.x == 0) " +
         p.storeLoss("valid ? m + logf(s) - xt : NAN");
  return b + "  const float w = valid ? " + p.weight +
         " : NAN;\n"
         "  const float inv = 1.0f / s;\n"
         "  for (int c = 0; c < kCluster; ++c) {\n"
         "    const unsigned tid = c * kCtaThreads + threadIdx.x;\n"
         "    for (int i = 0; i < kIters; ++i) {\n"
         "      const index_t v = tid + i * kBlock;\n"
         "      if (v < kVecs) {\n"
         "        const InVec in = x[v];\n" +
         p.grads +
         "      }\n"
         "    }\n"
         "  }\n"
         "  }\n";
}

/// reduceKernel's sum in the CTA that drew the last ticket: its
/// kCtaThreads threads play the 1024 of reduceKernel in kCluster turns
/// (c), each turn's warp sums at c * kCtaWarps + warp, then blockSum's
/// last butterfly: the same order, the same bits.
std::string lastRowSum(const ClusterRowParts &p) {
  return "  __shared__ bool last;\n"
         "  if (threadIdx.x == 0)\n"
         "    last = sawLast;\n"
         "  __syncthreads();\n"
         "  if (!last)\n"
         "    return;\n"
         "  // Every row's loss, through L2 (L1 is not coherent).\n"
         "  __threadfence();\n"
         "  __shared__ float sums[32];\n"
         "  const int sumLane = threadIdx.x % 32, sumWarp = threadIdx.x / 32;\n"
         "  for (int c = 0; c < kCluster; ++c) {\n"
         "    float sum = 0.0f;\n"
         "    for (index_t j = c * kCtaThreads + threadIdx.x; j < kRows; j += "
         "kBlock)\n"
         "      sum += __ldcg(&row_loss[j]);\n"
         "    sum = warpSum(sum);\n"
         "    if (sumLane == 0)\n"
         "      sums[c * kCtaWarps + sumWarp] = sum;\n"
         "  }\n"
         "  __syncthreads();\n"
         "  const float total = warpSum(sumLane < (int)(kBlock / 32) ? "
         "sums[sumLane] : 0.0f);\n"
         "  if (threadIdx.x == 0) {\n"
         "    " +
         p.outStore +
         "\n"
         "    *ticket = 0;\n"
         "  }\n";
}

} // namespace

std::string clusterRowsBody(const ClusterRowParts &p) {
  std::string b;
  if (!p.outStore.empty())
    b += "  bool sawLast = false; // this CTA drew the last ticket\n";
  b += "#ifdef LLMC_CE_CLUSTERS\n" + clusterBody(p) +
       "#else\n  // Without clusters: CTA 0 of each cluster does the row "
       "(ClassifierCluster.cpp).\n" +
       fallbackBody(p) + "#endif\n";
  if (!p.outStore.empty())
    b += lastRowSum(p);
  return b + "}\n";
}

} // namespace llmc::codegen
