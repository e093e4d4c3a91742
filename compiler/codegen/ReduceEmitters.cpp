//===- ReduceEmitters.cpp - reduce_sum, reduce_mean, reduce_max -----------===//
//
// Two schemes (docs/codegen.md):
//   rows     float reductions over trailing axes: one block per row, each
//            thread strides over the row, then a block reduction (warp
//            shuffles, shared memory across warps); coalesced reads.
//   columns  float reductions over leading axes of many rows (the
//            unbroadcast of a bias gradient, [16384, 768] -> [768]): one
//            thread per column would leave the GPU nearly idle (768 threads
//            each walking 16384 rows took 0.15 ms a call on an H200), so
//            each block sums a chunk of kChunkRows rows per 32 columns (8
//            row lanes per column, then a fixed-order shared-memory sum)
//            into scratch `partials` [chunks, cols], and in the same launch
//            the block that draws the last ticket of its column group adds
//            the group's chunks in order: deterministic (no atomics on
//            data), one launch instead of a partial and a final kernel.
//            The tickets are persistent (zero at load) and reset by the
//            block that used them.
//   general  any axes, any type: one thread per result element, a loop over
//            the reduced index space with baked-in strides. Adjacent threads
//            own adjacent kept elements, so a reduction over leading axes
//            reads coalesced.
// Sums accumulate in f32 for floats and in 64-bit two's complement for
// integers (wrapped to the result's width); max propagates NaN.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Emitters.h"

#include "dialects/llmc/LlmcOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

enum class Reduction { Sum, Mean, Max };

const char *reductionName(Reduction r) {
  return r == Reduction::Sum ? "sum" : r == Reduction::Mean ? "mean" : "max";
}

std::string kernelHead(const std::string &name, unsigned block,
                       const std::string &params) {
  return "extern \"C\" __global__ void __launch_bounds__(" +
         std::to_string(block) + ")\n" + name + "(" + params + ") {\n";
}

/// Float reduction of the trailing `cols` elements of each row.
LogicalResult emitRows(Operation *op, const EmitContext &ctx, OpLowering &out,
                       Reduction kind, int64_t rows, int64_t cols) {
  Type it = elementTypeOf(op->getOperand(0)),
       rt = elementTypeOf(op->getResult(0));
  KernelSource src(op, ctx.name);
  src.scheme(std::string("reduce_") + reductionName(kind) +
             " over trailing axes: one block per row, strided loads, block "
             "reduction (warp shuffles, then shared memory)");
  unsigned block = rowBlockSize(cols);
  src.constant("kRows", rows, "result elements");
  src.constant("kCols", cols, "reduced elements per row");
  src.constant("kBlock", block, "threads per block");
  src.staticAssert("kBlock % 32 == 0 && kBlock <= 1024",
                   "whole warps, one block");
  bool isMax = kind == Reduction::Max;
  src.helper(blockReduceHelpers(isMax ? kBlockMax : kBlockSum));
  std::string acc = isMax ? "acc = nanMax(acc, x);" : "acc += x;";
  std::string finish = isMax ? "blockMax(acc)" : "blockSum(acc)";
  std::string result =
      kind == Reduction::Mean ? "total / (float)kCols" : "total";
  src.kernel(
      kernelHead(ctx.name, block,
                 inParam(it, "in") + ", " + outParam(rt, "out")) +
      "  for (index_t row = blockIdx.x; row < kRows; row += gridDim.x) {\n"
      "    const " +
      storageType(it) +
      " *x_row = in + row * kCols;\n"
      "    float acc = " +
      (isMax ? "-INFINITY" : "0.0f") +
      ";\n"
      "    for (index_t j = threadIdx.x; j < kCols; j += kBlock) {\n"
      "      const float x = " +
      loadAs(it, "x_row[j]") +
      ";\n"
      "      " +
      acc +
      "\n"
      "    }\n"
      "    const float total = " +
      finish +
      ";\n"
      "    if (threadIdx.x == 0)\n"
      "      out[row] = " +
      storeAs(rt, result) +
      ";\n"
      "  }\n}\n");
  EmittedKernel k;
  k.name = ctx.name;
  k.source = src.str();
  k.grid = {static_cast<unsigned>(std::min<int64_t>(rows, 1 << 30)), 1, 1};
  k.block = {block, 1, 1};
  k.args = {KernelArg::operand(0), KernelArg::result(0)};
  return singleKernel(out, std::move(k));
}

constexpr int64_t kChunkRows = 128;

