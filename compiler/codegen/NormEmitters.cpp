//===- NormEmitters.cpp - softmax, log_softmax, layer_norm, rms_norm ------===//
//
// Row ops: one block per row, in a row-stride loop over the grid. A first
// sweep gathers the row's statistics in one pass (docs/codegen.md):
//   softmax, log_softmax   online max and sum of exp(x - max), merged
//                          across threads by rescaling
//   layer_norm             Welford's (count, mean, M2), merged exactly
//   rms_norm               the sum of squares
// and a second sweep writes the outputs. Statistics are f32 for every input
// type.
//
// softmax over an axis that is not the last views the tensor as
// [outer, C, inner]: row r reads elements C apart by `inner`.
//
// layer_norm and rms_norm rows of 4k <= fusion::kMaxWarpNormRow elements
// (GPT-2's 768 .. 1600, Llama 1B's 2048) take a faster scheme, near memory
// speed: one warp per row, eight rows per block, the row loaded once in
// 4-element vectors (16 bytes of f32) and kept in registers; layer_norm:
// the mean, then the sum of squared deviations (two exact passes over
// registers, no division per element as in Welford); rms_norm: the sum of
// squares, gathered in the loads; each a butterfly of shuffles so that
// every lane holds the same bits; then the outputs stored in vectors. This
// is the kernel a norm prologue (the residual add) and epilogue ride in
// (RowFusedEmitters.cpp).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Emitters.h"

#include "dialects/llmc/LlmcOps.h"
#include "passes/FusionUtils.h"

#include <algorithm>
#include <cstdlib>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

std::string rowKernelHead(const std::string &name, const std::string &params) {
  return "extern \"C\" __global__ void __launch_bounds__(kBlock)\n" + name +
         "(" + params +
         ") {\n"
         "  for (index_t row = blockIdx.x; row < kRows; row += gridDim.x) {\n";
}

EmittedKernel rowLaunch(const KernelSource &src, int64_t rows, unsigned block,
                        std::vector<KernelArg> args) {
  EmittedKernel k;
  k.name = src.name();
  k.source = src.str();
  k.grid = {static_cast<unsigned>(std::min<int64_t>(rows, 1 << 30)), 1, 1};
  k.block = {block, 1, 1};
  k.args = std::move(args);
  return k;
}

void rowConstants(KernelSource &src, int64_t rows, int64_t cols,
                  unsigned block) {
  src.constant("kRows", rows, "rows");
  src.constant("kCols", cols, "elements per row");
  src.constant("kBlock", block, "threads per block, one block per row");
  src.staticAssert("kBlock % 32 == 0 && kBlock <= 1024",
                   "whole warps, one block");
}

template <typename OpTy>
LogicalResult emitSoftmax(OpTy op, const EmitContext &ctx, OpLowering &out,
                          bool log) {
  Shape shape = shapeOf(op.getInput());
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = op.getAxis() < 0 ? op.getAxis() + rank : op.getAxis();
  int64_t cols = shape[axis], inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= shape[d];
  int64_t rows = numElements(shape) / std::max<int64_t>(cols, 1);
  Type t = elementTypeOf(op.getInput());
  unsigned block = rowBlockSize(cols);

  KernelSource src(op, ctx.name);
  src.scheme(std::string(log ? "log_softmax" : "softmax") + " along axis " +
             std::to_string(axis) +
             ": one block per row; online max/sum (one pass), then the "
             "outputs");
  rowConstants(src, rows, cols, block);
  src.constant("kInner", inner, "stride between a row's elements");
  src.helper(blockReduceHelpers(kBlockOnline));
  std::string x = loadAs(t, "in[base + j * kInner]");
  std::string y = log ? "x - m - logs" : "expf(x - m) * inv";
  src.kernel(
      rowKernelHead(ctx.name, inParam(t, "in") + ", " + outParam(t, "out")) +
      "    const index_t base = (row / kInner) * (kCols * kInner) + row % "
      "kInner;\n"
      "    float m = -INFINITY, s = 0.0f;\n"
      "    for (index_t j = threadIdx.x; j < kCols; j += kBlock)\n"
      "      onlineAdd(m, s, " +
      x +
      ");\n"
      "    blockOnline(m, s);\n" +
      (log ? "    const float logs = logf(s);\n"
           : "    const float inv = 1.0f / s;\n") +
      "    for (index_t j = threadIdx.x; j < kCols; j += kBlock) {\n"
      "      const float x = " +
      x +
      ";\n"
      "      out[base + j * kInner] = " +
      storeAs(t, y) +
      ";\n"
      "    }\n"
      "  }\n}\n");
  return singleKernel(out,
                      rowLaunch(src, rows, block,
                                {KernelArg::operand(0), KernelArg::result(0)}));
}

