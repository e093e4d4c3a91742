//===- LossEmitters.cpp - cross_entropy -----------------------------------===//
//
// cross_entropy(logits [..., C], targets [...]) with ignore_index, as two
// kernels so that `mean` and `sum` are deterministic (no atomics):
//
//   <name>_rows    one block per position: online max/sum of exp over the
//                  C logits (one pass), loss = max + log(sum) - x[target];
//                  0 where target == ignore_index, NaN where the target is
//                  out of range (the reference reports an error). `none`
//                  writes the result here and is done.
//   <name>_reduce  one block sums the per-position losses and counts the
//                  positions that are not ignored, in a fixed order; `mean`
//                  divides (0/0 = NaN with none counted, as torch).
//
// Padded logits (`classes`, llmc-pad-shapes) keep their row stride kCols;
// the softmax runs over the first kClasses columns and the gradient of the
// others is zero.
//
// cross_entropy_grad(logits, targets, dloss) -> dlogits, the same way:
//
//   <name>_count   (`mean` only) one block counts the positions that are
//                  not ignored, in a fixed order, into scratch `count`.
//   <name>         one block per position: online max/sum of exp, then
//                  dlogits = w * (softmax - onehot(target)) with w = dloss
//                  (`sum`), dloss[pos] (`none`) or dloss / count (`mean`);
//                  zero rows where target == ignore_index, NaN rows where
//                  the target is out of range (the reference errors).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Emitters.h"

#include "dialects/llmc/LlmcOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

/// The bound of the softmax's columns: kCols, or kClasses when the logits
/// are padded (llmc-pad-shapes: the columns past it are not classes).
template <typename OpTy>
std::string classConstant(OpTy op, KernelSource &src) {
  if (!op.getClasses())
    return "kCols";
  src.constant("kClasses", *op.getClasses(),
               "real classes; the columns after them are padding");
  return "kClasses";
}

