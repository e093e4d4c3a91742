//===- NormGradEmitters.cpp - layer/rms_norm_grad, softmax grads ----------===//
//
// Backward row ops (LlmcGradOps.td), one block per row like the forward:
//
//   layer_norm_grad, rms_norm_grad, rows of 4k <= 1024 elements: the warp
//   kernel, one launch (NormGradWarpKernel.cpp).
//   other rows (the block kernel, two launches):
//     <name>         kPartials blocks stride over the rows. Each thread keeps
//                    its columns' x and dy in registers, recomputes the row
//                    statistics (Welford, or the sum of squares), reduces
//                    mean(g) and mean(g * xhat) over the block, writes
//                    dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), and
//                    accumulates dy * xhat and dy for its columns over the
//                    rows its block visits.
//     <name>_params  (only with dweight or dbias) the per-block partial sums,
//                    [params, kPartials, kCols] f32 in scratch `partials`,
//                    are summed per column in a fixed order: 32 threads per
//                    column each sum every 32nd block, then one thread adds
//                    the 32 results. No atomics, so results are bitwise
//                    reproducible (graph replays equal plain runs).
//
//   softmax_grad, log_softmax_grad
//     one block per row along the axis (kInner apart, as the forward):
//     sum(dy * y) or sum(dy) by a block reduction, then
//     y * (dy - sum) or dy - exp(y) * sum.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/NormGradParts.h"

#include "dialects/llmc/LlmcOps.h"
#include "passes/FusionUtils.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

/// The per-column sums of the row pass: the parameter gradients (name,
/// what a row adds per column, where it goes) and, in a RowFused group,
/// the column sums of its row values (`io`; null for the block kernel).
std::vector<ParamGrad> paramGrads(const NormGradParts &p,
                                  const WarpRowIO *io) {
  unsigned params = (p.dweight ? 1 : 0) + (p.dbias ? 1 : 0);
  auto argOf = [&](unsigned result) {
    return io ? io->resultArgs[result] : KernelArg::result(result);
  };
  std::vector<ParamGrad> grads;
  if (p.dweight)
    grads.push_back(
        {"dweight", "dy[u] * xhat", elementTypeOf(p.dweight), argOf(1)});
  if (p.dbias)
    grads.push_back(
        {"dbias", "dy[u]", elementTypeOf(p.dbias), argOf(params)});
  if (io)
    for (const WarpRowIO::ColumnSum &c : io->columnSums)
      grads.push_back({c.name, c.add, c.type, c.arg});
  return grads;
}

NormGradParts normGradParts(Operation *op) {
  if (auto g = dyn_cast<LayerNormGradOp>(op))
    return {g.getInput(),   g.getGrad(),  g.getWeight(),
            g.getDx(),      g.getDweight(), g.getDbias(),
            g.getAxis(),    g.getEpsilon().convertToDouble(),
            /*center=*/true};
  auto g = cast<RmsNormGradOp>(op);
  return {g.getInput(),   g.getGrad(),  g.getWeight(),
          g.getDx(),      g.getDweight(), Value(),
          g.getAxis(),    g.getEpsilon().convertToDouble(),
          /*center=*/false};
}