/// The one-warp layer_norm holds rows of at most fusion::kMaxWarpNormRow
/// floats in registers: 64 per lane (GPT-2 124M's 768 is 24, the largest
/// GPT-2's 1600 is 52).
constexpr unsigned kWarpRowBlock = 256; // eight rows per block

std::string vec4(Type t) { return "Vec<" + storageType(t) + ", 4>"; }

/// The plain loads and stores of a one-op layer_norm or rms_norm warp
/// kernel.
WarpRowIO plainNormIO(Operation *op) {
  Type t = elementTypeOf(op->getOperand(0)),
       rt = elementTypeOf(op->getResult(0));
  WarpRowIO io;
  io.params = inParam(t, "in");
  io.rowReads = {{"in", t}};
  io.args = {KernelArg::operand(0)};
  io.outParams = outParam(rt, "out");
  io.outArgs = {KernelArg::result(0)};
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    io.operandArgs.push_back(KernelArg::operand(i));
  io.rowSetup = "    const " + vec4(t) + " *x_row = reinterpret_cast<const " +
                vec4(t) + " *>(in + row * kCols);\n";
  io.load = "        const " + vec4(t) +
            " v = x_row[c];\n"
            "#pragma unroll\n"
            "        for (int e = 0; e < 4; ++e)\n"
            "          x[i][e] = " +
            loadAs(t, "v.v[e]") + ";\n";
  io.storeSetup = "    " + vec4(rt) + " *y_row = reinterpret_cast<" +
                  vec4(rt) + " *>(out + row * kCols);\n";
  io.storeBegin = "        " + vec4(rt) + " o;\n";
  io.storeElement = [rt](const std::string &y) {
    return "          o.v[e] = " + storeAs(rt, y) + ";\n";
  };
  io.storeEnd = "        y_row[c] = o;\n";
  io.types = {t, rt};
  return io;
}

/// LLMC_LAYER_NORM_KERNEL=persistent, a measurement variant
/// (RowKernelsGpuBandwidth): at most kResidentBlocks blocks (4 of 8 warps on
/// each of 132 SMs: an H100's or H200's, as many as its 59 registers a
/// thread let reside) stride over the rows, each warp asking L2 for its
/// next row's row tensors before it reads this one, instead of one row a
/// warp in 4 waves. The arithmetic is the same: bitwise equal results.
constexpr int64_t kResidentBlocks = 4 * 132;

bool persistentLayerNorm() {
  const char *e = std::getenv("LLMC_LAYER_NORM_KERNEL");
  return e && std::string(e) == "persistent";
}

} // namespace

