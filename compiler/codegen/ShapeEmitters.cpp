//===- ShapeEmitters.cpp - Data movement: transpose, slice, concat, ... ---===//
//
// Data movement copies elements in their storage type (no conversion), one
// thread per element of what it writes, in a grid-stride loop:
//
//   transpose, broadcast_to, slice   out[i] = in[base + sum_d c_d(i) * s_d]
//                                    with the strides permuted, zeroed on
//                                    broadcast dims or multiplied by the
//                                    slice step (a strided copy)
//   concat                           out viewed as [outer, A, inner]; the
//                                    axis coordinate picks the operand
//   split                            one kernel reads the operand once and
//                                    writes every result
//   gather, gather_elements          an index read, normalized when
//                                    negative; out of range gives 0 (NaN
//                                    for floats), where the reference
//                                    reports an error
//   iota                             start + step * coordinate
//
// reshape is an alias of its operand's buffer and constant a buffer with
// initial data: neither is a kernel.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Emitters.h"
#include "compiler/codegen/SliceViews.h"

#include "dialects/llmc/LlmcOps.h"

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

std::string loopHead() {
  return "  for (index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x; "
         "i < kN;\n       i += (index_t)gridDim.x * blockDim.x) {\n";
}

std::string kernelHead(const EmitContext &ctx, const std::string &params) {
  return "extern \"C\" __global__ void __launch_bounds__(" +
         std::to_string(ctx.options.blockSize) + ")\n" + ctx.name + "(" +
         params + ") {\n";
}

/// out[i] = in[base + offset(i)] over the result's shape, where `strides`
/// address the operand in the result's coordinates.
LogicalResult emitStridedCopy(Operation *op, const EmitContext &ctx,
                              OpLowering &out, const Strides &strides,
                              int64_t base, const std::string &scheme) {
  Shape shape = shapeOf(op->getResult(0));
  IndexSpace flat = collapseDims({shape, {strides}});
  KernelSource src(op, ctx.name);
  src.scheme("one thread per element, grid-stride loop; " + scheme);
  int64_t n = numElements(shape);
  src.constant("kN", n, "elements of the result " + dimsString(shape));
  src.constant("kBase", base, "first element read");
  Type t = elementTypeOf(op->getResult(0));
  std::string body =
      emitCoordinates("i", "i", flat.shape,
                      neededCoordinates(flat.shape, flat.strides), "    ");
  body += "    out[i] = in[kBase + " +
          offsetExpression("i", "i", flat.shape, flat.strides[0]) + "];\n";
  src.kernel(kernelHead(ctx, inParam(t, "in") + ", " + outParam(t, "out")) +
             loopHead() + body + "  }\n}\n");
  return singleKernel(
      out, elementwiseLaunch(src, ctx, n,
                             {KernelArg::operand(0), KernelArg::result(0)}));
}

LogicalResult emitTranspose(TransposeOp op, const EmitContext &ctx,
                            OpLowering &out) {
  Strides in = rowMajorStrides(shapeOf(op.getInput()));
  ArrayRef<int64_t> perm = op.getPermutation();
  Strides strides;
  for (int64_t p : perm)
    strides.push_back(in[p]);
  std::string permText;
  for (int64_t p : perm)
    permText += (permText.empty() ? "" : ", ") + std::to_string(p);
  return emitStridedCopy(op, ctx, out, strides, 0,
                         "transpose [" + permText +
                             "]: out[c] = in[c permuted]");
}

LogicalResult emitBroadcastTo(BroadcastToOp op, const EmitContext &ctx,
                              OpLowering &out) {
  return emitStridedCopy(
      op, ctx, out,
      broadcastStrides(shapeOf(op.getInput()), shapeOf(op.getResult())), 0,
      "broadcast: stride 0 along repeated dims");
}

