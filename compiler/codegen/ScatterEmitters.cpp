//===- ScatterEmitters.cpp - gather_grad, gather_elements_grad, slice_grad ===//
//
// The adjoints of data movement. Every result element is written by exactly
// one thread and every sum runs in a fixed order, so results are bitwise
// reproducible; no float atomics anywhere.
//
// gather_grad (the embedding backward: grad [outer, N, inner] scattered
// into [outer, V, inner] at the N indices) builds, on the device, the list
// of positions that hit each row, sorted by position (a counting sort):
//
//   <name>_count  one thread per index: atomicAdd(counts[k], 1). Integer
//                 atomics: the counts do not depend on the order. The
//                 block that finishes last (a ticket) scans: offsets =
//                 exclusive prefix sum of counts (offsets[V] = the total,
//                 cursor = offsets), reading the counts in coalesced tiles
//                 and putting them back to 0. The counts are persistent
//                 scratch (zero at load), so no launch zeroes them.
//   <name>_place  one thread per index: list[atomicAdd(cursor[k], 1)] = n;
//                 a bucket's order depends on scheduling here...
//   <name>_rank   ...so one thread per index counts the smaller positions
//                 in its bucket and writes sorted[offsets[k] + rank] = n:
//                 each bucket ends up in increasing position order
//   <name>_sum    one thread per result element (o, v, c): the sum of
//                 grad[o, n, c] over the bucket of v, in that order; 0 for
//                 a row no index names
//
// Four launches (the former `_zero` and `_scan` launches are gone: the
// same sums in the same order, so the same bits).
//
// Work is O(N + V * inner) besides the rank pass, which is O(sum of squared
// bucket sizes): at GPT-2 size (16K tokens into 50257 x 768) the sum pass,
// which must write the whole table anyway, dominates. Out-of-range indices
// (the reference reports an error) add nothing; negative ones count from
// the end, as in the forward gather.
//
// gather_elements_grad: one thread per result element scans the indices
// along the axis that could name it (the axis length of grad), in order.
//
// slice_grad: one thread per result element: grad at the element's place
// in the window, 0 off it.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Emitters.h"

#include "dialects/llmc/LlmcOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

std::string loopHead(const std::string &count) {
  return "  for (index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x; "
         "i < " +
         count + ";\n       i += (index_t)gridDim.x * blockDim.x) {\n";
}

std::string kernelHead(const std::string &name, unsigned block,
                       const std::string &params) {
  return "extern \"C\" __global__ void __launch_bounds__(" +
         std::to_string(block) + ")\n" + name + "(" + params + ") {\n";
}

/// The index read at `at`, normalized: `k` in [0, bound) or out of range.
std::string readIndex(const std::string &at,
                      const std::string &bound = "kDim") {
  return "    long long k = indices[" + at +
         "];\n"
         "    if (k < 0)\n"
         "      k += " + bound + ";\n";
}

//===----------------------------------------------------------------------===//
// gather_grad
//===----------------------------------------------------------------------===//