/// layer_norm or rms_norm, one warp per row (file comment). The same
/// formulas as the block kernels: ((x - mean) * rstd) * w + b, rstd = 1 /
/// sqrt(var + eps); (x * rstd) * w, rstd = 1 / sqrt(mean(x^2) + eps).
LogicalResult emitLayerNormWarpRows(Operation *op, const EmitContext &ctx,
                                    OpLowering &out, const WarpRowIO &io) {
  auto ln = dyn_cast<LayerNormOp>(op);
  auto rms = dyn_cast<RmsNormOp>(op);
  if (!ln && !rms)
    return op->emitError("codegen: the warp row kernel takes layer_norm or "
                         "rms_norm");
  Rows r = rowsOf(shapeOf(op->getOperand(0)),
                  ln ? ln.getAxis() : rms.getAxis());
  Value weight = ln ? ln.getWeight() : rms.getWeight();
  Value bias = ln ? ln.getBias() : Value();
  double eps = (ln ? ln.getEpsilon() : rms.getEpsilon()).convertToDouble();
  KernelSource src(op, ctx.name);
  src.scheme(ln ? "layer_norm: one warp per row, the row in registers "
                  "(4-element vectors); mean, then the sum of squared "
                  "deviations (warp butterflies), then ((x - mean) * rstd) * "
                  "w + b"
                : "rms_norm: one warp per row, the row in registers "
                  "(4-element vectors); the sum of squares (a warp "
                  "butterfly), then (x * rstd) * w");
  if (!io.scheme.empty())
    src.scheme(io.scheme);
  src.constant("kRows", r.rows, "rows");
  src.constant("kCols", r.cols, "elements per row");
  src.constant("kBlock", kWarpRowBlock, "threads per block, one warp per row");
  src.indexRange(r.rows * r.cols);
  src.floatConstant("kEps", eps, "epsilon");
  src.staticAssert("kCols % 4 == 0 && kBlock % 32 == 0",
                   "whole vectors, whole warps");
  for (Type t : io.types)
    src.use(t);
  bool persistent = persistentLayerNorm();
  std::string prefetch;
  if (persistent) {
    src.scheme("persistent (LLMC_LAYER_NORM_KERNEL): at most " +
               std::to_string(kResidentBlocks) +
               " blocks; each warp asks L2 for its next row first");
    src.helper(warpRowHelpers() + warpRowPrefetchHelper() + io.helpers);
    prefetch = "    if (row + (index_t)gridDim.x * kWarps < kRows) {\n"
               "      const index_t next = row + (index_t)gridDim.x * "
               "kWarps;\n";
    for (const auto &[name, type] : io.rowReads)
      prefetch += "      prefetchL2(" + name + " + next * kCols, kCols * "
                  "(int)sizeof(*" + name + "), lane);\n";
    prefetch += "    }\n";
  } else {
    src.helper(warpRowHelpers() + io.helpers);
  }
  std::string params = io.params;
  std::vector<KernelArg> args = io.args;
  std::string y = ln ? "(x[i][e] - mean) * rstd" : "x[i][e] * rstd", loads;
  unsigned next = 1;
  if (Value w = weight) {
    Type wt = elementTypeOf(w);
    src.use(wt);
    params += ", " + inParam(wt, "weight");
    args.push_back(io.operandArgs[next++]);
    loads += "        const " + vec4(wt) + " w = reinterpret_cast<const " +
             vec4(wt) + " *>(weight)[c];\n";
    y = "(" + y + ") * " + loadAs(wt, "w.v[e]");
  }
  if (Value b = bias) {
    Type bt = elementTypeOf(b);
    src.use(bt);
    params += ", " + inParam(bt, "bias");
    args.push_back(io.operandArgs[next++]);
    loads += "        const " + vec4(bt) + " b = reinterpret_cast<const " +
             vec4(bt) + " *>(bias)[c];\n";
    y += " + " + loadAs(bt, "b.v[e]");
  }
  params += ", " + io.outParams;
  args.insert(args.end(), io.outArgs.begin(), io.outArgs.end());
  src.kernel(
      "constexpr int kChunks = kCols / 4, kPerLane = (kChunks + 31) / 32;\n"
      "constexpr int kWarps = kBlock / 32;\n"
      "extern \"C\" __global__ void __launch_bounds__(kBlock)\n" +
      ctx.name + "(" + params +
      ") {\n"
      "  const int lane = threadIdx.x % 32;\n"
      "  for (index_t row = (index_t)blockIdx.x * kWarps + threadIdx.x / 32;\n"
      "       row < kRows; row += (index_t)gridDim.x * kWarps) {\n" +
      prefetch + io.rowSetup +
      "    float x[kPerLane][4];\n" +
      std::string(ln ? "    float sum = 0.0f;\n" : "    float sq = 0.0f;\n") +
      "#pragma unroll\n"
      "    for (int i = 0; i < kPerLane; ++i) {\n"
      "      const int c = lane + 32 * i;\n"
      "      if (c < kChunks) {\n" +
      io.load +
      "      } else {\n"
      "#pragma unroll\n"
      "        for (int e = 0; e < 4; ++e)\n"
      "          x[i][e] = 0.0f;\n"
      "      }\n"
      "#pragma unroll\n"
      "      for (int e = 0; e < 4; ++e)\n" +
      (ln ? "        sum += x[i][e];\n" : "        sq += x[i][e] * x[i][e];\n") +
      "    }\n" +
      (ln ? "    const float mean = warpAllSum(sum) / (float)kCols;\n"
            "    float sq = 0.0f;\n"
            "#pragma unroll\n"
            "    for (int i = 0; i < kPerLane; ++i)\n"
            "      if (lane + 32 * i < kChunks)\n"
            "#pragma unroll\n"
            "        for (int e = 0; e < 4; ++e)\n"
            "          sq += (x[i][e] - mean) * (x[i][e] - mean);\n"
          : "") +
      "    const float rstd = 1.0f / sqrtf(warpAllSum(sq) / (float)kCols + "
      "kEps);\n" +
      io.storeSetup +
      "#pragma unroll\n"
      "    for (int i = 0; i < kPerLane; ++i) {\n"
      "      const int c = lane + 32 * i;\n"
      "      if (c < kChunks) {\n" +
      loads + io.storeBegin +
      "#pragma unroll\n"
      "        for (int e = 0; e < 4; ++e) {\n" +
      io.storeElement(y) +
      "        }\n" +
      io.storeEnd +
      "      }\n"
      "    }\n"
      "  }\n}\n");
  EmittedKernel k;
  k.name = src.name();
  k.source = src.str();
  int64_t warps = kWarpRowBlock / 32;
  k.grid = {static_cast<unsigned>(
                std::min<int64_t>((r.rows + warps - 1) / warps,
                                  persistent ? kResidentBlocks : 1 << 30)),
            1, 1};
  k.block = {kWarpRowBlock, 1, 1};
  k.args = std::move(args);
  return singleKernel(out, std::move(k));
}