/// Float sum/mean over the leading `rows` of a [rows, cols] view, in one
/// launch: every block sums a chunk of rows into `partials`, and the block
/// that finishes its column group last (a ticket per group) adds the
/// group's chunks in order.
LogicalResult emitColumns(Operation *op, const EmitContext &ctx,
                          OpLowering &out, Reduction kind, int64_t rows,
                          int64_t cols) {
  Type it = elementTypeOf(op->getOperand(0)),
       rt = elementTypeOf(op->getResult(0));
  int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  // Chunks are grid y (at most 65535), column groups grid x: say so here
  // rather than truncate them to unsigned or fail at launch.
  if (chunks > 65535 || (cols + 31) / 32 > 2147483647)
    return op->emitError("codegen: a column reduction of ")
           << rows << " rows x " << cols
           << " columns exceeds the launch grid (at most "
           << 65535 * kChunkRows << " rows)";
  KernelSource src(op, ctx.name);
  // A thread loads 16 bytes of a row at once (4 f32 or 8 bf16/f16
  // columns) when whole vectors tile the row: a warp then reads 512
  // contiguous bytes of a row instead of 32 elements. Each column still
  // sums rows r0 + ty, r0 + ty + 8, ... per row lane and the 8 lanes in
  // order, so both forms give the same bits.
  int64_t vec = it.isF32() ? 4 : it.isBF16() || it.isF16() ? 8 : 1;
  if (cols % vec != 0)
    vec = 1;
  int64_t groups = (cols / vec + 31) / 32;
  src.constant("kRows", rows, "reduced rows");
  src.constant("kCols", cols, "kept columns");
  src.constant("kChunkRows", kChunkRows, "rows per block");
  src.constant("kChunks", chunks, "blocks per column group (grid y)");
  src.constant("kVec", vec, "columns per load");
  src.constant("kGroupCols", 32 * vec, "columns per block (grid x)");
  std::string phase2 =
      ", phase 2 in the same launch: the block that takes a column group's "
      "last ticket adds its kChunks partial sums per column in chunk order "
      "(deterministic, no atomics on data)";
  std::string partialStore;
  if (vec > 1) {
    src.scheme(std::string("reduce_") + reductionName(kind) +
               " over leading axes, phase 1: a block sums kChunkRows rows "
               "of 32 vectors of kVec columns (16-byte loads; 8 row lanes "
               "per column, then shared memory in a fixed order) into "
               "partials[chunk, col]" +
               phase2);
    src.staticAssert("kCols % kVec == 0", "whole vectors per row");
    src.helper("template <typename T, int N> struct alignas(sizeof(T) * N) "
               "Vec {\n  T v[N];\n};\n");
    std::string vt = "Vec<" + storageType(it) + ", kVec>";
    partialStore =
        "  __shared__ float sums[8][kVec][33];\n"
        "  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;\n"
        "  const index_t vc = (index_t)blockIdx.x * 32 + tx;\n"
        "  const index_t r0 = (index_t)blockIdx.y * kChunkRows;\n"
        "  float acc[kVec];\n"
        "#pragma unroll\n"
        "  for (int e = 0; e < kVec; ++e)\n"
        "    acc[e] = 0.0f;\n"
        "  if (vc * kVec < kCols)\n"
        "#pragma unroll 4\n"
        "    for (index_t r = r0 + ty; r < r0 + kChunkRows && r < kRows; "
        "r += 8) {\n"
        "      const " +
        vt + " v = reinterpret_cast<const " + vt +
        " *>(in + r * kCols)[vc];\n"
        "#pragma unroll\n"
        "      for (int e = 0; e < kVec; ++e)\n"
        "        acc[e] += " +
        loadAs(it, "v.v[e]") +
        ";\n"
        "    }\n"
        "#pragma unroll\n"
        "  for (int e = 0; e < kVec; ++e)\n"
        "    sums[ty][e][tx] = acc[e];\n"
        "  __syncthreads();\n"
        "  if (ty == 0 && vc * kVec < kCols)\n"
        "#pragma unroll\n"
        "    for (int e = 0; e < kVec; ++e) {\n"
        "      float total = 0.0f;\n"
        "      for (int j = 0; j < 8; ++j)\n"
        "        total += sums[j][e][tx];\n"
        "      partials[(index_t)blockIdx.y * kCols + vc * kVec + e] = "
        "total;\n"
        "    }\n";
  } else {
    src.scheme(std::string("reduce_") + reductionName(kind) +
               " over leading axes, phase 1: a block sums kChunkRows rows of "
               "32 columns (8 row lanes per column, then shared memory in a "
               "fixed order) into partials[chunk, col]" +
               phase2);
    partialStore =
        "  __shared__ float sums[8][33];\n"
        "  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;\n"
        "  const index_t col = (index_t)blockIdx.x * 32 + tx;\n"
        "  const index_t r0 = (index_t)blockIdx.y * kChunkRows;\n"
        "  float acc = 0.0f;\n"
        "  if (col < kCols)\n"
        "    for (index_t r = r0 + ty; r < r0 + kChunkRows && r < kRows; r += 8)\n"
        "      acc += " +
        loadAs(it, "in[r * kCols + col]") +
        ";\n"
        "  sums[ty][tx] = acc;\n"
        "  __syncthreads();\n"
        "  if (ty == 0 && col < kCols) {\n"
        "    float total = 0.0f;\n"
        "    for (int j = 0; j < 8; ++j)\n"
        "      total += sums[j][tx];\n"
        "    partials[(index_t)blockIdx.y * kCols + col] = total;\n"
        "  }\n";
  }
  std::string result = kind == Reduction::Mean ? "sum / (float)kRows" : "sum";
  // The fence orders this block's partials before its ticket; the last
  // block reads the others' through L2 (__ldcg: L1 is not coherent) and
  // puts the ticket back to 0 for the next step (the arena starts zeroed).
  src.kernel(
      kernelHead(ctx.name, 256,
                 inParam(it, "in") + ", float *__restrict__ partials, "
                 "unsigned int *__restrict__ tickets, " + outParam(rt, "out")) +
      partialStore +
      "  __shared__ bool last;\n"
      "  __threadfence();\n"
      "  __syncthreads();\n"
      "  if (threadIdx.x == 0)\n"
      "    last = atomicAdd(&tickets[blockIdx.x], 1u) ==\n"
      "           (unsigned int)(kChunks - 1);\n"
      "  __syncthreads();\n"
      "  if (!last)\n"
      "    return;\n"
      "  __threadfence();\n"
      "  for (index_t j = threadIdx.x; j < kGroupCols; j += 256) {\n"
      "    const index_t i = (index_t)blockIdx.x * kGroupCols + j;\n"
      "    if (i >= kCols)\n"
      "      break;\n"
      "    float sum = 0.0f;\n"
      "#pragma unroll 8\n"
      "    for (index_t c = 0; c < kChunks; ++c)\n"
      "      sum += __ldcg(&partials[c * kCols + i]);\n"
      "    out[i] = " +
      storeAs(rt, result) +
      ";\n"
      "  }\n"
      "  if (threadIdx.x == 0)\n"
      "    tickets[blockIdx.x] = 0;\n"
      "}\n");
  EmittedKernel k;
  k.name = ctx.name;
  k.source = src.str();
  k.grid = {static_cast<unsigned>(groups), static_cast<unsigned>(chunks), 1};
  k.block = {256, 1, 1};
  k.args = {KernelArg::operand(0), KernelArg::scratch(0),
            KernelArg::scratch(1), KernelArg::result(0)};
  out.scratch.push_back({"partials", DType::F32, {chunks, cols}});
  ScratchBuffer tickets{"tickets", DType::I32, {groups}};
  tickets.persistent = true;
  out.scratch.push_back(std::move(tickets));
  return singleKernel(out, std::move(k));
}

