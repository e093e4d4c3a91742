//===- NormGradWarpKernel.cpp - The one-launch norm-gradient kernel -------===//
//
// layer_norm_grad and rms_norm_grad over rows of 4k <= 1024 elements
// (fusion::kMaxWarpNormGradRow: x, dy and two parameter-gradient
// accumulators, 4 x 32 floats per lane at 1024), one launch:
//   <name>   kPartials warps (8 per block) stride over the rows, a row per
//            warp in registers; per column f32 sums of the parameter
//            gradients (and of a RowFused group's column sums) for the
//            warp's rows. Then, in the same launch, deterministically: a
//            block adds its 8 warps' sums in warp order into its row of
//            `partials`; the last block of each run of kGroupBlocks (a
//            ticket per run: the persistent i32 `tickets`, zero at load,
//            reset by that block) adds the run's rows in block order; the
//            last of those (one more ticket) adds the runs in order and
//            writes the results.
// Measured variants: warpGradVariant.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/NormGradParts.h"

#include "dialects/llmc/LlmcOps.h"

#include <algorithm>
#include <cstdlib>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

/// The warp kernel's blocks take tickets in runs of this many; the last
/// block of a run adds the run's sums (8 rows of partials, L2-resident),
/// the last run's adds the runs (16 for 128 blocks).
constexpr int64_t kGroupBlocks = 8;

/// The warp kernel's variants. All warps start together and keep step:
/// each loads its row, reduces, then stores. Measured on an H100 (session
/// 8, NormGradGpuTiming, ln_2's gradient with the bias column sum, bf16,
/// [16384, 768], 201 MB): session 7's kernel 0.0919 ms (75% of the measured
/// 2924 GB/s copy); with the ticketed tail's adds unrolled over the run's
/// blocks, so that their L2 loads are in flight together (the same order
/// of additions: the bits do not change), 0.0911 ms: the default. An L2
/// prefetch of each warp's next row (prefetch.L2 at the top of a row) made
/// it slower, 0.1032 ms (two rows ahead 0.1210 ms). LLMC_NORM_GRAD_KERNEL
/// picks a variant for such measurements:
///   session7  the tail's loop not unrolled;
///   prefetch  the L2 prefetch one row ahead;
///   smem      the column accumulators in shared memory instead of
///             registers (126 registers at d 768 with three sums), blocks
///             of 4 warps, 4 blocks an SM: 16 warps an SM instead of 8;
///             2048 warps (other sums' orders than the default's), runs
///             of 16 blocks;
///   early     a RowFused group's epilogue row inputs (ln_2's residual
///             gradient) loaded with x and dy (RowFusedEmitters.cpp).
struct WarpGradVariant {
  int ahead = 0;
  bool unrolledTail = true;
  bool sharedAcc = false;
  unsigned block = 256;     // threads
  int64_t maxWarps = 1024;  // partial sums per column
  int minBlocks = 1;        // __launch_bounds__ blocks per SM
  int64_t groupBlocks = kGroupBlocks;
};

/// Static shared memory a block may take.
constexpr int64_t kMaxStaticShared = 48 * 1024;

WarpGradVariant warpGradVariant(int64_t sums, int64_t cols) {
  WarpGradVariant v;
  const char *e = std::getenv("LLMC_NORM_GRAD_KERNEL");
  std::string name = e ? e : "";
  if (name == "smem" && sums * 4 * cols * 4 <= kMaxStaticShared) {
    v.sharedAcc = true;
    v.block = 128;
    v.maxWarps = 2048;
    v.minBlocks = 4;
    v.groupBlocks = 16; // 32 runs of 512 blocks
  }
  if (name == "session7")
    v.unrolledTail = false;
  else if (name == "prefetch")
    v.ahead = 1;
  return v;
}

std::string vec4(Type t) { return "Vec<" + storageType(t) + ", 4>"; }

