//===- ClassifierEmitter.cpp - cross_entropy and its gradient in one pass -===//
//
// A classifier group (llmc-fuse-classifier) yields the loss of
// cross_entropy(logits, targets) and its gradient
// cross_entropy_grad(logits, targets, dloss), `mean` or `sum`, as three
// kernels:
//
//   <name>_count   (`mean` only) one block counts the positions whose
//                  target is not ignore_index, in a fixed order, into the
//                  f32 scratch `count`: the normalizer, known before any
//                  gradient is written.
//   <name>_rows    one block per row: the row is loaded once, in vectors
//                  of 8 elements (kept in registers when they fit, else
//                  staged in shared memory when two blocks per SM fit,
//                  else re-read from L2; or, on request, split over a
//                  thread-block cluster: ClassifierCluster.cpp), its
//                  max/sum of exp computed online (exp as ex2.approx);
//                  thread 0 writes the row's loss m + log(s) - x[target] to
//                  the f32 scratch `row_loss`; then every element's
//                  gradient w * (exp(x - m) / s - onehot(target)) is
//                  stored, over the logits when the group has
//                  `llmc.overwrites` (each thread stores the vectors it
//                  loaded, after the block's reduction, and x[target] is
//                  read before it).
//   <name>_reduce  one block sums `row_loss` in a fixed order and divides
//                  by `count` (`mean`): a deterministic loss. When the row
//                  kernel's blocks have this kernel's 1024 threads, its
//                  last row does this instead (a ticket, LastRowReduce):
//                  the same sum in the same order, one launch fewer.
//
// The row kernel (crossEntropyRowsKernel) is also the one of the unfused
// cross_entropy and cross_entropy_grad (LossEmitters.cpp): the same
// expressions (ignore_index, padded `classes` masked to a zero gradient,
// NaN for an out-of-range target) over the elements in the same order, so
// the fused results are bitwise the unfused ones; the count and the sum of
// the row losses are the same fixed-order block sums.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/ClassifierCluster.h"
#include "compiler/codegen/ClassifierRowMath.h"
#include "compiler/codegen/Emitters.h"

#include "dialects/llmc/LlmcOps.h"

#include <algorithm>
#include <cstdlib>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

/// Bytes of one element of a float storage type.
int64_t floatBytes(Type t) { return t.isF32() ? 4 : 2; }

/// Registers (32-bit) a thread may spend on its cached vectors. GPT-2's
/// rows (6288 vectors of 8 bf16 over 1024 threads) would take 28, and ptxas
/// then spills at 64 registers and fits one block per SM: measured on an
/// H100 at [16384, 50304] bf16, the loss and gradient took 2.56 ms with the
/// row cached and 1.92 ms re-reading it from L2 (ClassifierGpuBandwidth),
/// so only short rows (at most 16 registers, no spill) are cached there;
/// longer ones go to shared memory (rowCacheOf).
/// LLMC_CE_ROW_CACHE=registers (cache up to 32, never shared) or none
/// (never cache: the L2 re-read, the kernel before shared staging)
/// overrides it for those comparisons.
int64_t maxCacheRegisters() {
  const char *v = std::getenv("LLMC_CE_ROW_CACHE");
  if (v && std::string(v) == "none")
    return 0;
  if (v && std::string(v) == "registers")
    return 32;
  return 16;
}

/// Where the gradient pass finds the row the statistics pass read.
/// Cluster: a thread-block cluster per row (sm_90), each CTA staging its
/// slice in its own shared memory (ClusterRows below).
enum class RowCache { Registers, Shared, L2, Cluster };

/// An SM's shared memory on sm_90 (H100, H200: 228 KiB, of which a block
/// may take 227), the 1 KiB the driver reserves per block, and the static
/// shared memory of blockOnline and blockSum (3 x 32 floats), rounded up.
constexpr int64_t kSharedPerSm = 228 * 1024;
constexpr int64_t kSharedReservedPerBlock = 1024;
constexpr int64_t kStaticShared = 512;
constexpr int64_t kThreadsPerSm = 2048;
constexpr int64_t kMaxBlocksPerSm = 32;