LogicalResult emitSlice(SliceOp op, const EmitContext &ctx, OpLowering &out) {
  // A contiguous window read in place (SliceViews.h): no launch.
  if (sliceViewOffset(op)) {
    out.kind = OpLowering::Kind::Alias;
    return success();
  }
  Strides in = rowMajorStrides(shapeOf(op.getInput()));
  Strides strides;
  int64_t base = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    strides.push_back(in[d] * op.getStrides()[d]);
    base += op.getStarts()[d] * in[d];
  }
  return emitStridedCopy(op, ctx, out, strides, base,
                         "slice: in[start + c * step]");
}

/// [outer, axis, inner] sizes of `shape` around `axis`.
std::array<int64_t, 3> aroundAxis(const Shape &shape, int64_t axis) {
  std::array<int64_t, 3> s = {1, shape[axis], 1};
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (d != axis)
      s[d < axis ? 0 : 2] *= shape[d];
  return s;
}

LogicalResult emitConcat(ConcatOp op, const EmitContext &ctx, OpLowering &out) {
  int64_t axis = op.getAxis();
  Shape shape = shapeOf(op.getResult());
  auto [outer, total, inner] = aroundAxis(shape, axis);
  KernelSource src(op, ctx.name);
  src.scheme("one thread per element of the result viewed as [outer, axis, "
             "inner]; the axis coordinate picks the operand");
  int64_t n = numElements(shape);
  src.constant("kN", n, "elements of the result " + dimsString(shape));
  src.constant("kInner", inner, "elements after the axis");
  src.constant("kAxis", total,
               "result size along axis " + std::to_string(axis));
  Type t = elementTypeOf(op.getResult());
  std::string params, body;
  std::vector<KernelArg> args;
  body += "    const index_t c = i % kInner;\n"
          "    const index_t a = (i / kInner) % kAxis;\n"
          "    const index_t o = i / (kInner * kAxis);\n";
  int64_t start = 0;
  unsigned count = op.getInputs().size();
  for (unsigned k = 0; k < count; ++k) {
    int64_t size = shapeOf(op.getInputs()[k])[axis];
    std::string sz = "kSize" + std::to_string(k);
    src.constant(sz, size, "operand #" + std::to_string(k) + " along the axis");
    params += inParam(t, "in" + std::to_string(k)) + ", ";
    args.push_back(KernelArg::operand(k));
    std::string read = "in" + std::to_string(k) + "[(o * " + sz + " + (a - " +
                       std::to_string(start) + ")) * kInner + c]";
    if (k + 1 < count)
      body += std::string(k ? "    else if" : "    if") + " (a < " +
              std::to_string(start + size) + ")\n      out[i] = " + read +
              ";\n";
    else
      body +=
          std::string(k ? "    else\n  " : "") + "    out[i] = " + read + ";\n";
    start += size;
  }
  src.staticAssert("kAxis == " + std::to_string(start),
                   "operand sizes add up to the result's");
  params += outParam(t, "out");
  args.push_back(KernelArg::result(0));
  src.kernel(kernelHead(ctx, params) + loopHead() + body + "  }\n}\n");
  return singleKernel(out, elementwiseLaunch(src, ctx, n, std::move(args)));
}