/// Kernel 1 of a norm gradient over rows of 4k <= kMaxWarpNormGradRow elements:
/// kPartials warps stride over the rows, one row per warp at a time, in
/// 4-element vectors kept in registers (x, dy, and per column the sums of
/// dy * xhat and dy over the warp's rows); statistics as the forward's
/// warp kernel (mean, then squared deviations, warp butterflies), then
/// mean(g) and mean(g * xhat) the same way. Each warp writes its partial
/// sums into shared memory; the block's sum goes to its row of `partials`,
/// and the tickets' last blocks add those up (the file's header).
EmittedKernel warpNormGradRows(Operation *op, const EmitContext &ctx,
                               const NormGradParts &p, Rows r,
                               const std::string &rowsName, int64_t partials,
                               const WarpRowIO &io) {
  std::vector<ParamGrad> grads = paramGrads(p, &io);
  WarpGradVariant variant =
      warpGradVariant(static_cast<int64_t>(grads.size()), r.cols);
  unsigned blockThreads = variant.block;
  bool sharedAcc = variant.sharedAcc && !grads.empty();
  const char *what = p.center ? "layer_norm_grad" : "rms_norm_grad";
  KernelSource src(op, rowsName);
  src.scheme(std::string(what) + ": " + std::to_string(partials) +
             " warps stride over the rows, one row per warp in registers "
             "(4-element vectors); statistics recomputed (" +
             (p.center ? "mean, then squared deviations" : "sum of squares") +
             ", warp butterflies), then dx = rstd * (g - " +
             (p.center ? "mean(g) - " : "") +
             "xhat * mean(g * xhat)), g = dy * w");
  int64_t blocks = partials / (blockThreads / 32);
  int64_t runs = (blocks + variant.groupBlocks - 1) / variant.groupBlocks;
  if (sharedAcc)
    src.scheme("the column sums in shared memory (a float4 per lane and "
               "chunk, read and written around the stores), " +
               std::to_string(variant.minBlocks) + " blocks an SM");
  if (!grads.empty())
    src.scheme("each warp adds up its rows' parameter gradients" +
               std::string(io.columnSums.empty()
                               ? ""
                               : " and the column sums of its row values") +
               " per column in registers; the block adds its warps in "
               "order (shared memory) into its row of the f32 scratch "
               "`partials`; the last block of each run of kGroupBlocks "
               "(tickets) adds the run's rows in order, the last run's "
               "block adds the runs in order: one launch, deterministic, "
               "no atomics on data");
  if (variant.ahead > 0)
    src.scheme("each warp asks L2 for its row kAhead of its rows later "
               "(prefetch.L2), so that the DRAM streams while the warps "
               "reduce and store");
  if (!io.scheme.empty())
    src.scheme(io.scheme);
  src.constant("kRows", r.rows, "rows");
  src.constant("kCols", r.cols, "elements per row");
  src.constant("kBlock", blockThreads, "threads per block, one warp per row");
  src.constant("kPartials", partials,
               "warps, " + std::to_string(blockThreads / 32) + " per block");
  if (!grads.empty()) {
    src.constant("kBlocks", blocks, "blocks");
    src.constant("kGroupBlocks", variant.groupBlocks, "blocks per ticket run");
    src.constant("kRuns", runs, "ticket runs");
    src.constant("kSums", static_cast<int64_t>(grads.size()),
                 "column sums (parameter gradients first)");
  }
  src.indexRange(r.rows * r.cols);
  src.floatConstant("kEps", p.epsilon, "epsilon");
  src.staticAssert("kCols % 4 == 0 && kBlock % 32 == 0",
                   "whole vectors, whole warps");
  for (Type ty : io.types)
    src.use(ty);
  if (variant.ahead > 0) {
    src.constant("kAhead", variant.ahead, "rows of a warp prefetched ahead");
    src.helper(warpRowHelpers() + warpRowPrefetchHelper() + io.helpers);
  } else {
    src.helper(warpRowHelpers() + io.helpers);
  }
  std::string prefetch;
  if (variant.ahead > 0) {
    // The first row prefetches all kAhead rows after it, later ones the
    // kAhead-th.
    prefetch = "    for (int a = row == warp ? 1 : kAhead; a <= kAhead; ++a)\n"
               "      if (row + a * kPartials < kRows) {\n"
               "        const index_t next = row + a * kPartials;\n";
    for (const auto &[name, type] : io.rowReads)
      prefetch += "        prefetchL2(" + name + " + next * kCols, kCols * (int)sizeof(*" + name + "), lane);\n";
    prefetch += "      }\n";
  }

  std::string sig = io.params;
  std::vector<KernelArg> args = io.args;
  std::string g = "dy[u]", wload;
  if (p.weight) {
    Type wt = elementTypeOf(p.weight);
    src.use(wt);
    sig += ", " + inParam(wt, "weight");
    args.push_back(io.operandArgs[2]);
    wload = "        const " + vec4(wt) + " wv = reinterpret_cast<const " +
            vec4(wt) + " *>(weight)[c];\n";
    g = "dy[u] * " + loadAs(wt, "wv.v[e]");
  }
  sig += ", " + io.outParams;
  args.insert(args.end(), io.outArgs.begin(), io.outArgs.end());
  if (!grads.empty()) {
    sig += ", float *__restrict__ partials, unsigned int *__restrict__ "
           "tickets";
    args.push_back(KernelArg::scratch(0));
    args.push_back(KernelArg::scratch(1));
    for (const ParamGrad &pg : grads) {
      src.use(pg.type);
      sig += ", " + outParam(pg.type, pg.name);
      args.push_back(pg.arg);
    }
  }
  // u = 4 * i + e indexes a lane's values: chunk i, element e.
  std::string forEach = "#pragma unroll\n"
                        "    for (int i = 0; i < kPerLane; ++i) {\n"
                        "      const int c = lane + 32 * i;\n"
                        "      if (c < kChunks) {\n";
  std::string accDecl, accAdd, accStore, finalStore, accLoad, accSave;
  if (sharedAcc)
    accDecl = "  __shared__ __align__(16) float acc[kSums][kWarps][kCols];\n"
              "  const int wib = threadIdx.x / 32;\n"
              "  for (int c = lane; c < kChunks; c += 32)\n"
              "    for (int s = 0; s < kSums; ++s)\n"
              "      reinterpret_cast<float4 *>(acc[s][wib])[c] = "
              "make_float4(0.0f, 0.0f, 0.0f, 0.0f);\n";
  for (unsigned slot = 0; slot < grads.size(); ++slot) {
    std::string acc = grads[slot].name + "Acc";
    std::string at = std::to_string(slot);
    if (sharedAcc) {
      // Lane-private: a lane reads and writes only its own chunks.
      std::string cell = "reinterpret_cast<float4 *>(acc[" + at + "][wib])[c]";
      accLoad += "        float4 " + acc + " = " + cell + ";\n";
      accAdd += "          reinterpret_cast<float *>(&" + acc + ")[e] += " +
                grads[slot].add + ";\n";
      accSave += "        " + cell + " = " + acc + ";\n";
      accStore += "  for (int j = threadIdx.x; j < kCols; j += kBlock) {\n"
                  "    float t = 0.0f;\n"
                  "#pragma unroll\n"
                  "    for (int w = 0; w < kWarps; ++w)\n"
                  "      t += acc[" + at + "][w][j];\n"
                  "    partials[(" + at +
                  " * kStride + blockIdx.x) * kCols + j] = t;\n"
                  "  }\n";
    }
    std::string out = grads[slot].name;
    Type t = grads[slot].type;
    finalStore += "    if (s == " + at + ") {\n" + "      " + out +
                  "[4 * c] = " + storeAs(t, "t.x") + ";\n      " + out +
                  "[4 * c + 1] = " + storeAs(t, "t.y") + ";\n      " + out +
                  "[4 * c + 2] = " + storeAs(t, "t.z") + ";\n      " + out +
                  "[4 * c + 3] = " + storeAs(t, "t.w") + ";\n    }\n";
    if (sharedAcc)
      continue;
    accDecl += "  float " + acc + "[kPerLane * 4];\n" +
               "#pragma unroll\n"
               "  for (int u = 0; u < kPerLane * 4; ++u)\n    " +
               acc + "[u] = 0.0f;\n";
    accAdd += "          " + acc + "[u] += " + grads[slot].add + ";\n";
    // The block's warps in warp order, one slot at a time through `red`.
    accStore +=
        "#pragma unroll\n"
        "  for (int i = 0; i < kPerLane; ++i) {\n"
        "    const int c = lane + 32 * i;\n"
        "    if (c < kChunks)\n"
        "      reinterpret_cast<float4 *>(red[wib])[c] = make_float4(" +
        acc + "[4 * i], " + acc + "[4 * i + 1], " + acc + "[4 * i + 2], " +
        acc + "[4 * i + 3]);\n"
        "  }\n"
        "  __syncthreads();\n"
        "  for (int j = threadIdx.x; j < kCols; j += kBlock) {\n"
        "    float t = 0.0f;\n"
        "#pragma unroll\n"
        "    for (int w = 0; w < kWarps; ++w)\n"
        "      t += red[w][j];\n"
        "    partials[(" + at + " * kStride + blockIdx.x) * kCols + j] = t;\n"
        "  }\n"
        "  __syncthreads();\n";
  }
  // Adds `n` rows of `partials` from row `from` of every slot, in row
  // order, for each float4 of each slot (kSums * kChunks of them), and
  // hands the sum `t` of slot `s`, chunk `c` to `then`.
  // Unrolled (warpGradVariant), `n` rows of at most `most`: the loop runs
  // to `most`, every load in bounds (row min(b, n - 1)) so that they are
  // all in flight together, and adds the first `n` in order.
  auto addRows = [&](const std::string &from, const std::string &n,
                     const std::string &most, const std::string &then) {
    bool unroll = variant.unrolledTail, partial = n != most;
    std::string b = unroll && partial ? "min(b, " + n + " - 1)" : "b";
    return "  for (int j = threadIdx.x; j < kSums * kChunks; j += kBlock) {\n"
           "    const int s = j / kChunks, c = j % kChunks;\n"
           "    float4 t = make_float4(0.0f, 0.0f, 0.0f, 0.0f);\n" +
           (unroll ? "#pragma unroll\n    for (int b = 0; b < " + most +
                         "; ++b) {\n"
                   : "    for (int b = 0; b < " + n + "; ++b) {\n") +
           "      const float4 v = __ldcg(reinterpret_cast<const float4 *>(\n"
           "          partials + (s * kStride + " + from + " + " + b +
           ") * kCols) + c);\n" +
           (unroll && partial ? "      if (b < " + n + ") {\n" : "      {\n") +
           "        t.x += v.x;\n        t.y += v.y;\n        t.z += v.z;\n"
           "        t.w += v.w;\n"
           "      }\n"
           "    }\n" + then + "  }\n";
  };
  if (!grads.empty())
    accStore =
        "  // Rows 0 .. kBlocks-1 of a slot: the blocks' sums; then the runs'.\n"
        "  constexpr int kStride = kBlocks + kRuns;\n" +
        (sharedAcc ? std::string("  __shared__ bool last;\n"
                                 "  __syncthreads();\n")
                   : std::string(
                         "  __shared__ __align__(16) float red[kWarps][kCols];\n"
                         "  __shared__ bool last;\n"
                         "  const int wib = threadIdx.x / 32;\n")) +
        accStore +
        "  // The fence orders this block's row before its ticket; the last\n"
        "  // block of a run reads the others' through L2 (__ldcg: L1 is not\n"
        "  // coherent) and puts the ticket back to 0 for the next launch.\n"
        "  const int run = blockIdx.x / kGroupBlocks;\n"
        "  const int first = run * kGroupBlocks;\n"
        "  const int members = min(kGroupBlocks, kBlocks - first);\n"
        "  __threadfence();\n"
        "  __syncthreads();\n"
        "  if (threadIdx.x == 0)\n"
        "    last = atomicAdd(&tickets[run], 1u) == (unsigned int)(members - "
        "1);\n"
        "  __syncthreads();\n"
        "  if (!last)\n"
        "    return;\n"
        "  __threadfence();\n" +
        addRows("first", "members", "kGroupBlocks",
                "    reinterpret_cast<float4 *>(partials + (s * kStride + "
                "kBlocks + run) * kCols)[c] = t;\n") +
        "  if (threadIdx.x == 0)\n"
        "    tickets[run] = 0;\n"
        "  __threadfence();\n"
        "  __syncthreads();\n"
        "  if (threadIdx.x == 0)\n"
        "    last = atomicAdd(&tickets[kRuns], 1u) == (unsigned int)(kRuns - "
        "1);\n"
        "  __syncthreads();\n"
        "  if (!last)\n"
        "    return;\n"
        "  __threadfence();\n" +
        addRows("kBlocks", "kRuns", "kRuns", finalStore) +
        "  if (threadIdx.x == 0)\n"
        "    tickets[kRuns] = 0;\n";
  std::string stats =
      p.center ? "    const float mean = warpAllSum(sum) / (float)kCols;\n"
                 "    float sq = 0.0f;\n"
                 "#pragma unroll\n"
                 "    for (int u = 0; u < kPerLane * 4; ++u)\n"
                 "      if (lane + 32 * (u / 4) < kChunks)\n"
                 "        sq += (x[u] - mean) * (x[u] - mean);\n"
                 "    const float rstd = 1.0f / sqrtf(warpAllSum(sq) / "
                 "(float)kCols + kEps);\n"
               : "    (void)sum;\n"
                 "    float sq = 0.0f;\n"
                 "#pragma unroll\n"
                 "    for (int u = 0; u < kPerLane * 4; ++u)\n"
                 "      sq += x[u] * x[u];\n"
                 "    const float mean = 0.0f;\n"
                 "    const float rstd = 1.0f / sqrtf(warpAllSum(sq) / "
                 "(float)kCols + kEps);\n";
  src.kernel(
      "constexpr int kChunks = kCols / 4, kPerLane = (kChunks + 31) / 32;\n"
      "constexpr int kWarps = kBlock / 32;\n"
      "extern \"C\" __global__ void __launch_bounds__(kBlock" +
      (variant.minBlocks > 1 ? ", " + std::to_string(variant.minBlocks)
                             : std::string()) +
      ")\n" + rowsName + "(" + sig +
      ") {\n"
      "  const int lane = threadIdx.x % 32;\n"
      "  const index_t warp = (index_t)blockIdx.x * kWarps + threadIdx.x / "
      "32;\n"
      "" +
      accDecl +
      "  for (index_t row = warp; row < kRows; row += kPartials) {\n" +
      prefetch + io.rowSetup +
      "    float x[kPerLane * 4], dy[kPerLane * 4];\n"
      "    float sum = 0.0f;\n"
      "#pragma unroll\n"
      "    for (int i = 0; i < kPerLane; ++i) {\n"
      "      const int c = lane + 32 * i;\n"
      "      if (c < kChunks) {\n" +
      io.load +
      "      } else {\n"
      "#pragma unroll\n"
      "        for (int e = 0; e < 4; ++e)\n"
      "          x[4 * i + e] = dy[4 * i + e] = 0.0f;\n"
      "      }\n"
      "#pragma unroll\n"
      "      for (int e = 0; e < 4; ++e)\n"
      "        sum += x[4 * i + e];\n"
      "    }\n" +
      stats + "    float sumG = 0.0f, sumGX = 0.0f;\n    " + forEach + wload +
      "#pragma unroll\n"
      "        for (int e = 0; e < 4; ++e) {\n"
      "          const int u = 4 * i + e;\n"
      "          const float g = " +
      g +
      ";\n"
      "          sumG += g;\n"
      "          sumGX += g * (x[u] - mean) * rstd;\n"
      "        }\n"
      "      }\n"
      "    }\n" +
      (p.center ? "    const float meanG = warpAllSum(sumG) / (float)kCols;\n"
                : "    (void)sumG;\n    const float meanG = 0.0f;\n") +
      "    const float meanGX = warpAllSum(sumGX) / (float)kCols;\n" +
      io.storeSetup + "    " + forEach + wload + io.storeBegin + accLoad +
      "#pragma unroll\n"
      "        for (int e = 0; e < 4; ++e) {\n"
      "          const int u = 4 * i + e;\n"
      "          const float xhat = (x[u] - mean) * rstd;\n"
      "          const float g = " +
      g +
      ";\n" +
      io.storeElement("rstd * (g - meanG - xhat * meanGX)") + accAdd +
      "        }\n" +
      accSave + io.storeEnd +
      "      }\n"
      "    }\n"
      "  }\n" +
      accStore + "}\n");
  EmittedKernel k;
  k.name = rowsName;
  k.source = src.str();
  int64_t warps = blockThreads / 32;
  k.grid = {static_cast<unsigned>(partials / warps), 1, 1};
  k.block = {blockThreads, 1, 1};
  k.args = std::move(args);
  return k;
}

} // namespace

