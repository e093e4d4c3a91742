//===- DropoutEmitter.cpp - llmc.dropout_mask on the GPU -------------------===//
//
// One thread per element, grid-stride loop: element i draws the first word
// of Philox4x32-10 under key (seed, seed >> 32) and counter (i, offset,
// step, step >> 32), and is 1 / (1 - ratio) when its top 24 bits reach the
// keep threshold, else 0. This is compiler/common/Philox.h written for the
// device (__umulhi for the high halves); the threshold and the scale (already
// rounded to the result type) come from the host code the evaluator uses,
// so both draw the same mask bit for bit (test/gpu/codegen checks it).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Emitters.h"
#include "compiler/common/ElementTypes.h"
#include "compiler/common/Philox.h"

#include "dialects/llmc/LlmcOps.h"

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

constexpr const char *kPhiloxDevice = R"(// Philox4x32-10, first output word.
__device__ __forceinline__ unsigned llmc_philox_w0(unsigned c0, unsigned c1,
                                                   unsigned c2, unsigned c3,
                                                   unsigned k0, unsigned k1) {
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const unsigned hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const unsigned hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c0;
})";

LogicalResult emitDropoutMask(DropoutMaskOp op, const EmitContext &ctx,
                              OpLowering &out) {
  Shape shape = shapeOf(op.getResult());
  int64_t n = numElements(shape);
  Type t = elementTypeOf(op.getResult());
  double ratio = op.getRatio().convertToDouble();
  std::optional<DType> dtype = dtypeOf(t);
  std::optional<FloatFormat> format =
      dtype ? floatFormatOf(*dtype) : std::nullopt;
  if (!format)
    return op.emitOpError("has no device float element type");
  double scale = roundToFormat(1.0 / (1.0 - ratio), *format);
  auto seed = static_cast<uint64_t>(op.getSeed());

  KernelSource src(op, ctx.name);
  src.scheme("one thread per element; y = philox(i, offset, step) keeps ? "
             "1 / (1 - ratio) : 0 (ratio " +
             std::to_string(ratio) + ")");
  src.constant("kN", n, "elements of the result " + dimsString(shape));
  src.constant("kThreshold", dropoutThreshold(ratio),
               "keep when the top 24 bits of the draw reach this");
  src.constant("kOffset", op.getOffset(), "this dropout site");
  src.constant("kSeedLo", seed & 0xffffffffu);
  src.constant("kSeedHi", seed >> 32);
  src.floatConstant("kScale", scale, "1 / (1 - ratio) in the result type");
  src.helper(kPhiloxDevice);

  std::vector<KernelArg> args;
  std::string params, stepExpr = "0ull";
  if (op.getStep()) {
    params = inParam(elementTypeOf(op.getStep()), "step") + ", ";
    stepExpr = "(unsigned long long)step[0]";
    args.push_back(KernelArg::operand(0));
  }
  params += outParam(t, "out");
  args.push_back(KernelArg::result(0));
  src.kernel(
      "extern \"C\" __global__ void __launch_bounds__(" +
      std::to_string(ctx.options.blockSize) + ")\n" + ctx.name + "(" + params +
      ") {\n  const unsigned long long s = " + stepExpr +
      ";\n"
      "  for (index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x; "
      "i < kN;\n"
      "       i += (index_t)gridDim.x * blockDim.x) {\n"
      "    const unsigned w = llmc_philox_w0((unsigned)i, (unsigned)kOffset, "
      "(unsigned)s,\n"
      "                                      (unsigned)(s >> 32), "
      "(unsigned)kSeedLo, (unsigned)kSeedHi);\n"
      "    out[i] = " +
      storeAs(t, "(w >> 8) >= (unsigned)kThreshold ? kScale : 0.0f") +
      ";\n  }\n}\n");
  return singleKernel(out, elementwiseLaunch(src, ctx, n, std::move(args)));
}

} // namespace

void registerDropoutEmitters(EmitterTable &t) {
  addEmitter<DropoutMaskOp>(t, emitDropoutMask);
}

} // namespace llmc::codegen