/// One thread per result element, looping over the reduced space.
LogicalResult emitGeneral(Operation *op, const EmitContext &ctx,
                          OpLowering &out, Reduction kind,
                          const std::vector<bool> &reduced) {
  Shape in = shapeOf(op->getOperand(0));
  Strides strides = rowMajorStrides(in);
  IndexSpace kept, red;
  kept.strides.resize(1);
  red.strides.resize(1);
  for (size_t d = 0; d < in.size(); ++d) {
    IndexSpace &s = reduced[d] ? red : kept;
    s.shape.push_back(in[d]);
    s.strides[0].push_back(strides[d]);
  }
  kept = collapseDims(kept);
  red = collapseDims(red);
  Type it = elementTypeOf(op->getOperand(0)),
       rt = elementTypeOf(op->getResult(0));
  bool isFloat = isFloatType(it);
  int64_t n = numElements(kept.shape), count = numElements(red.shape);

  KernelSource src(op, ctx.name);
  src.scheme(std::string("reduce_") + reductionName(kind) +
             ": one thread per result element, loop over the " +
             std::to_string(count) + " reduced elements");
  src.constant("kN", n, "result elements");
  src.constant("kR", count, "reduced elements per result");
  std::string accType, init, step, result;
  if (isFloat) {
    accType = "float";
    init = kind == Reduction::Max ? "-INFINITY" : "0.0f";
    step = kind == Reduction::Max
               ? "acc = (acc != acc || x != x) ? NAN : fmaxf(acc, x);"
               : "acc += x;";
    result = kind == Reduction::Mean ? "acc / (float)kR" : "acc";
    result = storeAs(rt, result);
  } else {
    std::string ct = computeType(it);
    if (kind == Reduction::Max) {
      accType = ct;
      init = it.isSignlessInteger(64) ? "(-9223372036854775807LL - 1)"
                                      : "(-2147483647 - 1)";
      step = "acc = x > acc ? x : acc;";
      result = "acc";
    } else {
      // Two's complement: sum in unsigned 64-bit, wrap to the width, then
      // divide (truncating toward zero) for the mean.
      accType = "unsigned long long";
      init = "0ull";
      step = "acc += (unsigned long long)(long long)x;";
      result = "(" + ct + ")(long long)acc";
      if (kind == Reduction::Mean)
        result = "(" + ct + ")(" + result + " / (" + ct + ")kR)";
    }
  }
  std::string body =
      emitCoordinates("i", "i", kept.shape,
                      neededCoordinates(kept.shape, kept.strides), "    ");
  body += "    const index_t base = " +
          offsetExpression("i", "i", kept.shape, kept.strides[0]) + ";\n";
  body += "    " + accType + " acc = " + init + ";\n";
  body += "    for (index_t r = 0; r < kR; ++r) {\n";
  body += emitCoordinates("r", "r", red.shape,
                          neededCoordinates(red.shape, red.strides), "      ");
  body += "      const " + computeType(it) + " x = " +
          loadAs(it, "in[base + " +
                         offsetExpression("r", "r", red.shape, red.strides[0]) +
                         "]") +
          ";\n      " + step + "\n    }\n";
  body += "    out[i] = " + result + ";\n";
  src.kernel(kernelHead(ctx.name, ctx.options.blockSize,
                        inParam(it, "in") + ", " + outParam(rt, "out")) +
             "  for (index_t i = (index_t)blockIdx.x * blockDim.x + "
             "threadIdx.x; i < kN;\n"
             "       i += (index_t)gridDim.x * blockDim.x) {\n" +
             body + "  }\n}\n");
  return singleKernel(
      out, elementwiseLaunch(src, ctx, n,
                             {KernelArg::operand(0), KernelArg::result(0)}));
}