/// Blocks of `block` threads that fit on an SM, each with `shared` bytes of
/// dynamic shared memory.
int64_t blocksPerSm(int64_t shared, unsigned block) {
  int64_t bySmem =
      kSharedPerSm / (shared + kSharedReservedPerBlock + kStaticShared);
  return std::min({bySmem, kThreadsPerSm / block, kMaxBlocksPerSm});
}

/// Shared memory needs at least two blocks per SM: while one block waits
/// for its row, the other computes (statistics, gradient stores). A row
/// that leaves room for one block only (f32 rows of GPT-2's vocabulary,
/// bf16 ones past about 57K columns) keeps the L2 re-read, which runs two
/// 1024-thread blocks per SM: one block alone would leave the memory idle
/// while it computes.
RowCache rowCacheOf(const CrossEntropyRows &r, int64_t iters, int64_t vec,
                    unsigned block) {
  if (!r.grad)
    return RowCache::L2; // one pass: nothing to keep
  if (iters * vec * floatBytes(r.lt) / 4 <= maxCacheRegisters())
    return RowCache::Registers;
  const char *v = std::getenv("LLMC_CE_ROW_CACHE");
  if (v && (std::string(v) == "none" || std::string(v) == "registers"))
    return RowCache::L2;
  return blocksPerSm(r.cols * floatBytes(r.lt), block) >= 2 ? RowCache::Shared
                                                            : RowCache::L2;
}

/// A row kernel's vectors and threads. Vectors of 8 elements whatever the
/// type (16 bytes of bf16, 32 of f32), so that a row's elements meet in
/// the same order whether the logits are loaded as bf16 or f32: the fused
/// and unfused kernels round alike. Every row cache visits them in that
/// order too (each thread its vectors thread + i * kBlock, i rising), so
/// their results are bitwise the same.
struct RowLayout {
  int64_t vec, vecs, iters;
  unsigned block;
  RowCache cache;
};
RowLayout layoutOf(const CrossEntropyRows &r) {
  RowLayout l;
  l.vec = r.cols % 8 == 0 ? 8 : 1;
  l.vecs = r.cols / l.vec;
  l.block = rowBlockSize(l.vecs);
  l.iters = (l.vecs + l.block - 1) / l.block;
  l.cache = rowCacheOf(r, l.iters, l.vec, l.block);
  return l;
}

/// CTAs per row of the cluster row cache, or 0 where it does not apply.
/// LLMC_CE_ROW_CACHE=cluster (4 CTAs) or clusterN (N of 2, 4, 8, the
/// portable cluster sizes) selects it for rows that would not stay in
/// registers; cluster-fallback is cluster with the body for GPUs without
/// clusters (ClassifierCluster.cpp: bitwise the one-block kernel). Small slices
/// (28 KiB for GPT-2's bf16 rows at N = 4) let 7 CTAs share an SM, so
/// that some load while others reduce or store: one read and one write
/// of HBM, with both in flight (docs/fusion.md "The cluster row cache").
/// Kept only where at least two CTAs fit on an SM (one alone would leave
/// the memory idle while it computes, as for the one-block shared row).
///
/// Without the variable, rows of 2-byte logits that would fall back to the
/// L2 re-read (no room for two one-block rows an SM: vocabularies past
/// about 57K) take a cluster of 4, else 8: Llama 3's [4096, 128256] bf16
/// classifier took 1.069 ms re-reading from L2, 0.783 with 4 CTAs and 0.804
/// with 8 (H100, ClassifierGpuBandwidth.Llama3VocabClassifier, session 10).
/// f32 rows (GPT-2's fp32 step) keep the re-read: not measured.
int64_t clusterOf(const CrossEntropyRows &r) {
  const char *v = std::getenv("LLMC_CE_ROW_CACHE");
  if (!r.grad)
    return 0;
  RowLayout l = layoutOf(r);
  auto fits = [&](int64_t n) -> int64_t {
    if (n == 0 || l.cache == RowCache::Registers || (l.block / 32) % n != 0 ||
        r.positions * n > (int64_t(1) << 30))
      return 0;
    unsigned cta = l.block / n;
    int64_t slice = l.iters * cta * l.vec * floatBytes(r.lt);
    return blocksPerSm((slice + 15) / 16 * 16, cta) >= 2 ? n : 0;
  };
  if (!v)
    return l.cache == RowCache::L2 && floatBytes(r.lt) == 2
               ? (fits(4) ? 4 : fits(8))
               : 0;
  std::string s(v);
  return fits(s == "cluster" || s == "cluster-fallback" ? 4
              : s == "cluster2"                        ? 2
              : s == "cluster4"                        ? 4
              : s == "cluster8"                        ? 8
                                                       : 0);
}

