//===- LossEmitters.cpp - cross_entropy -----------------------------------===//
//
// cross_entropy(logits [..., C], targets [...]) with ignore_index, as two
// kernels so that `mean` and `sum` are deterministic (no atomics):
//
//   <name>_rows    one block per position: online max/sum of exp over the
//                  C logits (one pass, vectors of 8 elements: the row kernel
//                  of ClassifierEmitter.cpp, which the fused classifier
//                  shares), loss = max + log(sum) - x[target];
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
//   <name>         one block per position (the same row kernel; the row is
//                  kept in registers when it fits): online max/sum of exp, then
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

  // Kernel 1: one block per position (ClassifierEmitter.cpp's row kernel,
  // the order every cross-entropy kernel shares).
  std::string rowsName = none ? ctx.name : ctx.name + "_rows";
  CrossEntropyRows r;
  r.op = op;
  r.name = rowsName;
  r.reduction = reductionOf(op.getReduction());
  r.positions = positions;
  r.cols = classes;
  r.classes = op.getClasses() ? *op.getClasses() : classes;
  r.ignoreIndex = op.getIgnoreIndex();
  r.lt = lt;
  r.tt = tt;
  r.loss = true;
  r.lossToScratch = !none;
  r.lossType = rt;
  r.logitsArg = KernelArg::operand(0);
  r.targetsArg = KernelArg::operand(1);
  r.lossArg = none ? KernelArg::result(0) : KernelArg::scratch(0);
  EmittedKernel k1 = crossEntropyRowsKernel(r);
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
  bool mean = op.getReduction() == LossReduction::mean;
  out.kind = OpLowering::Kind::Kernels;

  if (mean) {
    out.kernels.push_back(crossEntropyCountKernel(
        op, "cross_entropy_grad", positions, ctx.name + "_count", 0));
    out.scratch.push_back({"count", DType::F32, {1}});
  }

  CrossEntropyRows r;
  r.op = op;
  r.name = ctx.name;
  r.reduction = reductionOf(op.getReduction());
  r.positions = positions;
  r.cols = classes;
  r.classes = op.getClasses() ? *op.getClasses() : classes;
  r.ignoreIndex = op.getIgnoreIndex();
  r.lt = lt;
  r.tt = tt;
  r.grad = true;
  r.gt = gt;
  r.rt = rt;
  r.logitsArg = KernelArg::operand(0);
  r.targetsArg = KernelArg::operand(1);
  r.dlossArg = KernelArg::operand(2);
  r.countArg = KernelArg::scratch(0);
  r.gradArg = KernelArg::result(0);
  EmittedKernel k = crossEntropyRowsKernel(r);
  out.kernels.push_back(std::move(k));
  return success();
}

} // namespace

void registerLossEmitters(EmitterTable &t) {
  addEmitter<CrossEntropyOp>(t, emitCrossEntropy);
  addEmitter<CrossEntropyGradOp>(t, emitCrossEntropyGrad);
}

} // namespace llmc::codegen