LogicalResult emitSplit(SplitOp op, const EmitContext &ctx, OpLowering &out) {
  int64_t axis = op.getAxis();
  Shape shape = shapeOf(op.getInput());
  auto [outer, total, inner] = aroundAxis(shape, axis);
  KernelSource src(op, ctx.name);
  src.scheme("one thread per element of the operand viewed as [outer, axis, "
             "inner]; one kernel writes every result");
  int64_t n = numElements(shape);
  src.constant("kN", n, "elements of the operand " + dimsString(shape));
  src.constant("kInner", inner, "elements after the axis");
  src.constant("kAxis", total,
               "operand size along axis " + std::to_string(axis));
  Type t = elementTypeOf(op.getInput());
  std::string params = inParam(t, "in");
  std::vector<KernelArg> args = {KernelArg::operand(0)};
  std::string body = "    const index_t c = i % kInner;\n"
                     "    const index_t a = (i / kInner) % kAxis;\n"
                     "    const index_t o = i / (kInner * kAxis);\n";
  int64_t start = 0;
  unsigned count = op.getNumResults();
  for (unsigned k = 0; k < count; ++k) {
    int64_t size = op.getSizes()[k];
    std::string sz = "kSize" + std::to_string(k);
    src.constant(sz, size, "result #" + std::to_string(k) + " along the axis");
    params += ", " + outParam(t, "out" + std::to_string(k));
    args.push_back(KernelArg::result(k));
    std::string write = "out" + std::to_string(k) + "[(o * " + sz + " + (a - " +
                        std::to_string(start) + ")) * kInner + c] = in[i];\n";
    if (k + 1 < count)
      body += std::string(k ? "    else if" : "    if") + " (a < " +
              std::to_string(start + size) + ")\n      " + write;
    else
      body += std::string(k ? "    else\n  " : "") + "    " + write;
    start += size;
  }
  src.staticAssert("kAxis == " + std::to_string(start),
                   "result sizes add up to the operand's");
  src.kernel(kernelHead(ctx, params) + loopHead() + body + "  }\n}\n");
  return singleKernel(out, elementwiseLaunch(src, ctx, n, std::move(args)));
}

/// What an out-of-range index reads: NaN for floats, 0 otherwise.
std::string outOfRangeValue(Type t) {
  return isFloatType(t) ? storeAs(t, "NAN") : "(" + storageType(t) + ")0";
}

LogicalResult emitGather(GatherOp op, const EmitContext &ctx, OpLowering &out) {
  int64_t axis = op.getAxis();
  Shape data = shapeOf(op.getData());
  auto [outer, dim, inner] = aroundAxis(data, axis);
  int64_t count = numElements(shapeOf(op.getIndices()));
  Shape shape = shapeOf(op.getResult());
  KernelSource src(op, ctx.name);
  src.scheme("one thread per element of the result viewed as [outer, "
             "indices, inner]; negative indices count from the end");
  int64_t n = numElements(shape);
  src.constant("kN", n, "elements of the result " + dimsString(shape));
  src.constant("kInner", inner, "elements after the axis");
  src.constant("kIndices", count, "elements of the indices");
  src.constant("kDim", dim, "data size along axis " + std::to_string(axis));
  // A padded table (llmc-pad-shapes) reads only its real rows.
  std::string bound = "kDim";
  if (op.getBound()) {
    bound = "kBound";
    src.constant("kBound", *op.getBound(),
                 "indices in range: the real rows of a padded table");
  }
  Type t = elementTypeOf(op.getData()), it = elementTypeOf(op.getIndices());
  std::string body =
      "    const index_t c = i % kInner;\n"
      "    const index_t j = (i / kInner) % kIndices;\n"
      "    const index_t o = i / (kInner * kIndices);\n"
      "    long long k = indices[j];\n"
      "    if (k < 0)\n      k += " + bound + ";\n"
      "    out[i] = (k >= 0 && k < " + bound + ") ? data[(o * kDim + k) * kInner + c]\n"
      "                                  " + std::string(bound.size() - 4, ' ') + ": " +
      outOfRangeValue(t) + ";\n";
  src.kernel(kernelHead(ctx, inParam(t, "data") + ", " +
                                 inParam(it, "indices") + ", " +
                                 outParam(t, "out")) +
             loopHead() + body + "  }\n}\n");
  return singleKernel(
      out, elementwiseLaunch(src, ctx, n,
                             {KernelArg::operand(0), KernelArg::operand(1),
                              KernelArg::result(0)}));
}