/// The copy of one vector into the shared row and its waits. Vectors of 16
/// bytes and more go through cp.async (sm_80+): each thread issues all its
/// vectors at once, one commit group per vector, and folds vector i as soon
/// as group i has landed, while the later ones are still in flight; only
/// the thread that copied a vector reads it before the block's barrier.
std::string stagingHelpers(bool async) {
  if (!async)
    return R"(// Elements narrower than 16 bytes: plain copies, already visible to the
// thread that made them.
__device__ __forceinline__ void stageVec(InVec *dst, const InVec *src) {
  *dst = *src;
}
__device__ __forceinline__ void commitStaged() {}
__device__ __forceinline__ void waitStaged(int) {}
)";
  std::string s = R"(__device__ __forceinline__ void stageVec(InVec *dst, const InVec *src) {
#if __CUDA_ARCH__ >= 800
  const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  const char *from = reinterpret_cast<const char *>(src);
  for (int k = 0; k < (int)sizeof(InVec); k += 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(to + k),
                 "l"(from + k) : "memory");
#else
  *dst = *src;
#endif
}
__device__ __forceinline__ void commitStaged() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
// Until at most `pending` of this thread's groups are in flight; a constant
// once the loop is unrolled. Past 7 it waits for 7: sooner, never too early.
__device__ __forceinline__ void waitStaged(int pending) {
#if __CUDA_ARCH__ >= 800
  switch (pending) {
)";
  for (int n = 0; n < 7; ++n)
    s += "  case " + std::to_string(n) +
         ":\n    asm volatile(\"cp.async.wait_group " + std::to_string(n) +
         ";\" ::: \"memory\");\n    break;\n";
  s += R"(  default:
    asm volatile("cp.async.wait_group 7;" ::: "memory");
    break;
  }
#endif
}
)";
  return s;
}

} // namespace

EmittedKernel crossEntropyCountKernel(CrossEntropyGradOp op,
                                      const std::string &what,
                                      int64_t positions,
                                      const std::string &name,
                                      unsigned countScratch) {
  Type tt = elementTypeOf(op.getTargets());
  KernelSource cnt(op, name);
  cnt.scheme(what + " (mean), kernel 1: one block counts the positions "
             "that are not ignored into the f32 scratch `count`");
  cnt.constant("kRows", positions, "positions");
  cnt.constant("kBlock", 1024, "threads of the one block");
  cnt.constant("kIgnore", op.getIgnoreIndex(), "ignore_index");
  cnt.staticAssert("kRows < (1 << 24)", "the count is exact in f32");
  cnt.helper(blockReduceHelpers(kBlockSum));
  cnt.kernel("extern \"C\" __global__ void __launch_bounds__(kBlock)\n" +
             name + "(" + inParam(tt, "targets") +
             ", float *__restrict__ count) {\n"
             "  float c = 0.0f;\n"
             "  for (index_t j = threadIdx.x; j < kRows; j += kBlock)\n"
             "    c += targets[j] != kIgnore ? 1.0f : 0.0f;\n"
             "  const float total = blockSum(c);\n"
             "  if (threadIdx.x == 0)\n"
             "    count[0] = total;\n"
             "}\n");
  EmittedKernel k;
  k.name = name;
  k.source = cnt.str();
  k.block = {1024, 1, 1};
  k.args = {KernelArg::operand(1), KernelArg::scratch(countScratch)};
  return k;
}