LogicalResult emitGatherGrad(GatherGradOp op, const EmitContext &ctx,
                             OpLowering &out) {
  int64_t axis = op.getAxis();
  Shape data = shapeOf(op.getResult());
  int64_t outer = 1, inner = 1, dim = data[axis];
  for (int64_t d = 0; d < static_cast<int64_t>(data.size()); ++d)
    if (d != axis)
      (d < axis ? outer : inner) *= data[d];
  int64_t count = numElements(shapeOf(op.getIndices()));
  if (dim >= (int64_t(1) << 31) || count >= (int64_t(1) << 31))
    return op.emitError("codegen: gather_grad over ")
           << count << " indices into " << dim
           << " rows exceeds the 32-bit bucket lists";
  Type t = elementTypeOf(op.getResult()), gt = elementTypeOf(op.getGrad()),
       it = elementTypeOf(op.getIndices());
  unsigned block = ctx.options.blockSize;
  out.kind = OpLowering::Kind::Kernels;
  // Scratch: 0 counts[V] (persistent: zero at load, put back to zero by the
  // scan), 1 offsets[V + 1], 2 cursor[V], 3 list[N], 4 sorted[N], 5 the
  // count kernel's ticket (persistent, put back by its last block).
  for (auto [name, size] : {std::pair<const char *, int64_t>{"counts", dim},
                            {"offsets", dim + 1},
                            {"cursor", dim},
                            {"list", count},
                            {"sorted", count},
                            {"tickets", 1}})
    out.scratch.push_back({name, DType::I32, {std::max<int64_t>(size, 1)}});
  out.scratch[0].persistent = true;
  out.scratch[5].persistent = true;

  auto start = [&](const std::string &suffix, const std::string &scheme) {
    KernelSource src(op, ctx.name + "_" + suffix);
    src.scheme("gather_grad (deterministic scatter-add, docs/codegen.md), " +
               scheme);
    src.constant("kDim", dim,
                 "rows of the result along axis " + std::to_string(axis));
    src.constant("kIndices", count, "indices");
    if (op.getBound())
      src.constant("kBound", *op.getBound(),
                   "indices in range: the real rows of a padded table");
    return src;
  };
  auto launch = [&](const KernelSource &src, int64_t n, unsigned threads,
                    std::vector<KernelArg> args) {
    EmittedKernel k;
    k.name = src.name();
    k.source = src.str();
    int64_t blocks = std::max<int64_t>(1, (n + threads - 1) / threads);
    k.grid = {
        static_cast<unsigned>(std::min<int64_t>(blocks, ctx.options.maxBlocks)),
        1, 1};
    k.block = {threads, 1, 1};
    k.args = std::move(args);
    out.kernels.push_back(std::move(k));
  };
  std::string idxParam = inParam(it, "indices");
  std::string bound = op.getBound() ? "kBound" : "kDim";
  std::string validIndex = readIndex("i", bound) + "    if (k < 0 || k >= " +
                           bound + ")\n      continue;\n";

  // The count and the scan in one launch: the block that draws the last
  // ticket scans (the column sums' pattern, ReduceEmitters.cpp). Its
  // threads read the counts in coalesced tiles of 1024 and put each back
  // to 0, so the next step's counts start at zero without a launch of
  // their own.
  constexpr unsigned kScanThreads = 1024;
  int64_t countBlocks = std::min<int64_t>(
      std::max<int64_t>(1, (count + kScanThreads - 1) / kScanThreads),
      ctx.options.maxBlocks);
  KernelSource cnt =
      start("count", "1/4: bucket sizes (integer atomics), then in the last "
                     "block the exclusive prefix sum of the counts");
  cnt.constant("kBlocks", countBlocks, "blocks of this launch");
  cnt.helper(R"(__device__ __forceinline__ int warpInclusiveScan(int v) {
  const int lane = threadIdx.x % 32;
  for (int o = 1; o < 32; o <<= 1) {
    const int u = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o)
      v += u;
  }
  return v;
})");
  cnt.kernel(
      kernelHead(cnt.name(), kScanThreads,
                 idxParam + ", int *__restrict__ counts, int *__restrict__ "
                            "offsets, int *__restrict__ cursor, unsigned int "
                            "*__restrict__ tickets") +
      loopHead("kIndices") + validIndex +
      "    atomicAdd(&counts[k], 1);\n  }\n" +
      R"(  __shared__ bool last;
  __shared__ int warpTotals[32];
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0)
    last = atomicAdd(&tickets[0], 1u) == (unsigned int)(kBlocks - 1);
  __syncthreads();
  if (!last)
    return;
  __threadfence();
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int carry = 0; // the counts of the tiles before this one
  for (index_t base = 0; base < kDim; base += 1024) {
    const index_t v = base + threadIdx.x;
    const int local = v < kDim ? __ldcg(&counts[v]) : 0;
    const int inclusive = warpInclusiveScan(local);
    if (lane == 31)
      warpTotals[warp] = inclusive;
    __syncthreads();
    if (warp == 0)
      warpTotals[lane] = warpInclusiveScan(warpTotals[lane]);
    __syncthreads();
    const int before = carry + (warp ? warpTotals[warp - 1] : 0) +
                       inclusive - local;
    if (v < kDim) {
      offsets[v] = before;
      cursor[v] = before;
      counts[v] = 0;
    }
    carry += warpTotals[31];
    __syncthreads(); // warpTotals is rewritten by the next tile
  }
  if (threadIdx.x == 0) {
    offsets[kDim] = carry;
    tickets[0] = 0;
  }
}
)");
  {
    EmittedKernel k;
    k.name = cnt.name();
    k.source = cnt.str();
    k.grid = {static_cast<unsigned>(countBlocks), 1, 1};
    k.block = {kScanThreads, 1, 1};
    k.args = {KernelArg::operand(1), KernelArg::scratch(0),
              KernelArg::scratch(1), KernelArg::scratch(2),
              KernelArg::scratch(5)};
    out.kernels.push_back(std::move(k));
  }

  KernelSource place =
      start("place", "2/4: positions into their buckets, in any order");
  place.kernel(kernelHead(place.name(), block,
                          idxParam + ", int *__restrict__ cursor, int "
                                     "*__restrict__ list") +
               loopHead("kIndices") + validIndex +
               "    list[atomicAdd(&cursor[k], 1)] = (int)i;\n  }\n}\n");
  launch(place, count, block,
         {KernelArg::operand(1), KernelArg::scratch(2), KernelArg::scratch(3)});

  KernelSource rank =
      start("rank", "3/4: each bucket sorted by position (rank = the number "
                    "of smaller positions in the bucket)");
  rank.kernel(kernelHead(rank.name(), block,
                         idxParam + ", const int *__restrict__ offsets, "
                                    "const int *__restrict__ list, int "
                                    "*__restrict__ sorted") +
              loopHead("kIndices") + validIndex +
              "    const int begin = offsets[k], end = offsets[k + 1];\n"
              "    int rank = 0;\n"
              "#pragma unroll 4\n"
              "    for (int e = begin; e < end; ++e)\n"
              "      rank += list[e] < (int)i;\n"
              "    sorted[begin + rank] = (int)i;\n  }\n}\n");
  launch(rank, count, block,
         {KernelArg::operand(1), KernelArg::scratch(1), KernelArg::scratch(3),
          KernelArg::scratch(4)});

  int64_t n = numElements(data);
  KernelSource sum =
      start("sum", "4/4: one thread per result element [outer, V, inner]; "
                   "grad rows of the bucket added in position order");
  sum.constant("kN", n, "elements of the result " + dimsString(data));
  sum.constant("kInner", inner, "elements after the axis");
  sum.kernel(
      kernelHead(sum.name(), block,
                 inParam(gt, "grad") +
                     ", const int *__restrict__ offsets, const int "
                     "*__restrict__ sorted, " +
                     outParam(t, "out")) +
      loopHead("kN") +
      "    const index_t c = i % kInner;\n"
      "    const index_t v = (i / kInner) % kDim;\n"
      "    const index_t o = i / (kInner * kDim);\n"
      "    const int begin = offsets[v], end = offsets[v + 1];\n"
      "    float s = 0.0f;\n"
      "    // Unrolled so that the loads of a long bucket overlap; the adds\n"
      "    // stay in position order.\n"
      "#pragma unroll 4\n"
      "    for (int e = begin; e < end; ++e)\n"
      "      s += " +
      loadAs(gt, "grad[(o * kIndices + sorted[e]) * kInner + c]") +
      ";\n"
      "    out[i] = " +
      storeAs(t, "s") + ";\n  }\n}\n");
  launch(sum, n, block,
         {KernelArg::operand(0), KernelArg::scratch(1), KernelArg::scratch(4),
          KernelArg::result(0)});
  return success();
}