LogicalResult emitGatherElements(GatherElementsOp op, const EmitContext &ctx,
                                 OpLowering &out) {
  int64_t axis = op.getAxis();
  Shape data = shapeOf(op.getData()), shape = shapeOf(op.getIndices());
  Strides ds = rowMajorStrides(data);
  Strides others = ds;
  others[axis] = 0; // the axis coordinate comes from the index
  IndexSpace flat = collapseDims({shape, {others, rowMajorStrides(shape)}});
  KernelSource src(op, ctx.name);
  src.scheme("one thread per element of the indices; data read at the "
             "element's coordinates with the index along axis " +
             std::to_string(axis));
  int64_t n = numElements(shape);
  src.constant("kN", n, "elements of the result " + dimsString(shape));
  src.constant("kDim", data[axis], "data size along the axis");
  src.constant("kAxisStride", ds[axis], "data stride of the axis");
  Type t = elementTypeOf(op.getData()), it = elementTypeOf(op.getIndices());
  std::string body =
      emitCoordinates("i", "i", flat.shape,
                      neededCoordinates(flat.shape, {flat.strides[0]}), "    ");
  body += "    long long k = indices[i];\n"
          "    if (k < 0)\n      k += kDim;\n"
          "    out[i] = (k >= 0 && k < kDim) ? data[" +
          offsetExpression("i", "i", flat.shape, flat.strides[0]) +
          " + k * kAxisStride]\n                                  : " +
          outOfRangeValue(t) + ";\n";
  src.kernel(kernelHead(ctx, inParam(t, "data") + ", " +
                                 inParam(it, "indices") + ", " +
                                 outParam(t, "out")) +
             loopHead() + body + "  }\n}\n");
  return singleKernel(
      out, elementwiseLaunch(src, ctx, n,
                             {KernelArg::operand(0), KernelArg::operand(1),
                              KernelArg::result(0)}));
}

LogicalResult emitIota(IotaOp op, const EmitContext &ctx, OpLowering &out) {
  Shape shape = shapeOf(op.getResult());
  int64_t dim = op.getDimension();
  KernelSource src(op, ctx.name);
  src.scheme("one thread per element; y = start + step * coordinate along "
             "dim " +
             std::to_string(dim));
  int64_t n = numElements(shape);
  src.constant("kN", n, "elements of the result " + dimsString(shape));
  Type t = elementTypeOf(op.getResult());
  std::vector<bool> needed(shape.size(), false);
  needed[dim] = true;
  std::string body = emitCoordinates("i", "i", shape, needed, "    ");
  std::string c = "i_c" + std::to_string(dim);
  std::string value;
  if (isFloatType(t)) {
    src.floatConstant("kStart", op.getStart().convertToDouble());
    src.floatConstant("kStep", op.getStep().convertToDouble());
    value = storeAs(t, "kStart + kStep * (float)" + c);
  } else {
    auto start = static_cast<long long>(op.getStart().convertToDouble());
    auto step = static_cast<long long>(op.getStep().convertToDouble());
    value = "(" + storageType(t) + ")(" + std::to_string(start) + "LL + " +
            std::to_string(step) + "LL * " + c + ")";
  }
  body += "    out[i] = " + value + ";\n";
  src.kernel(kernelHead(ctx, outParam(t, "out")) + loopHead() + body +
             "  }\n}\n");
  return singleKernel(out,
                      elementwiseLaunch(src, ctx, n, {KernelArg::result(0)}));
}

} // namespace

void registerShapeEmitters(EmitterTable &t) {
  addEmitter<TransposeOp>(t, emitTranspose);
  addEmitter<BroadcastToOp>(t, emitBroadcastTo);
  addEmitter<SliceOp>(t, emitSlice);
  addEmitter<ConcatOp>(t, emitConcat);
  addEmitter<SplitOp>(t, emitSplit);
  addEmitter<GatherOp>(t, emitGather);
  addEmitter<GatherElementsOp>(t, emitGatherElements);
  addEmitter<IotaOp>(t, emitIota);
  addEmitter<ReshapeOp>(t, [](ReshapeOp, const EmitContext &, OpLowering &out) {
    out.kind = OpLowering::Kind::Alias;
    return success();
  });
  addEmitter<ConstantOp>(t,
                         [](ConstantOp, const EmitContext &, OpLowering &out) {
                           out.kind = OpLowering::Kind::Constant;
                           return success();
                         });
}

} // namespace llmc::codegen