namespace {

EmittedKernel reduceKernel(CrossEntropyOp op, Type lossType,
                           int64_t positions, bool mean,
                           const std::string &name) {
  KernelSource red(op, name);
  red.use(lossType);
  red.scheme(std::string("classifier (") + (mean ? "mean" : "sum") +
             "), last kernel: one block sums `row_loss` in a fixed order" +
             (mean ? " and divides by `count`" : ""));
  red.constant("kRows", positions, "positions");
  red.constant("kBlock", 1024, "threads of the one block");
  red.helper(blockReduceHelpers(kBlockSum));
  std::string params = "const float *__restrict__ row_loss, ";
  if (mean)
    params += "const float *__restrict__ count, ";
  params += outParam(lossType, "out");
  red.kernel("extern \"C\" __global__ void __launch_bounds__(kBlock)\n" +
             name + "(" + params +
             ") {\n"
             "  float sum = 0.0f;\n"
             "  for (index_t j = threadIdx.x; j < kRows; j += kBlock)\n"
             "    sum += row_loss[j];\n"
             "  const float total = blockSum(sum);\n"
             "  if (threadIdx.x == 0)\n"
             "    out[0] = " +
             storeAs(lossType, mean ? "total / count[0]" : "total") +
             ";\n"
             "}\n");
  EmittedKernel k;
  k.name = name;
  k.source = red.str();
  k.block = {1024, 1, 1};
  k.args = {KernelArg::scratch(0)};
  if (mean)
    k.args.push_back(KernelArg::scratch(1));
  k.args.push_back(KernelArg::result(0));
  return k;
}

} // namespace

CrossEntropyRows::Reduction reductionOf(LossReduction r) {
  return r == LossReduction::mean ? CrossEntropyRows::Reduction::Mean
         : r == LossReduction::sum ? CrossEntropyRows::Reduction::Sum
                                   : CrossEntropyRows::Reduction::None;
}