/// The plain loads and stores of a one-op norm-gradient warp kernel.
WarpRowIO plainNormGradIO(Operation *op, const NormGradParts &p) {
  Type t = elementTypeOf(p.input), gt = elementTypeOf(p.grad),
       xt = elementTypeOf(p.dx);
  WarpRowIO io;
  io.params = inParam(t, "in") + ", " + inParam(gt, "grad");
  io.rowReads = {{"in", t}, {"grad", gt}};
  io.args = {KernelArg::operand(0), KernelArg::operand(1)};
  io.outParams = outParam(xt, "dx");
  io.outArgs = {KernelArg::result(0)};
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    io.operandArgs.push_back(KernelArg::operand(i));
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    io.resultArgs.push_back(KernelArg::result(i));
  io.load = "        const " + vec4(t) + " xv = reinterpret_cast<const " +
            vec4(t) +
            " *>(in + row * kCols)[c];\n"
            "        const " +
            vec4(gt) + " gv = reinterpret_cast<const " + vec4(gt) +
            " *>(grad + row * kCols)[c];\n"
            "#pragma unroll\n"
            "        for (int e = 0; e < 4; ++e) {\n"
            "          x[4 * i + e] = " +
            loadAs(t, "xv.v[e]") +
            ";\n"
            "          dy[4 * i + e] = " +
            loadAs(gt, "gv.v[e]") +
            ";\n"
            "        }\n";
  io.storeBegin = "        " + vec4(xt) + " o;\n";
  io.storeElement = [xt](const std::string &y) {
    return "          o.v[e] = " + storeAs(xt, y) + ";\n";
  };
  io.storeEnd = "        reinterpret_cast<" + vec4(xt) +
                " *>(dx + row * kCols)[c] = o;\n";
  io.types = {t, gt, xt};
  return io;
}