//===----------------------------------------------------------------------===//
// gather_elements_grad
//===----------------------------------------------------------------------===//

LogicalResult emitGatherElementsGrad(GatherElementsGradOp op,
                                     const EmitContext &ctx, OpLowering &out) {
  int64_t axis = op.getAxis();
  Shape data = shapeOf(op.getResult()), g = shapeOf(op.getGrad());
  Strides gs = rowMajorStrides(g);
  Type t = elementTypeOf(op.getResult()), gt = elementTypeOf(op.getGrad()),
       it = elementTypeOf(op.getIndices());
  int64_t n = numElements(data);
  KernelSource src(op, ctx.name);
  src.scheme("gather_elements_grad: one thread per result element; scans "
             "the indices along axis " +
             std::to_string(axis) +
             " that could name it, adding grad in order (no atomics)");
  src.constant("kN", n, "elements of the result " + dimsString(data));
  src.constant("kDim", data[axis], "result size along the axis");
  src.constant("kScan", g[axis], "grad/indices size along the axis");
  src.constant("kAxisStride", gs[axis], "grad/indices stride of the axis");
  std::string body = emitCoordinates(
      "i", "i", data, std::vector<bool>(data.size(), true), "    ");
  std::string base, inside;
  for (int64_t d = 0; d < static_cast<int64_t>(data.size()); ++d) {
    if (d == axis)
      continue;
    std::string c = "i_c" + std::to_string(d);
    if (g[d] < data[d])
      inside +=
          (inside.empty() ? "" : " || ") + c + " >= " + std::to_string(g[d]);
    if (gs[d] != 0 && g[d] != 1)
      base += (base.empty() ? "" : " + ") + c + " * " + std::to_string(gs[d]);
  }
  if (base.empty())
    base = "0";
  if (!inside.empty())
    body += "    if (" + inside + ") {\n      out[i] = " + storeAs(t, "0.0f") +
            ";\n      continue; // no index reaches this element\n    }\n";
  body += "    const index_t base = " + base +
          ";\n"
          "    float s = 0.0f;\n"
          "    for (index_t j = 0; j < kScan; ++j) {\n"
          "      long long k = indices[base + j * kAxisStride];\n"
          "      if (k < 0)\n"
          "        k += kDim;\n"
          "      if (k == i_c" +
          std::to_string(axis) +
          ")\n"
          "        s += " +
          loadAs(gt, "grad[base + j * kAxisStride]") +
          ";\n"
          "    }\n"
          "    out[i] = " +
          storeAs(t, "s") + ";\n";
  src.kernel(kernelHead(ctx.name, ctx.options.blockSize,
                        inParam(gt, "grad") + ", " + inParam(it, "indices") +
                            ", " + outParam(t, "out")) +
             loopHead("kN") + body + "  }\n}\n");
  return singleKernel(
      out, elementwiseLaunch(src, ctx, n,
                             {KernelArg::operand(0), KernelArg::operand(1),
                              KernelArg::result(0)}));
}