namespace {

/// The loss reduction done by the row kernel's last row instead of a
/// `_reduce` launch: each row's thread 0 draws a ticket after its
/// `row_loss` store (fenced); the block that draws ticket kRows - 1 sums
/// `row_loss` exactly as reduceKernel does (1024 threads, the same strided
/// order, the same blockSum), so the loss keeps its bits, and puts the
/// ticket back to 0 for the next step (persistent scratch, zero at load;
/// the pattern of ReduceEmitters.cpp's column reduction).
struct LastRowReduce {
  mlir::Type lossType;
  KernelArg ticketArg, outArg;
};

EmittedKernel rowsKernel(const CrossEntropyRows &r,
                         const LastRowReduce *reduce) {
  bool mean = r.reduction == CrossEntropyRows::Reduction::Mean;
  bool none = r.reduction == CrossEntropyRows::Reduction::None;
  RowLayout layout = layoutOf(r);
  int64_t vec = layout.vec, vecs = layout.vecs, iters = layout.iters;
  unsigned block = layout.block;
  RowCache cache = layout.cache;
  // The cluster row cache: kCluster CTAs of ctaThreads threads per row,
  // each staging kIters vectors a thread.
  int64_t cluster = clusterOf(r);
  unsigned ctaThreads = cluster ? block / cluster : block;
  int64_t sliceBytes = iters * ctaThreads * vec * floatBytes(r.lt);
  if (cluster)
    cache = RowCache::Cluster;
  int64_t inAlign = std::min<int64_t>(16, vec * floatBytes(r.lt));
  int64_t outAlign = r.grad ? std::min<int64_t>(16, vec * floatBytes(r.rt)) : 1;
  int64_t rowBytes = r.cols * floatBytes(r.lt);
  int64_t sharedBytes = cache == RowCache::Shared ? (rowBytes + 15) / 16 * 16
                        : cache == RowCache::Cluster ? (sliceBytes + 15) / 16 * 16
                                                     : 0;
  bool staged = cache == RowCache::Shared || cache == RowCache::Cluster;
  int64_t minBlocks = staged ? blocksPerSm(sharedBytes, ctaThreads) : 1;

  KernelSource src(r.op, r.name);
  src.use(r.lt);
  if (r.grad)
    src.use(r.rt);
  if (r.loss && !r.lossToScratch)
    src.use(r.lossType);
  std::string what = r.loss && r.grad ? "cross_entropy and its gradient"
                     : r.loss         ? "cross_entropy"
                                      : "cross_entropy_grad";
  std::string from =
      cache == RowCache::Registers ? " from registers"
      : cache == RowCache::Shared  ? " from shared memory (the row staged once)"
      : cache == RowCache::Cluster
          ? " from shared memory (each CTA of the cluster staging its slice "
            "once)"
          : " (the row re-read from L2)";
  std::string per = cluster ? "one cluster of " + std::to_string(cluster) +
                                  " CTAs per position"
                            : "one block per position";
  src.scheme(what + " (" + (mean ? "mean" : none ? "none" : "sum") +
             "): " + per + "; the row is read in vectors of " +
             std::to_string(vec) + " elements, online max/sum of exp" +
             (r.loss ? std::string(", loss = max + log(sum) - x[target]") +
                           (r.lossToScratch ? " into `row_loss`" : "")
                     : std::string()) +
             (r.grad ? ", then w * (exp(x - max) / sum - onehot(target)) "
                       "over the row" +
                           from
                     : std::string()));
  src.constant("kRows", r.positions, "positions");
  src.constant("kCols", r.cols, "columns of a row");
  src.constant("kClasses", r.classes,
               "real classes; the columns after them are padding");
  src.constant("kVec", vec, "elements per vector");
  src.constant("kVecs", vecs, "vectors per row");
  src.constant("kFullVecs", r.classes / vec,
               "vectors wholly of real classes");
  src.constant("kBlock", block,
               cluster ? "threads per position, over the cluster's CTAs"
                       : "threads per block, one block per position");
  src.constant("kIters", iters, "vectors per thread, at most");
  if (cluster) {
    src.constant("kCluster", cluster, "CTAs per position (a cluster)");
    src.constant("kCtaThreads", ctaThreads, "threads per CTA");
    src.constant("kCtaWarps", ctaThreads / 32, "warps per CTA");
  }
  if (staged)
    src.constant("kMinBlocks", minBlocks,
                 std::string(cluster ? "CTAs" : "blocks") +
                     " per SM the row's shared memory allows (registers "
                     "are capped to match)");
  src.staticAssert("kBlock % 32 == 0 && kBlock <= 1024",
                   "whole warps, one block");
  src.constant("kIgnore", r.ignoreIndex, "ignore_index");
  src.helper(blockReduceHelpers(reduce ? kBlockOnline | kBlockSum
                                       : kBlockOnline));
  if (reduce)
    src.use(reduce->lossType);
  std::string ls = storageType(r.lt), rs = r.grad ? storageType(r.rt) : "";
  std::string vecs_ = "struct alignas(" + std::to_string(inAlign) +
                      ") InVec {\n  " + ls + " v[kVec];\n};\n";
  if (r.grad)
    vecs_ += "struct alignas(" + std::to_string(outAlign) + ") OutVec {\n  " +
             rs + " v[kVec];\n};\n";
  src.helper(vecs_);
  if (ex2Exp())
    src.helper(ex2Helpers());
  if (cluster) {
    const char *v = std::getenv("LLMC_CE_ROW_CACHE");
    if (v && std::string(v) == "cluster-fallback")
      src.helper("#define LLMC_CE_NO_CLUSTERS 1\n");
    src.helper(clusterHelpers());
  }
  if (staged)
    src.helper(stagingHelpers(vec * floatBytes(r.lt) % 16 == 0));

  // Parameters in a fixed order; the logits and the gradient may be one
  // buffer (`llmc.overwrites`): no __restrict__ on either.
  std::string params = "const " + ls + " *logits, " + inParam(r.tt, "targets");
  std::vector<KernelArg> args = {r.logitsArg, r.targetsArg};
  if (r.grad) {
    params += ", " + inParam(r.gt, "dloss");
    args.push_back(r.dlossArg);
    if (mean) {
      params += ", const float *__restrict__ count";
      args.push_back(r.countArg);
    }
  }
  if (r.loss) {
    params += r.lossToScratch ? ", float *__restrict__ row_loss"
                              : ", " + outParam(r.lossType, "out");
    args.push_back(r.lossArg);
  }
  if (r.grad) {
    params += ", " + rs + " *dlogits";
    args.push_back(r.gradArg);
  }
  if (reduce) {
    params += ", unsigned int *__restrict__ ticket, " +
              outParam(reduce->lossType, "out");
    args.push_back(reduce->ticketArg);
    args.push_back(reduce->outArg);
  }
  // With the last-row reduction, thread 0 fences its row's loss and draws
  // the row's ticket (before the gradient's stores, which it need not
  // wait for).
  auto storeLoss = [&](const std::string &v, const std::string &in) {
    std::string store = (r.lossToScratch
                             ? "row_loss[row] = " + v
                             : "out[row] = " + storeAs(r.lossType, v)) +
                        ";\n";
    if (!reduce)
      return in + "if (threadIdx.x == 0)\n" + in + "  " + store;
    return in + "if (threadIdx.x == 0) {\n" + in + "  " + store + in +
           "  __threadfence();\n" + in +
           "  sawLast |= atomicAdd(ticket, 1u) == (unsigned int)(kRows - "
           "1);\n" +
           in + "}\n";
  };
  std::string weight;
  if (r.grad)
    weight = none   ? loadAs(r.gt, "dloss[row]")
             : mean ? loadAs(r.gt, "dloss[0]") + " / count[0]"
                    : loadAs(r.gt, "dloss[0]");

  bool ex2 = ex2Exp();
  std::string load = loadAs(r.lt, "in.v[e]");
  std::string fold = rowFold(ex2, load);
  std::string grads =
      r.grad ? rowGrads(ex2, load,
                        [&](const std::string &v) { return storeAs(r.rt, v); })
             : std::string();
  // Fully unrolled for cp.async, whose waits need constant group counts;
  // 2-byte plain copies (odd rows: up to 57 a thread) would spill then.
  bool async = vec * floatBytes(r.lt) % 16 == 0;
  std::string unroll = staged && !async
                           ? "#pragma unroll 8\n"
                           : "#pragma unroll\n";
  auto unrolled = [&](const std::string &inner,
                      const std::string &thread = "threadIdx.x") {
    return unroll +
           "    for (int i = 0; i < kIters; ++i) {\n"
           "      const index_t v = " +
           thread + " + i * kBlock;\n" + inner + "    }\n";
  };
  if (cluster) {
    ClusterRowParts parts;
    parts.fold = fold;
    parts.grads = grads;
    parts.weight = weight;
    parts.zero = storeAs(r.rt, "0.0f");
    parts.logitType = ls;
    parts.loss = r.loss;
    parts.sharedBytes = sharedBytes;
    parts.storeLoss = [&](const std::string &v) {
      std::string store = r.lossToScratch
                              ? "row_loss[row] = " + v + ";"
                              : "out[row] = " + storeAs(r.lossType, v) + ";";
      if (!reduce)
        return store + "\n";
      // The last-row reduction: fence the loss, draw the row's ticket.
      return "{\n      " + store +
             "\n      __threadfence();\n"
             "      sawLast |= atomicAdd(ticket, 1u) == (unsigned int)(kRows "
             "- 1);\n    }\n";
    };
    if (reduce)
      parts.outStore = "out[0] = " +
                       storeAs(reduce->lossType,
                               mean ? "total / count[0]" : "total") +
                       ";";
    parts.loadLogit = [&](const std::string &e) { return loadAs(r.lt, e); };
    parts.unrolled = unrolled;
    src.kernel("extern \"C\" __global__ void " + clusterRowsAttributes() +
               "\n" + r.name + "(" + params + ") {\n" +
               clusterRowsBody(parts));
    EmittedKernel k;
    k.name = r.name;
    k.source = src.str();
    k.grid = {static_cast<unsigned>(r.positions * cluster), 1, 1};
    k.block = {ctaThreads, 1, 1};
    k.sharedBytes = static_cast<unsigned>(sharedBytes);
    k.args = std::move(args);
    return k;
  }

  std::string body;
  if (reduce)
    body += "  bool sawLast = false; // thread 0: this block drew the last "
            "ticket\n";
  if (cache == RowCache::Shared)
    body += "  // The row, staged once: kCols elements (" +
            std::to_string(sharedBytes) +
            " bytes of dynamic shared memory).\n"
            "  extern __shared__ InVec staged[];\n";
  body += "  for (index_t row = blockIdx.x; row < kRows; row += gridDim.x) {\n"
          "    const InVec *x = reinterpret_cast<const InVec *>(logits + row "
          "* kCols);\n";
  if (r.grad)
    body += "    OutVec *d = reinterpret_cast<OutVec *>(dlogits + row * "
            "kCols);\n";
  body += "    const long long target = targets[row];\n"
          "    if (target == kIgnore) {\n";
  if (r.grad)
    body += "      OutVec zero;\n"
            "      for (int e = 0; e < kVec; ++e)\n"
            "        zero.v[e] = " +
            storeAs(r.rt, "0.0f") +
            ";\n"
            "      for (index_t v = threadIdx.x; v < kVecs; v += kBlock)\n"
            "        d[v] = zero;\n";
  if (r.loss)
    body += storeLoss("0.0f", "      ");
  body += "      continue; // uniformly for the block\n"
          "    }\n"
          "    const bool valid = target >= 0 && target < kClasses;\n";
  // x[target]: from global memory before the block's reduction (after it,
  // the row may be overwritten), or from the staged row after it (the
  // barriers in blockOnline make every thread's copies visible).
  if (r.loss && cache != RowCache::Shared)
    body += "    // x[target], read before the block's reduction: after it, "
            "the\n    // row may be overwritten.\n"
            "    const float xt = threadIdx.x == 0 && valid ? " +
            loadAs(r.lt, "logits[row * kCols + target]") + " : 0.0f;\n";
  body += "    float m = -INFINITY, s = 0.0f;\n";
  switch (cache) {
  case RowCache::Registers:
    body += "    InVec cached[kIters];\n" +
            unrolled("      if (v < kVecs) {\n"
                     "        const InVec in = x[v];\n"
                     "        cached[i] = in;\n" +
                     fold + "      }\n");
    break;
  case RowCache::Shared:
    // Every commit group is committed by every thread (empty past the
    // row's end), so that group i is the i-th vector for all of them.
    body += "    // Every vector of this thread in flight at once, one commit "
            "group each.\n" +
            unrolled("      if (v < kVecs)\n"
                     "        stageVec(&staged[v], &x[v]);\n"
                     "      commitStaged();\n") +
            unrolled("      waitStaged(kIters - 1 - i);\n"
                     "      if (v < kVecs) {\n"
                     "        const InVec in = staged[v];\n" +
                     fold + "      }\n");
    break;
  case RowCache::L2:
    body += "    for (index_t v = threadIdx.x; v < kVecs; v += kBlock) {\n"
            "      {\n"
            "        const InVec in = x[v];\n" +
            fold + "      }\n    }\n";
    break;
  case RowCache::Cluster: // its own kernel, returned above
    break;
  }
  body += "    blockOnline(m, s);\n";
  if (r.loss && cache == RowCache::Shared)
    body += "    const float xt = threadIdx.x == 0 && valid ? " +
            loadAs(r.lt, "reinterpret_cast<const " + ls +
                             " *>(staged)[target]") +
            " : 0.0f;\n";
  if (r.loss)
    body += storeLoss("valid ? m + logf(s) - xt : NAN", "    ");
  if (r.grad) {
    body += "    const float w = valid ? " + weight +
            " : NAN;\n"
            "    const float inv = 1.0f / s;\n";
    switch (cache) {
    case RowCache::Registers:
      body += unrolled("      if (v < kVecs) {\n"
                       "        const InVec in = cached[i];\n" +
                       grads + "      }\n");
      break;
    case RowCache::Shared:
      body += unrolled("      if (v < kVecs) {\n"
                       "        const InVec in = staged[v];\n" +
                       grads + "      }\n") +
              "    // The next row's copies land where thread 0 read "
              "x[target].\n    __syncthreads();\n";
      break;
    case RowCache::L2:
      body += "    for (index_t v = threadIdx.x; v < kVecs; v += kBlock) {\n"
              "      {\n"
              "        const InVec in = x[v];\n" +
              grads + "      }\n    }\n";
      break;
    case RowCache::Cluster: // its own kernel, returned above
      break;
    }
  }
  body += "  }\n";
  if (reduce) {
    std::string mean_ = mean ? "total / count[0]" : "total";
    body += "  __shared__ bool last;\n"
            "  if (threadIdx.x == 0)\n"
            "    last = sawLast;\n"
            "  __syncthreads();\n"
            "  if (!last)\n"
            "    return;\n"
            "  // Every row's loss, through L2 (L1 is not coherent), in "
            "reduceKernel's order.\n"
            "  __threadfence();\n"
            "  float sum = 0.0f;\n"
            "  for (index_t j = threadIdx.x; j < kRows; j += kBlock)\n"
            "    sum += __ldcg(&row_loss[j]);\n"
            "  const float total = blockSum(sum);\n"
            "  if (threadIdx.x == 0) {\n"
            "    out[0] = " +
            storeAs(reduce->lossType, mean_) +
            ";\n"
            "    *ticket = 0;\n"
            "  }\n";
  }
  body += "}\n";
  std::string bounds = cache == RowCache::Shared ? "kBlock, kMinBlocks"
                                                 : "kBlock";
  src.kernel("extern \"C\" __global__ void __launch_bounds__(" + bounds +
             ")\n" + r.name + "(" + params + ") {\n" + body);
  EmittedKernel k;
  k.name = r.name;
  k.source = src.str();
  k.grid = {static_cast<unsigned>(std::min<int64_t>(r.positions, 1 << 30)), 1,
            1};
  k.block = {block, 1, 1};
  k.sharedBytes = static_cast<unsigned>(sharedBytes);
  k.args = std::move(args);
  return k;
}

} // namespace