namespace {

LogicalResult emitLayerNorm(LayerNormOp op, const EmitContext &ctx,
                            OpLowering &out) {
  Shape shape = shapeOf(op.getInput());
  Rows r = rowsOf(shape, op.getAxis());
  if (mlir::llmc::fusion::hasWarpRowKernel(op))
    return emitLayerNormWarpRows(op, ctx, out, plainNormIO(op));
  Type t = elementTypeOf(op.getInput()), rt = elementTypeOf(op.getResult());
  unsigned block = rowBlockSize(r.cols);
  KernelSource src(op, ctx.name);
  src.scheme("layer_norm: one block per row; Welford mean/variance (one "
             "pass, merged across threads), then (x - mean) * rstd * w + b");
  rowConstants(src, r.rows, r.cols, block);
  src.floatConstant("kEps", op.getEpsilon().convertToDouble(), "epsilon");
  src.helper(blockReduceHelpers(kBlockWelford));
  std::string params = inParam(t, "in");
  std::vector<KernelArg> args = {KernelArg::operand(0)};
  std::string y = "(x - mean) * rstd";
  unsigned next = 1;
  if (Value w = op.getWeight()) {
    params += ", " + inParam(elementTypeOf(w), "weight");
    args.push_back(KernelArg::operand(next++));
    y = "(" + y + ") * " + loadAs(elementTypeOf(w), "weight[j]");
  }
  if (Value b = op.getBias()) {
    params += ", " + inParam(elementTypeOf(b), "bias");
    args.push_back(KernelArg::operand(next++));
    y += " + " + loadAs(elementTypeOf(b), "bias[j]");
  }
  params += ", " + outParam(rt, "out");
  args.push_back(KernelArg::result(0));
  src.kernel(rowKernelHead(ctx.name, params) + "    const " + storageType(t) +
             " *x_row = in + row * kCols;\n"
             "    float n = 0.0f, mean = 0.0f, m2 = 0.0f;\n"
             "    for (index_t j = threadIdx.x; j < kCols; j += kBlock) {\n"
             "      const float x = " +
             loadAs(t, "x_row[j]") +
             ";\n"
             "      n += 1.0f;\n"
             "      const float delta = x - mean;\n"
             "      mean += delta / n;\n"
             "      m2 += delta * (x - mean);\n"
             "    }\n"
             "    blockWelford(n, mean, m2);\n"
             "    const float rstd = 1.0f / sqrtf(m2 / (float)kCols + kEps);\n"
             "    for (index_t j = threadIdx.x; j < kCols; j += kBlock) {\n"
             "      const float x = " +
             loadAs(t, "x_row[j]") +
             ";\n"
             "      out[row * kCols + j] = " +
             storeAs(rt, y) +
             ";\n"
             "    }\n"
             "  }\n}\n");
  return singleKernel(out, rowLaunch(src, r.rows, block, std::move(args)));
}

LogicalResult emitRmsNorm(RmsNormOp op, const EmitContext &ctx,
                          OpLowering &out) {
  if (mlir::llmc::fusion::hasWarpRowKernel(op))
    return emitLayerNormWarpRows(op, ctx, out, plainNormIO(op));
  Shape shape = shapeOf(op.getInput());
  Rows r = rowsOf(shape, op.getAxis());
  Type t = elementTypeOf(op.getInput()), rt = elementTypeOf(op.getResult());
  unsigned block = rowBlockSize(r.cols);
  KernelSource src(op, ctx.name);
  src.scheme("rms_norm: one block per row; sum of squares (block "
             "reduction), then x * rstd * w");
  rowConstants(src, r.rows, r.cols, block);
  src.floatConstant("kEps", op.getEpsilon().convertToDouble(), "epsilon");
  src.helper(blockReduceHelpers(kBlockSum));
  std::string params = inParam(t, "in");
  std::vector<KernelArg> args = {KernelArg::operand(0)};
  std::string y = "x * rstd";
  if (Value w = op.getWeight()) {
    params += ", " + inParam(elementTypeOf(w), "weight");
    args.push_back(KernelArg::operand(1));
    y += " * " + loadAs(elementTypeOf(w), "weight[j]");
  }
  params += ", " + outParam(rt, "out");
  args.push_back(KernelArg::result(0));
  src.kernel(rowKernelHead(ctx.name, params) + "    const " + storageType(t) +
             " *x_row = in + row * kCols;\n"
             "    float sq = 0.0f;\n"
             "    for (index_t j = threadIdx.x; j < kCols; j += kBlock) {\n"
             "      const float x = " +
             loadAs(t, "x_row[j]") +
             ";\n"
             "      sq += x * x;\n"
             "    }\n"
             "    const float rstd = 1.0f / sqrtf(blockSum(sq) / (float)kCols "
             "+ kEps);\n"
             "    for (index_t j = threadIdx.x; j < kCols; j += kBlock) {\n"
             "      const float x = " +
             loadAs(t, "x_row[j]") +
             ";\n"
             "      out[row * kCols + j] = " +
             storeAs(rt, y) +
             ";\n"
             "    }\n"
             "  }\n}\n");
  return singleKernel(out, rowLaunch(src, r.rows, block, std::move(args)));
}

} // namespace

void registerNormEmitters(EmitterTable &t) {
  addEmitter<SoftmaxOp>(
      t, [](SoftmaxOp op, const EmitContext &ctx, OpLowering &out) {
        return emitSoftmax(op, ctx, out, /*log=*/false);
      });
  addEmitter<LogSoftmaxOp>(
      t, [](LogSoftmaxOp op, const EmitContext &ctx, OpLowering &out) {
        return emitSoftmax(op, ctx, out, /*log=*/true);
      });
  addEmitter<LayerNormOp>(t, emitLayerNorm);
  addEmitter<RmsNormOp>(t, emitRmsNorm);
}

} // namespace llmc::codegen
