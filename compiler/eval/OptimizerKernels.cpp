//===- OptimizerKernels.cpp - AdamW updates and the global norm -----------===//
//
// Kernels of the ops that llmc-append-optimizer and llmc-batch-adamw emit,
// computed in double and rounded once per result like every other kernel:
// - adamw_update is torch.optim.AdamW (decoupled decay, both bias
//   corrections with the incremented step);
// - multi_adamw_update runs the same update on each of its tensors, after
//   scaling the gradient (rounded to the param's type, as llmc.mul would
//   round it; a bf16/f16 gradient is widened to that type first, exactly);
// - global_norm sums the squares of all inputs in double and rounds the sum
//   to the result's type before the square root, like the f32 reduction it
//   replaces.
//
//===----------------------------------------------------------------------===//
#include "compiler/eval/Kernels.h"

#include "dialects/llmc/LlmcOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc {

namespace {

struct AdamWHyper {
  double lr, t, b1, b2, eps;
};

/// One tensor's update into new p, m, v (rounded by the caller). `scale`,
/// when set, multiplies every gradient element first, rounded to p's kind
/// (a narrower g, multi_adamw_update's narrow read, is widened exactly
/// first; otherwise p's kind is g's).
void adamwTensor(const AdamWHyper &h, double wd, const RefTensor &p,
                 const RefTensor &g, const RefTensor &m, const RefTensor &v,
                 const RefTensor *scale, RefTensor &np, RefTensor &nm,
                 RefTensor &nv) {
  double bc1 = 1.0 - std::pow(h.b1, h.t), bc2 = 1.0 - std::pow(h.b2, h.t);
  for (int64_t i = 0, e = p.numElements(); i < e; ++i) {
    double gi = g.floats[i];
    if (scale)
      gi = roundToKind(gi * scale->floats[0], p.kind);
    double mi = h.b1 * m.floats[i] + (1.0 - h.b1) * gi;
    double vi = h.b2 * v.floats[i] + (1.0 - h.b2) * gi * gi;
    double denom = std::sqrt(vi) / std::sqrt(bc2) + h.eps;
    np.floats[i] = p.floats[i] * (1.0 - h.lr * wd) - h.lr / bc1 * mi / denom;
    nm.floats[i] = mi;
    nv.floats[i] = vi;
  }
  roundInPlace(np);
  roundInPlace(nm);
  roundInPlace(nv);
}

template <typename OpTy>
AdamWHyper hyperOf(OpTy op, const RefTensor &lr, const RefTensor &step) {
  return {lr.floats[0], static_cast<double>(step.ints[0]),
          op.getBeta1().convertToDouble(), op.getBeta2().convertToDouble(),
          op.getEpsilon().convertToDouble()};
}

LogicalResult adamwKernel(AdamWUpdateOp op, Operands in,
                          std::vector<RefTensor> &out) {
  RefTensor np = makeResult(op.getNewParam()), nm = makeResult(op.getNewM()),
            nv = makeResult(op.getNewV());
  adamwTensor(hyperOf(op, *in[4], *in[5]),
              op.getWeightDecay().convertToDouble(), *in[0], *in[1], *in[2],
              *in[3], nullptr, np, nm, nv);
  out.push_back(std::move(np));
  out.push_back(std::move(nm));
  out.push_back(std::move(nv));
  return success();
}

LogicalResult multiAdamwKernel(MultiAdamWUpdateOp op, Operands in,
                               std::vector<RefTensor> &out) {
  unsigned n = op.getNumTensors();
  AdamWHyper h = hyperOf(op, *in[4 * n], *in[4 * n + 1]);
  const RefTensor *scale = op.getScale() ? in[4 * n + 2] : nullptr;
  std::vector<RefTensor> np, nm, nv;
  for (unsigned k = 0; k < n; ++k) {
    np.push_back(makeResult(op.getNewParam(k)));
    nm.push_back(makeResult(op.getNewM(k)));
    nv.push_back(makeResult(op.getNewV(k)));
    adamwTensor(h, op.getWeightDecays()[k], *in[k], *in[n + k], *in[2 * n + k],
                *in[3 * n + k], scale, np.back(), nm.back(), nv.back());
  }
  for (std::vector<RefTensor> *group : {&np, &nm, &nv})
    for (RefTensor &t : *group)
      out.push_back(std::move(t));
  return success();
}

LogicalResult globalNormKernel(GlobalNormOp op, Operands in,
                               std::vector<RefTensor> &out) {
  double sum = 0;
  for (const RefTensor *t : in)
    for (double x : t->floats)
      sum += x * x;
  RefTensor r = makeResult(op.getNorm());
  r.floats[0] = std::sqrt(roundToKind(sum, r.kind));
  roundInPlace(r);
  out.push_back(std::move(r));
  return success();
}

} // namespace

void registerOptimizerKernels(KernelTable &table) {
  addKernel<AdamWUpdateOp>(table, adamwKernel);
  addKernel<MultiAdamWUpdateOp>(table, multiAdamwKernel);
  addKernel<GlobalNormOp>(table, globalNormKernel);
}

} // namespace llmc