EmittedKernel crossEntropyRowsKernel(const CrossEntropyRows &r) {
  return rowsKernel(r, nullptr);
}

LogicalResult emitClassifier(CrossEntropyOp ce, CrossEntropyGradOp grad,
                             Type lt, Type rt, const EmitContext &ctx,
                             OpLowering &out) {
  Shape logits = shapeOf(grad.getLogits());
  int64_t positions = numElements(shapeOf(grad.getTargets()));
  Type lossType = elementTypeOf(ce.getResult());
  if (!isFloatType(lt) || !isFloatType(rt) || !isFloatType(lossType))
    return grad.emitError("codegen: a classifier group reads and writes "
                          "float logits and loss");
  bool mean = grad.getReduction() == LossReduction::mean;
  out.kind = OpLowering::Kind::Kernels;
  out.scratch.push_back({"row_loss", DType::F32, {positions}});
  if (mean) {
    out.scratch.push_back({"count", DType::F32, {1}});
    out.kernels.push_back(crossEntropyCountKernel(
        grad, "classifier", positions, ctx.name + "_count", 1));
  }
  CrossEntropyRows r;
  r.op = grad;
  r.name = ctx.name + "_rows";
  r.reduction = reductionOf(grad.getReduction());
  r.positions = positions;
  r.cols = logits.back();
  r.classes = grad.getClasses() ? *grad.getClasses() : r.cols;
  r.ignoreIndex = grad.getIgnoreIndex();
  r.lt = lt;
  r.tt = elementTypeOf(grad.getTargets());
  r.loss = r.grad = true;
  r.lossToScratch = true;
  r.gt = elementTypeOf(grad.getGrad());
  r.rt = rt;
  r.logitsArg = KernelArg::operand(0);
  r.targetsArg = KernelArg::operand(1);
  r.dlossArg = KernelArg::operand(2);
  r.countArg = KernelArg::scratch(1);
  r.lossArg = KernelArg::scratch(0);
  r.gradArg = KernelArg::result(1);
  // The last row reduces the losses when the row kernel's blocks have
  // reduceKernel's 1024 threads (rows of 4096 vectors and more), so that
  // the sum keeps its order (a cluster's CTA plays them in turns:
  // ClassifierCluster.cpp); narrower rows keep the `_reduce` launch.
  if (rowBlockSize(r.cols % 8 == 0 ? r.cols / 8 : r.cols) == 1024) {
    ScratchBuffer ticket{"tickets", DType::I32, {1}};
    ticket.persistent = true;
    LastRowReduce reduce{lossType,
                         KernelArg::scratch(out.scratch.size()),
                         KernelArg::result(0)};
    out.scratch.push_back(std::move(ticket));
    out.kernels.push_back(rowsKernel(r, &reduce));
    return success();
  }
  out.kernels.push_back(crossEntropyRowsKernel(r));
  out.kernels.push_back(
      reduceKernel(ce, lossType, positions, mean, ctx.name + "_reduce"));
  return success();
}

} // namespace llmc::codegen
