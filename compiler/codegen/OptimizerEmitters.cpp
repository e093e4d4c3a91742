//===- OptimizerEmitters.cpp - adamw_update -------------------------------===//
//
// adamw_update(p, g, m, v, lr, step) -> (p', m', v'): one thread per element
// in a grid-stride loop, torch.optim.AdamW exactly as the reference
// evaluator computes it (decoupled decay first, then both bias corrections
// with the incremented step t):
//
//   m' = b1 m + (1 - b1) g          v' = b2 v + (1 - b2) g^2
//   p' = p (1 - lr wd) - lr / (1 - b1^t) * m' / (sqrt(v') / sqrt(1 - b2^t) + eps)
//
// lr (f32) and t (i64) are rank-0 tensors read from device memory, so a
// learning-rate schedule changes them between graph replays without a new
// kernel. The bias corrections are computed once per thread in double (pow
// of a rounded beta drifts in f32 over many steps); the per-element math is
// f32 as everywhere else.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Emitters.h"

#include "dialects/llmc/LlmcOps.h"

#include <cstdio>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

LogicalResult emitAdamW(AdamWUpdateOp op, const EmitContext &ctx,
                        OpLowering &out) {
  Shape shape = shapeOf(op.getParam());
  int64_t n = numElements(shape);
  Type pt = elementTypeOf(op.getParam()), gt = elementTypeOf(op.getGrad()),
       mt = elementTypeOf(op.getM()), vt = elementTypeOf(op.getV());
  double b1 = op.getBeta1().convertToDouble();
  double b2 = op.getBeta2().convertToDouble();
  KernelSource src(op, ctx.name);
  src.scheme("AdamW (torch.optim.AdamW): one thread per element, grid-stride "
             "loop; lr and step read from device memory");
  src.constant("kN", n, "elements of the parameter " + dimsString(shape));
  src.floatConstant("kBeta1", b1, "beta1");
  src.floatConstant("kOneMinusBeta1", 1.0 - b1, "1 - beta1");
  src.floatConstant("kBeta2", b2, "beta2");
  src.floatConstant("kOneMinusBeta2", 1.0 - b2, "1 - beta2");
  src.floatConstant("kEps", op.getEpsilon().convertToDouble(), "epsilon");
  src.floatConstant("kWeightDecay", op.getWeightDecay().convertToDouble(),
                    "weight_decay");
  // The betas as doubles for the bias corrections.
  char betas[160];
  std::snprintf(betas, sizeof(betas),
                "constexpr double kBeta1d = %.17g, kBeta2d = %.17g;", b1, b2);
  src.helper(betas);
  src.kernel(
      "extern \"C\" __global__ void __launch_bounds__(" +
      std::to_string(ctx.options.blockSize) + ")\n" + ctx.name + "(" +
      inParam(pt, "param") + ", " + inParam(gt, "grad") + ", " +
      inParam(mt, "m") + ", " + inParam(vt, "v") +
      ", const float *__restrict__ lr_ptr, const long long *__restrict__ "
      "step_ptr, " +
      outParam(pt, "new_param") + ", " + outParam(mt, "new_m") + ", " +
      outParam(vt, "new_v") +
      ") {\n"
      "  const float lr = lr_ptr[0];\n"
      "  const double t = (double)step_ptr[0];\n"
      "  const float bc1 = (float)(1.0 - pow(kBeta1d, t));\n"
      "  const float rootBc2 = (float)sqrt(1.0 - pow(kBeta2d, t));\n"
      "  const float stepSize = lr / bc1;\n"
      "  const float decay = 1.0f - lr * kWeightDecay;\n"
      "  for (index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x; i "
      "< kN;\n"
      "       i += (index_t)gridDim.x * blockDim.x) {\n"
      "    const float g = " +
      loadAs(gt, "grad[i]") +
      ";\n"
      "    const float mi = kBeta1 * " +
      loadAs(mt, "m[i]") +
      " + kOneMinusBeta1 * g;\n"
      "    const float vi = kBeta2 * " +
      loadAs(vt, "v[i]") +
      " + kOneMinusBeta2 * g * g;\n"
      "    const float denom = sqrtf(vi) / rootBc2 + kEps;\n"
      "    new_param[i] = " +
      storeAs(pt, loadAs(pt, "param[i]") + " * decay - stepSize * mi / denom") +
      ";\n"
      "    new_m[i] = " +
      storeAs(mt, "mi") +
      ";\n"
      "    new_v[i] = " +
      storeAs(vt, "vi") +
      ";\n"
      "  }\n}\n");
  return singleKernel(
      out, elementwiseLaunch(
               src, ctx, n,
               {KernelArg::operand(0), KernelArg::operand(1),
                KernelArg::operand(2), KernelArg::operand(3),
                KernelArg::operand(4), KernelArg::operand(5),
                KernelArg::result(0), KernelArg::result(1),
                KernelArg::result(2)}));
}

} // namespace

void registerOptimizerEmitters(EmitterTable &t) {
  addEmitter<AdamWUpdateOp>(t, emitAdamW);
}

} // namespace llmc::codegen