/// The warp kernel and its parameter sums (kernel 2), with `io`.
LogicalResult warpNormGrad(Operation *op, const EmitContext &ctx,
                           OpLowering &out, const NormGradParts &p,
                           const WarpRowIO &io) {
  Rows r = rowsOf(shapeOf(p.input), p.axis);
  std::vector<ParamGrad> grads = paramGrads(p, &io);
  WarpGradVariant variant =
      warpGradVariant(static_cast<int64_t>(grads.size()), r.cols);
  // Whole blocks of warps: every warp reaches the block's barriers (a
  // warp without rows adds zeros).
  int64_t warps = variant.block / 32;
  int64_t blocks =
      (std::max<int64_t>(1, std::min(r.rows, variant.maxWarps)) + warps - 1) /
      warps;
  int64_t partials = blocks * warps;
  out.kind = OpLowering::Kind::Kernels;
  out.kernels.push_back(
      warpNormGradRows(op, ctx, p, r, ctx.name, partials, io));
  if (grads.empty())
    return success();
  int64_t runs = (blocks + variant.groupBlocks - 1) / variant.groupBlocks;
  out.scratch.push_back({"partials",
                         DType::F32,
                         {static_cast<int64_t>(grads.size()), blocks + runs,
                          r.cols}});
  ScratchBuffer tickets{"tickets", DType::I32, {runs + 1}};
  tickets.persistent = true;
  out.scratch.push_back(std::move(tickets));
  return success();
}

LogicalResult emitNormGradWarpRows(Operation *op, const EmitContext &ctx,
                                   OpLowering &out, const WarpRowIO &io) {
  return warpNormGrad(op, ctx, out, normGradParts(op), io);
}

} // namespace llmc::codegen