template <typename OpTy>
LogicalResult emitReduce(OpTy op, const EmitContext &ctx, OpLowering &out,
                         Reduction kind) {
  Shape in = shapeOf(op.getInput());
  std::vector<bool> reduced(in.size(), false);
  for (int64_t a : op.getAxes())
    reduced[a] = true;
  // After dropping size-1 dims (which change nothing): the reduced dims all
  // after the kept ones make rows (trailing), all before them columns
  // (leading). The products are the same either way.
  int64_t reducedCount = 1, keptCount = 1;
  bool trailing = true, leading = true, seenReduced = false, seenKept = false;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1)
      continue;
    if (reduced[d]) {
      seenReduced = true;
      leading &= !seenKept;
      reducedCount *= in[d];
    } else {
      seenKept = true;
      trailing &= !seenReduced;
      keptCount *= in[d];
    }
  }
  bool isFloat = isFloatType(elementTypeOf(op.getInput()));
  if (trailing && isFloat && reducedCount > 1)
    return emitRows(op, ctx, out, kind, keptCount, reducedCount);
  if (leading && isFloat && kind != Reduction::Max &&
      reducedCount >= 2 * kChunkRows)
    return emitColumns(op, ctx, out, kind, reducedCount, keptCount);
  return emitGeneral(op, ctx, out, kind, reduced);
}

} // namespace

void registerReduceEmitters(EmitterTable &t) {
  addEmitter<ReduceSumOp>(
      t, [](ReduceSumOp op, const EmitContext &ctx, OpLowering &out) {
        return emitReduce(op, ctx, out, Reduction::Sum);
      });
  addEmitter<ReduceMeanOp>(
      t, [](ReduceMeanOp op, const EmitContext &ctx, OpLowering &out) {
        return emitReduce(op, ctx, out, Reduction::Mean);
      });
  addEmitter<ReduceMaxOp>(
      t, [](ReduceMaxOp op, const EmitContext &ctx, OpLowering &out) {
        return emitReduce(op, ctx, out, Reduction::Max);
      });
}

} // namespace llmc::codegen