//===----------------------------------------------------------------------===//
// slice_grad
//===----------------------------------------------------------------------===//

LogicalResult emitSliceGrad(SliceGradOp op, const EmitContext &ctx,
                            OpLowering &out) {
  Shape data = shapeOf(op.getResult()), g = shapeOf(op.getGrad());
  Strides gs = rowMajorStrides(g);
  ArrayRef<int64_t> starts = op.getStarts(), steps = op.getStrides();
  Type t = elementTypeOf(op.getResult()), gt = elementTypeOf(op.getGrad());
  int64_t n = numElements(data);
  KernelSource src(op, ctx.name);
  src.scheme("slice_grad: one thread per result element; grad at its place "
             "in the window [start + c * step], 0 elsewhere");
  src.constant("kN", n, "elements of the result " + dimsString(data));
  std::vector<bool> needed(data.size(), false);
  std::string checks, offset;
  for (size_t d = 0; d < data.size(); ++d) {
    if (data[d] == 1)
      continue; // coordinate 0, start 0
    needed[d] = true;
    std::string c = "i_c" + std::to_string(d), r = "r" + std::to_string(d);
    std::string rel =
        starts[d] ? "(" + c + " - " + std::to_string(starts[d]) + ")" : c;
    std::string pos = steps[d] == 1
                          ? rel
                          : "(" + rel + " / " + std::to_string(steps[d]) + ")";
    checks += "    const index_t " + r + " = " + pos + ";\n";
    std::string cond;
    if (starts[d])
      cond += c + " < " + std::to_string(starts[d]);
    if (steps[d] != 1)
      cond += (cond.empty() ? "" : " || ") + rel + " % " +
              std::to_string(steps[d]) + " != 0";
    if (starts[d] + (g[d] - 1) * steps[d] + 1 < data[d])
      cond += (cond.empty() ? "" : " || ") + r + " >= " + std::to_string(g[d]);
    if (!cond.empty())
      checks += "    if (" + cond + ")\n      inside = false;\n";
    offset += (offset.empty() ? "" : " + ") + r + " * " + std::to_string(gs[d]);
  }
  if (offset.empty())
    offset = "0";
  std::string body =
      emitCoordinates("i", "i", data, needed, "    ") +
      "    bool inside = true;\n" + checks + "    out[i] = " +
      storeAs(t, "inside ? " + loadAs(gt, "grad[" + offset + "]") + " : 0.0f") +
      ";\n";
  src.kernel(kernelHead(ctx.name, ctx.options.blockSize,
                        inParam(gt, "grad") + ", " + outParam(t, "out")) +
             loopHead("kN") + body + "  }\n}\n");
  return singleKernel(
      out, elementwiseLaunch(src, ctx, n,
                             {KernelArg::operand(0), KernelArg::result(0)}));
}

} // namespace

void registerScatterEmitters(EmitterTable &t) {
  addEmitter<GatherGradOp>(t, emitGatherGrad);
  addEmitter<GatherElementsGradOp>(t, emitGatherElementsGrad);
  addEmitter<SliceGradOp>(t, emitSliceGrad);
}

} // namespace llmc::codegen