namespace {

/// At most this many blocks (and partial sums per column) in the row pass of
/// the norm grads: about 8 resident blocks on each of an H100's 132 SMs.
constexpr int64_t kMaxPartials = 1024;
/// A thread keeps at most this many columns of a row in registers.
constexpr int64_t kMaxColsPerThread = 16;

std::string rowLoop() {
  return "  for (index_t row = blockIdx.x; row < kRows; row += gridDim.x) {\n";
}

LogicalResult appendParamSums(Operation *op, const EmitContext &ctx,
                              OpLowering &out, const NormGradParts &p, Rows r,
                              int64_t partials, const WarpRowIO *io = nullptr);

LogicalResult emitNormGrad(Operation *op, const EmitContext &ctx,
                           OpLowering &out, const NormGradParts &p) {
  Shape shape = shapeOf(p.input);
  Rows r = rowsOf(shape, p.axis);
  if (r.cols > 1024 * kMaxColsPerThread)
    return op->emitError("codegen: normalizing ")
           << r.cols << " elements per row is not supported (at most "
           << 1024 * kMaxColsPerThread << ")";
  Type t = elementTypeOf(p.input), gt = elementTypeOf(p.grad),
       xt = elementTypeOf(p.dx);
  unsigned block = r.cols > 4096 ? 1024 : rowBlockSize(r.cols);
  int64_t perThread = (r.cols + block - 1) / block;
  int64_t partials = std::max<int64_t>(1, std::min(r.rows, kMaxPartials));
  unsigned params = (p.dweight ? 1 : 0) + (p.dbias ? 1 : 0);
  const char *what = p.center ? "layer_norm_grad" : "rms_norm_grad";
  std::string rowsName = params ? ctx.name + "_rows" : ctx.name;
  if (r.cols % 4 == 0 && r.cols <= mlir::llmc::fusion::kMaxWarpNormGradRow)
    return warpNormGrad(op, ctx, out, p, plainNormGradIO(op, p));

  KernelSource src(op, rowsName);
  src.scheme(std::string(what) + ": " + std::to_string(partials) +
             " blocks stride over the rows; a row's x and dy stay in "
             "registers; statistics recomputed (" +
             (p.center ? "Welford" : "sum of squares") +
             "), then dx = rstd * (g - " + (p.center ? "mean(g) - " : "") +
             "xhat * mean(g * xhat)), g = dy * w");
  if (params)
    src.scheme(std::string("each block adds up ") +
               (p.dweight ? "dy * xhat" : "") +
               (p.dweight && p.dbias ? " and " : "") + (p.dbias ? "dy" : "") +
               " over its rows per column into its row of the f32 scratch "
               "`partials`; " +
               ctx.name + "_params sums the blocks in a fixed order");
  src.constant("kRows", r.rows, "rows");
  src.constant("kCols", r.cols, "elements per row");
  src.constant("kBlock", block, "threads per block");
  src.constant("kPartials", partials, "blocks, one partial sum each");
  src.constant("kPerThread", perThread, "columns per thread");
  src.floatConstant("kEps", p.epsilon, "epsilon");
  src.staticAssert("kBlock % 32 == 0 && kBlock <= 1024",
                   "whole warps, one block");
  src.staticAssert("kPerThread * kBlock >= kCols", "every column has a thread");
  src.helper(
      blockReduceHelpers(p.center ? (kBlockSum | kBlockWelford) : kBlockSum));

  std::string sig = inParam(t, "in") + ", " + inParam(gt, "grad");
  std::vector<KernelArg> args = {KernelArg::operand(0), KernelArg::operand(1)};
  std::string g = "dy[u]";
  if (p.weight) {
    Type wt = elementTypeOf(p.weight);
    sig += ", " + inParam(wt, "weight");
    args.push_back(KernelArg::operand(2));
    g = "dy[u] * " + loadAs(wt, "weight[j]");
  }
  sig += ", " + outParam(xt, "dx");
  args.push_back(KernelArg::result(0));
  if (params) {
    sig += ", float *__restrict__ partials";
    args.push_back(KernelArg::scratch(0));
  }

  std::string stats =
      p.center ? "    float n = 0.0f, mean = 0.0f, m2 = 0.0f;\n"
                 "    #pragma unroll\n"
                 "    for (int u = 0; u < kPerThread; ++u)\n"
                 "      if (threadIdx.x + u * kBlock < kCols) {\n"
                 "        n += 1.0f;\n"
                 "        const float delta = x[u] - mean;\n"
                 "        mean += delta / n;\n"
                 "        m2 += delta * (x[u] - mean);\n"
                 "      }\n"
                 "    blockWelford(n, mean, m2);\n"
                 "    const float rstd = 1.0f / sqrtf(m2 / (float)kCols + "
                 "kEps);\n"
               : "    float sq = 0.0f;\n"
                 "    #pragma unroll\n"
                 "    for (int u = 0; u < kPerThread; ++u)\n"
                 "      sq += x[u] * x[u];\n"
                 "    const float mean = 0.0f;\n"
                 "    const float rstd = 1.0f / sqrtf(blockSum(sq) / "
                 "(float)kCols + kEps);\n";
  std::vector<ParamGrad> grads = paramGrads(p);
  std::string accDecl, accAdd, accStore;
  for (unsigned slot = 0; slot < grads.size(); ++slot) {
    std::string acc = grads[slot].name + "Acc";
    accDecl += "  float " + acc + "[kPerThread];\n" +
               "  #pragma unroll\n"
               "  for (int u = 0; u < kPerThread; ++u)\n    " +
               acc + "[u] = 0.0f;\n";
    accAdd += "        " + acc + "[u] += " + grads[slot].add + ";\n";
    accStore += "      partials[(" + std::to_string(slot) +
                " * kPartials + blockIdx.x) * kCols + j] = " + acc + "[u];\n";
  }
  src.kernel(
      "extern \"C\" __global__ void __launch_bounds__(kBlock)\n" + rowsName +
      "(" + sig + ") {\n" + accDecl + rowLoop() +
      "    float x[kPerThread], dy[kPerThread];\n"
      "    #pragma unroll\n"
      "    for (int u = 0; u < kPerThread; ++u) {\n"
      "      const index_t j = threadIdx.x + u * kBlock;\n"
      "      x[u] = j < kCols ? " +
      loadAs(t, "in[row * kCols + j]") +
      " : 0.0f;\n"
      "      dy[u] = j < kCols ? " +
      loadAs(gt, "grad[row * kCols + j]") +
      " : 0.0f;\n"
      "    }\n" +
      stats +
      "    float sumG = 0.0f, sumGX = 0.0f;\n"
      "    #pragma unroll\n"
      "    for (int u = 0; u < kPerThread; ++u) {\n"
      "      const index_t j = threadIdx.x + u * kBlock;\n"
      "      if (j < kCols) {\n"
      "        const float g = " +
      g +
      ";\n"
      "        sumG += g;\n"
      "        sumGX += g * (x[u] - mean) * rstd;\n"
      "      }\n"
      "    }\n" +
      (p.center ? "    const float meanG = blockSum(sumG) / (float)kCols;\n"
                : "    (void)sumG;\n    const float meanG = 0.0f;\n") +
      "    const float meanGX = blockSum(sumGX) / (float)kCols;\n"
      "    #pragma unroll\n"
      "    for (int u = 0; u < kPerThread; ++u) {\n"
      "      const index_t j = threadIdx.x + u * kBlock;\n"
      "      if (j < kCols) {\n"
      "        const float xhat = (x[u] - mean) * rstd;\n"
      "        const float g = " +
      g +
      ";\n"
      "        dx[row * kCols + j] = " +
      storeAs(xt, "rstd * (g - meanG - xhat * meanGX)") + ";\n" + accAdd +
      "      }\n"
      "    }\n"
      "  }\n" +
      (params ? "  #pragma unroll\n"
                "  for (int u = 0; u < kPerThread; ++u) {\n"
                "    const index_t j = threadIdx.x + u * kBlock;\n"
                "    if (j < kCols) {\n" +
                    accStore + "    }\n  }\n"
              : std::string()) +
      "}\n");
  EmittedKernel k1;
  k1.name = rowsName;
  k1.source = src.str();
  k1.grid = {static_cast<unsigned>(partials), 1, 1};
  k1.block = {block, 1, 1};
  k1.args = std::move(args);
  out.kind = OpLowering::Kind::Kernels;
  out.kernels.push_back(std::move(k1));
  return appendParamSums(op, ctx, out, p, r, partials);
}

/// Kernel 2 (only with dweight or dbias): the partial sums of kernel 1's
/// blocks or warps, summed per column in a fixed order.
LogicalResult appendParamSums(Operation *op, const EmitContext &ctx,
                              OpLowering &out, const NormGradParts &p, Rows r,
                              int64_t partials, const WarpRowIO *io) {
  std::vector<ParamGrad> grads = paramGrads(p, io);
  auto params = static_cast<unsigned>(grads.size());
  if (!params)
    return success();
  const char *what = p.center ? "layer_norm_grad" : "rms_norm_grad";
  out.scratch.push_back({"partials",
                         DType::F32,
                         {static_cast<int64_t>(params), partials, r.cols}});

  // Kernel 2: per column, the kPartials partial sums in a fixed order.
  std::string sumName = ctx.name + "_params";
  KernelSource sum(op, sumName);
  sum.scheme(std::string(what) +
             ", kernel 2: 32 columns per block; thread (c, l) sums the "
             "partials of blocks l, l + 32, ...; thread (c, 0) adds the 32 "
             "results in order");
  sum.constant("kCols", r.cols, "columns");
  sum.constant("kPartials", partials, "partial sums per column");
  std::string ssig = "const float *__restrict__ partials";
  std::vector<KernelArg> sargs = {KernelArg::scratch(0)};
  std::string writes;
  for (unsigned slot = 0; slot < grads.size(); ++slot) {
    const ParamGrad &pg = grads[slot];
    Type vt = pg.type;
    sum.use(vt);
    ssig += ", " + outParam(vt, pg.name);
    sargs.push_back(pg.arg);
    writes += "  {\n"
              "    float s = 0.0f;\n"
              "    if (c < kCols)\n"
              "      for (index_t b = l; b < kPartials; b += 32)\n"
              "        s += partials[(" +
              std::to_string(slot) +
              " * kPartials + b) * kCols + c];\n"
              "    __syncthreads(); // `part` may still be read\n"
              "    part[l][cl] = s;\n"
              "    __syncthreads();\n"
              "    if (l == 0 && c < kCols) {\n"
              "      float total = 0.0f;\n"
              "      for (int i = 0; i < 32; ++i)\n"
              "        total += part[i][cl];\n"
              "      " +
              pg.name + "[c] = " + storeAs(vt, "total") +
              ";\n"
              "    }\n"
              "  }\n";
  }
  sum.kernel("extern \"C\" __global__ void __launch_bounds__(1024)\n" +
             sumName + "(" + ssig +
             ") {\n"
             "  __shared__ float part[32][33];\n"
             "  const int cl = threadIdx.x % 32, l = threadIdx.x / 32;\n"
             "  const index_t c = (index_t)blockIdx.x * 32 + cl;\n" +
             writes + "}\n");
  EmittedKernel k2;
  k2.name = sumName;
  k2.source = sum.str();
  k2.grid = {static_cast<unsigned>((r.cols + 31) / 32), 1, 1};
  k2.block = {1024, 1, 1};
  k2.args = std::move(sargs);
  out.kernels.push_back(std::move(k2));
  return success();
}

template <typename OpTy>
LogicalResult emitSoftmaxGrad(OpTy op, const EmitContext &ctx, OpLowering &out,
                              bool log) {
  Shape shape = shapeOf(op.getOutput());
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = op.getAxis() < 0 ? op.getAxis() + rank : op.getAxis();
  int64_t cols = shape[axis], inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= shape[d];
  int64_t rows = numElements(shape) / std::max<int64_t>(cols, 1);
  Type t = elementTypeOf(op.getOutput());
  unsigned block = rowBlockSize(cols);

  KernelSource src(op, ctx.name);
  src.scheme(std::string(log ? "log_softmax_grad" : "softmax_grad") +
             " along axis " + std::to_string(axis) + ": one block per row; " +
             (log ? "sum(dy)" : "sum(dy * y)") +
             " by a block reduction, then " +
             (log ? "dy - exp(y) * sum" : "y * (dy - sum)"));
  src.constant("kRows", rows, "rows");
  src.constant("kCols", cols, "elements per row");
  src.constant("kBlock", block, "threads per block, one block per row");
  src.constant("kInner", inner, "stride between a row's elements");
  src.staticAssert("kBlock % 32 == 0 && kBlock <= 1024",
                   "whole warps, one block");
  src.helper(blockReduceHelpers(kBlockSum));
  std::string y = loadAs(t, "out[at]"), dy = loadAs(t, "grad[at]");
  src.kernel(
      "extern \"C\" __global__ void __launch_bounds__(kBlock)\n" + ctx.name +
      "(" + inParam(t, "out") + ", " + inParam(t, "grad") + ", " +
      outParam(t, "dx") + ") {\n" + rowLoop() +
      "    const index_t base = (row / kInner) * (kCols * kInner) + row % "
      "kInner;\n"
      "    float acc = 0.0f;\n"
      "    for (index_t j = threadIdx.x; j < kCols; j += kBlock) {\n"
      "      const index_t at = base + j * kInner;\n"
      "      acc += " +
      (log ? dy : dy + " * " + y) +
      ";\n"
      "    }\n"
      "    const float sum = blockSum(acc);\n"
      "    for (index_t j = threadIdx.x; j < kCols; j += kBlock) {\n"
      "      const index_t at = base + j * kInner;\n"
      "      const float y = " +
      y + ", dy = " + dy +
      ";\n"
      "      dx[at] = " +
      storeAs(t, log ? "dy - expf(y) * sum" : "y * (dy - sum)") +
      ";\n"
      "    }\n"
      "  }\n}\n");
  EmittedKernel k;
  k.name = ctx.name;
  k.source = src.str();
  k.grid = {static_cast<unsigned>(std::min<int64_t>(rows, 1 << 30)), 1, 1};
  k.block = {block, 1, 1};
  k.args = {KernelArg::operand(0), KernelArg::operand(1), KernelArg::result(0)};
  return singleKernel(out, std::move(k));
}

} // namespace

void registerNormGradEmitters(EmitterTable &t) {
  addEmitter<LayerNormGradOp>(
      t, [](LayerNormGradOp op, const EmitContext &ctx, OpLowering &out) {
        return emitNormGrad(op, ctx, out, normGradParts(op));
      });
  addEmitter<RmsNormGradOp>(
      t, [](RmsNormGradOp op, const EmitContext &ctx, OpLowering &out) {
        return emitNormGrad(op, ctx, out, normGradParts(op));
      });
  addEmitter<SoftmaxGradOp>(
      t, [](SoftmaxGradOp op, const EmitContext &ctx, OpLowering &out) {
        return emitSoftmaxGrad(op, ctx, out, /*log=*/false);
      });
  addEmitter<LogSoftmaxGradOp>(
      t, [](LogSoftmaxGradOp op, const EmitContext &ctx, OpLowering &out) {
        return emitSoftmaxGrad(op, ctx, out, /*log=*/true);
      });
}

} // namespace llmc::codegen