LogicalResult emitCrossEntropy(CrossEntropyOp op, const EmitContext &ctx,
                               OpLowering &out) {
  Shape logits = shapeOf(op.getLogits());
  int64_t classes = logits.back();
  int64_t positions = numElements(shapeOf(op.getTargets()));
  Type lt = elementTypeOf(op.getLogits()), tt = elementTypeOf(op.getTargets()),
       rt = elementTypeOf(op.getResult());
  bool none = op.getReduction() == LossReduction::none;
  bool mean = op.getReduction() == LossReduction::mean;
  std::string reduction = stringifyLossReduction(op.getReduction()).str();

  // Kernel 1: one block per position.
  std::string rowsName = none ? ctx.name : ctx.name + "_rows";
  unsigned block = rowBlockSize(classes);
  KernelSource rows(op, rowsName);
  rows.scheme("cross_entropy (" + reduction +
              "), kernel 1: one block per position; online max/sum of exp "
              "over the classes, loss = max + log(sum) - x[target]");
  if (!none)
    rows.scheme("per-position losses go to the f32 scratch buffer "
                "`row_loss`; " +
                ctx.name + "_reduce sums them");
  rows.constant("kRows", positions, "positions");
  rows.constant("kCols", classes, "classes");
  std::string cls = classConstant(op, rows);
  rows.constant("kBlock", block, "threads per block, one block per position");
  rows.staticAssert("kBlock % 32 == 0 && kBlock <= 1024",
                    "whole warps, one block");
  rows.constant("kIgnore", op.getIgnoreIndex(), "ignore_index");
  rows.helper(blockReduceHelpers(kBlockOnline));
  std::string store =
      none ? "out[row] = " + storeAs(rt, "loss") : "row_loss[row] = loss";
  std::string params = inParam(lt, "logits") + ", " + inParam(tt, "targets") +
                       ", " +
                       (none ? outParam(rt, "out")
                             : std::string("float *__restrict__ row_loss"));
  rows.kernel(
      "extern \"C\" __global__ void __launch_bounds__(kBlock)\n" + rowsName +
      "(" + params +
      ") {\n"
      "  for (index_t row = blockIdx.x; row < kRows; row += gridDim.x) {\n"
      "    const " +
      storageType(lt) +
      " *x = logits + row * kCols;\n"
      "    float m = -INFINITY, s = 0.0f;\n"
      "    for (index_t j = threadIdx.x; j < " + cls + "; j += kBlock)\n"
      "      onlineAdd(m, s, " +
      loadAs(lt, "x[j]") +
      ");\n"
      "    blockOnline(m, s);\n"
      "    if (threadIdx.x == 0) {\n"
      "      const long long target = targets[row];\n"
      "      float loss = 0.0f;\n"
      "      if (target != kIgnore)\n"
      "        loss = (target >= 0 && target < " + cls + ")\n"
      "                   ? m + logf(s) - " +
      loadAs(lt, "x[target]") +
      "\n"
      "                   : NAN;\n"
      "      " +
      store +
      ";\n"
      "    }\n"
      "  }\n}\n");
  EmittedKernel k1;
  k1.name = rowsName;
  k1.source = rows.str();
  k1.grid = {static_cast<unsigned>(std::min<int64_t>(positions, 1 << 30)), 1,
             1};
  k1.block = {block, 1, 1};
  k1.args = {KernelArg::operand(0), KernelArg::operand(1),
             none ? KernelArg::result(0) : KernelArg::scratch(0)};
  out.kind = OpLowering::Kind::Kernels;
  out.kernels.push_back(std::move(k1));
  if (none)
    return success();
  out.scratch.push_back({"row_loss", DType::F32, {positions}});

  // Kernel 2: one block reduces in a fixed order.
  std::string reduceName = ctx.name + "_reduce";
  KernelSource red(op, reduceName);
  red.scheme("cross_entropy (" + reduction +
             "), kernel 2: one block sums `row_loss` and counts the "
             "positions that are not ignored, in a fixed order");
  red.constant("kRows", positions, "positions");
  red.constant("kBlock", 1024, "threads of the one block");
  red.constant("kIgnore", op.getIgnoreIndex(), "ignore_index");
  red.staticAssert("kRows < (1 << 24)", "the count is exact in f32");
  red.helper(blockReduceHelpers(kBlockSum));
  std::string result = mean ? "total / counted" : "total";
  red.kernel("extern \"C\" __global__ void __launch_bounds__(kBlock)\n" +
             reduceName + "(const float *__restrict__ row_loss, " +
             inParam(tt, "targets") + ", " + outParam(rt, "out") +
             ") {\n"
             "  float sum = 0.0f, count = 0.0f;\n"
             "  for (index_t j = threadIdx.x; j < kRows; j += kBlock) {\n"
             "    sum += row_loss[j];\n"
             "    count += targets[j] != kIgnore ? 1.0f : 0.0f;\n"
             "  }\n"
             "  const float total = blockSum(sum);\n" +
             (mean ? "  const float counted = blockSum(count);\n"
                   : "  (void)count; // `sum` divides by nothing\n") +
             "  if (threadIdx.x == 0)\n"
             "    out[0] = " +
             storeAs(rt, result) +
             ";\n"
             "}\n");
  EmittedKernel k2;
  k2.name = reduceName;
  k2.source = red.str();
  k2.grid = {1, 1, 1};
  k2.block = {1024, 1, 1};
  k2.args = {KernelArg::scratch(0), KernelArg::operand(1),
             KernelArg::result(0)};
  out.kernels.push_back(std::move(k2));
  return success();
}

LogicalResult emitCrossEntropyGrad(CrossEntropyGradOp op,
                                   const EmitContext &ctx, OpLowering &out) {
  Shape logits = shapeOf(op.getLogits());
  int64_t classes = logits.back();
  int64_t positions = numElements(shapeOf(op.getTargets()));
  Type lt = elementTypeOf(op.getLogits()), tt = elementTypeOf(op.getTargets()),
       gt = elementTypeOf(op.getGrad()), rt = elementTypeOf(op.getResult());
  bool none = op.getReduction() == LossReduction::none;
  bool mean = op.getReduction() == LossReduction::mean;
  std::string reduction = stringifyLossReduction(op.getReduction()).str();
  out.kind = OpLowering::Kind::Kernels;

  if (mean) {
    std::string countName = ctx.name + "_count";
    KernelSource cnt(op, countName);
    cnt.scheme("cross_entropy_grad (mean), kernel 1: one block counts the "
               "positions that are not ignored into the f32 scratch `count`");
    cnt.constant("kRows", positions, "positions");
    cnt.constant("kBlock", 1024, "threads of the one block");
    cnt.constant("kIgnore", op.getIgnoreIndex(), "ignore_index");
    cnt.staticAssert("kRows < (1 << 24)", "the count is exact in f32");
    cnt.helper(blockReduceHelpers(kBlockSum));
    cnt.kernel("extern \"C\" __global__ void __launch_bounds__(kBlock)\n" +
               countName + "(" + inParam(tt, "targets") +
               ", float *__restrict__ count) {\n"
               "  float c = 0.0f;\n"
               "  for (index_t j = threadIdx.x; j < kRows; j += kBlock)\n"
               "    c += targets[j] != kIgnore ? 1.0f : 0.0f;\n"
               "  const float total = blockSum(c);\n"
               "  if (threadIdx.x == 0)\n"
               "    count[0] = total;\n"
               "}\n");
    EmittedKernel k;
    k.name = countName;
    k.source = cnt.str();
    k.block = {1024, 1, 1};
    k.args = {KernelArg::operand(1), KernelArg::scratch(0)};
    out.kernels.push_back(std::move(k));
    out.scratch.push_back({"count", DType::F32, {1}});
  }

  unsigned block = rowBlockSize(classes);
  KernelSource src(op, ctx.name);
  src.scheme("cross_entropy_grad (" + reduction +
             "): one block per position; online max/sum of exp over the "
             "classes, then w * (exp(x - max) / sum - onehot(target))");
  src.constant("kRows", positions, "positions");
  src.constant("kCols", classes, "classes");
  std::string cls = classConstant(op, src);
  src.constant("kBlock", block, "threads per block, one block per position");
  src.staticAssert("kBlock % 32 == 0 && kBlock <= 1024",
                   "whole warps, one block");
  src.constant("kIgnore", op.getIgnoreIndex(), "ignore_index");
  src.helper(blockReduceHelpers(kBlockOnline));
  std::string params = inParam(lt, "logits") + ", " + inParam(tt, "targets") +
                       ", " + inParam(gt, "dloss");
  std::vector<KernelArg> args = {KernelArg::operand(0), KernelArg::operand(1),
                                 KernelArg::operand(2)};
  if (mean) {
    params += ", const float *__restrict__ count";
    args.push_back(KernelArg::scratch(0));
  }
  params += ", " + outParam(rt, "dlogits");
  args.push_back(KernelArg::result(0));
  std::string weight = none   ? loadAs(gt, "dloss[row]")
                       : mean ? loadAs(gt, "dloss[0]") + " / count[0]"
                              : loadAs(gt, "dloss[0]");
  src.kernel(
      "extern \"C\" __global__ void __launch_bounds__(kBlock)\n" + ctx.name +
      "(" + params +
      ") {\n"
      "  for (index_t row = blockIdx.x; row < kRows; row += gridDim.x) {\n"
      "    const " +
      storageType(lt) +
      " *x = logits + row * kCols;\n"
      "    " +
      storageType(rt) +
      " *d = dlogits + row * kCols;\n"
      "    const long long target = targets[row];\n"
      "    if (target == kIgnore) {\n"
      "      for (index_t j = threadIdx.x; j < kCols; j += kBlock)\n"
      "        d[j] = " +
      storeAs(rt, "0.0f") +
      ";\n"
      "      continue; // a zero row, uniformly for the block\n"
      "    }\n"
      "    float m = -INFINITY, s = 0.0f;\n"
      "    for (index_t j = threadIdx.x; j < " + cls + "; j += kBlock)\n"
      "      onlineAdd(m, s, " +
      loadAs(lt, "x[j]") +
      ");\n"
      "    blockOnline(m, s);\n"
      "    const float w = (target >= 0 && target < " + cls + ") ? " +
      weight +
      " : NAN;\n"
      "    const float inv = 1.0f / s;\n"
      "    for (index_t j = threadIdx.x; j < kCols; j += kBlock) {\n"
      "      const float p = " +
      (op.getClasses() ? "j >= kClasses ? 0.0f : " : "") + "expf(" +
      loadAs(lt, "x[j]") +
      " - m) * inv;\n"
      "      d[j] = " +
      storeAs(rt, "w * (p - (j == target ? 1.0f : 0.0f))") +
      ";\n"
      "    }\n"
      "  }\n}\n");
  EmittedKernel k;
  k.name = ctx.name;
  k.source = src.str();
  k.grid = {static_cast<unsigned>(std::min<int64_t>(positions, 1 << 30)), 1, 1};
  k.block = {block, 1, 1};
  k.args = std::move(args);
  out.kernels.push_back(std::move(k));
  return success();
}

} // namespace

void registerLossEmitters(EmitterTable &t) {
  addEmitter<CrossEntropyOp>(t, emitCrossEntropy);
  addEmitter<CrossEntropyGradOp>(t, emitCrossEntropyGrad);
}

} // namespace llmc::codegen
