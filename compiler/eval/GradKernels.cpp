//===- GradKernels.cpp - Backward and optimizer ops -----------------------===//
//
// Kernels of the ops that llmc-autodiff emits (LlmcGradOps.td), except
// attention's (AttentionGradKernels.cpp) and the optimizer's
// (OptimizerKernels.cpp). Each one is the closed form in the op's
// description, computed in double and rounded once per result, like the
// forward kernels:
// - norm grads recompute the row statistics two-pass, as the forward does;
// - scatter-adds (gather_grad, gather_elements_grad) accumulate in double in
//   index order, so repeated indices sum exactly before the one rounding;
// - cross_entropy_grad with `mean` divides by the count of positions that
//   are not ignored (all rows are zero when there is none).
//
//===----------------------------------------------------------------------===//
#include "compiler/eval/Kernels.h"

#include "dialects/llmc/LlmcOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc {

namespace {

int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d)
    n *= shape[d];
  return n;
}

/// `indices[i]` checked against `size`; negative counts from the end (as
/// the forward gather kernels accept).
FailureOr<int64_t> checkedIndex(Operation *op, const RefTensor &indices,
                                int64_t i, int64_t size) {
  int64_t k = indices.ints[i];
  if (k < -size || k >= size)
    return op->emitError("reference evaluator: index ")
           << k << " (indices element " << i << ") is out of range for size "
           << size;
  return k < 0 ? k + size : k;
}

/// Rounds `t` and appends it to the results.
void finish(RefTensor &t, std::vector<RefTensor> &out) {
  roundInPlace(t);
  out.push_back(std::move(t));
}

//===----------------------------------------------------------------------===//
// layer_norm_grad, rms_norm_grad
//===----------------------------------------------------------------------===//

/// With xhat = (x - mean) * rstd (no mean for rms_norm) and g = dy * w:
/// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) (no mean(g) for rms),
/// dweight += dy * xhat, dbias += dy over the rows.
void normGrad(const RefTensor &x, const RefTensor &dy, const RefTensor *w,
              int64_t axis, double eps, bool center, RefTensor &dx,
              RefTensor *dweight, RefTensor *dbias) {
  int64_t inner = product(x.shape, axis, x.shape.size());
  int64_t rows = inner ? x.numElements() / inner : 0;
  double n = static_cast<double>(inner);
  std::vector<double> xhat(inner), g(inner);
  for (int64_t row = 0; row < rows; ++row) {
    const double *v = &x.floats[row * inner], *d = &dy.floats[row * inner];
    double mean = 0;
    if (center) {
      for (int64_t j = 0; j < inner; ++j)
        mean += v[j];
      mean /= n;
    }
    double var = 0;
    for (int64_t j = 0; j < inner; ++j)
      var += (v[j] - mean) * (v[j] - mean);
    double rstd = 1.0 / std::sqrt(var / n + eps);
    double meanG = 0, meanGX = 0;
    for (int64_t j = 0; j < inner; ++j) {
      xhat[j] = (v[j] - mean) * rstd;
      g[j] = w ? d[j] * w->floats[j] : d[j];
      meanG += g[j];
      meanGX += g[j] * xhat[j];
    }
    meanG = center ? meanG / n : 0.0;
    meanGX /= n;
    for (int64_t j = 0; j < inner; ++j) {
      dx.floats[row * inner + j] = rstd * (g[j] - meanG - xhat[j] * meanGX);
      if (dweight)
        dweight->floats[j] += d[j] * xhat[j];
      if (dbias)
        dbias->floats[j] += d[j];
    }
  }
}

LogicalResult layerNormGradKernel(LayerNormGradOp op, Operands in,
                                  std::vector<RefTensor> &out) {
  const RefTensor *w = op.getWeight() ? in[2] : nullptr;
  RefTensor dx = makeResult(op.getDx());
  std::optional<RefTensor> dw, db;
  if (op.getDweight())
    dw = makeResult(op.getDweight());
  if (op.getDbias())
    db = makeResult(op.getDbias());
  normGrad(*in[0], *in[1], w, normalizedAxis(op.getAxis(), dx.rank()),
           op.getEpsilon().convertToDouble(), /*center=*/true, dx,
           dw ? &*dw : nullptr, db ? &*db : nullptr);
  finish(dx, out);
  if (dw)
    finish(*dw, out);
  if (db)
    finish(*db, out);
  return success();
}

LogicalResult rmsNormGradKernel(RmsNormGradOp op, Operands in,
                                std::vector<RefTensor> &out) {
  const RefTensor *w = op.getWeight() ? in[2] : nullptr;
  RefTensor dx = makeResult(op.getDx());
  std::optional<RefTensor> dw;
  if (op.getDweight())
    dw = makeResult(op.getDweight());
  normGrad(*in[0], *in[1], w, normalizedAxis(op.getAxis(), dx.rank()),
           op.getEpsilon().convertToDouble(), /*center=*/false, dx,
           dw ? &*dw : nullptr, nullptr);
  finish(dx, out);
  if (dw)
    finish(*dw, out);
  return success();
}

//===----------------------------------------------------------------------===//
// softmax_grad, log_softmax_grad
//===----------------------------------------------------------------------===//

/// softmax: dx = y * (dy - sum(dy * y)); log_softmax: dx = dy - exp(y) *
/// sum(dy); sums along the axis.
template <typename OpTy> void addSoftmaxGrad(KernelTable &table, bool logForm) {
  addKernel<OpTy>(table, [logForm](OpTy op, Operands in,
                                   std::vector<RefTensor> &out) {
    const RefTensor &y = *in[0], &dy = *in[1];
    RefTensor r = makeResult(op.getResult());
    int64_t axis = normalizedAxis(op.getAxis(), r.rank());
    int64_t size = y.shape[axis];
    int64_t inner = product(y.shape, axis + 1, y.shape.size());
    int64_t outer = product(y.shape, 0, axis);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j) {
        auto idx = [&](int64_t a) { return (o * size + a) * inner + j; };
        double sum = 0;
        for (int64_t a = 0; a < size; ++a)
          sum += logForm ? dy.floats[idx(a)]
                         : dy.floats[idx(a)] * y.floats[idx(a)];
        for (int64_t a = 0; a < size; ++a) {
          double yv = y.floats[idx(a)], g = dy.floats[idx(a)];
          r.floats[idx(a)] = logForm ? g - std::exp(yv) * sum : yv * (g - sum);
        }
      }
    finish(r, out);
    return success();
  });
}

//===----------------------------------------------------------------------===//
// gelu_grad, silu_grad
//===----------------------------------------------------------------------===//

double geluErfGrad(double x) {
  double cdf = 0.5 * (1.0 + std::erf(x / std::sqrt(2.0)));
  double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
  return cdf + x * pdf;
}

/// Derivative of 0.5 x (1 + tanh(k (x + c x^3))).
double geluTanhGrad(double x) {
  const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
  double t = std::tanh(k * (x + c * x * x * x));
  return 0.5 * (1.0 + t) +
         0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * c * x * x);
}

LogicalResult geluGradKernel(GeluGradOp op, Operands in,
                             std::vector<RefTensor> &out) {
  RefTensor r = makeResult(op.getResult());
  bool tanhForm = op.getApproximation() == GeluApproximation::tanh;
  for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
    double x = in[0]->floats[i];
    r.floats[i] =
        in[1]->floats[i] * (tanhForm ? geluTanhGrad(x) : geluErfGrad(x));
  }
  finish(r, out);
  return success();
}

LogicalResult siluGradKernel(SiluGradOp op, Operands in,
                             std::vector<RefTensor> &out) {
  RefTensor r = makeResult(op.getResult());
  for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
    double x = in[0]->floats[i], s = 1.0 / (1.0 + std::exp(-x));
    r.floats[i] = in[1]->floats[i] * s * (1.0 + x * (1.0 - s));
  }
  finish(r, out);
  return success();
}

//===----------------------------------------------------------------------===//
// cross_entropy_grad
//===----------------------------------------------------------------------===//

LogicalResult crossEntropyGradKernel(CrossEntropyGradOp op, Operands in,
                                     std::vector<RefTensor> &out) {
  const RefTensor &logits = *in[0], &targets = *in[1], &dloss = *in[2];
  RefTensor r = makeResult(op.getResult());
  // Row stride W; the classes are the first C columns (the rest padding,
  // whose gradient stays zero).
  int64_t W = logits.shape.back(), C = op.getClassCount(),
          positions = targets.numElements();
  int64_t ignore = op.getIgnoreIndex();
  int64_t counted = 0;
  for (int64_t p = 0; p < positions; ++p)
    counted += targets.ints[p] != ignore;
  for (int64_t p = 0; p < positions; ++p) {
    int64_t target = targets.ints[p];
    if (target == ignore)
      continue; // zero row
    if (target < 0 || target >= C)
      return op.emitError("reference evaluator: target ")
             << target << " at position " << p << " is out of range for " << C
             << " classes (ignore_index is " << ignore << ")";
    double w = op.getReduction() == LossReduction::none ? dloss.floats[p]
                                                        : dloss.floats[0];
    if (op.getReduction() == LossReduction::mean)
      w /= static_cast<double>(counted);
    const double *row = &logits.floats[p * W];
    double max = -INFINITY;
    for (int64_t c = 0; c < C; ++c)
      max = std::max(max, row[c]);
    double sum = 0;
    for (int64_t c = 0; c < C; ++c)
      sum += std::exp(row[c] - max);
    for (int64_t c = 0; c < C; ++c)
      r.floats[p * W + c] =
          w * (std::exp(row[c] - max) / sum - (c == target ? 1.0 : 0.0));
  }
  finish(r, out);
  return success();
}

//===----------------------------------------------------------------------===//
// gather_grad, gather_elements_grad, slice_grad
//===----------------------------------------------------------------------===//

LogicalResult gatherGradKernel(GatherGradOp op, Operands in,
                               std::vector<RefTensor> &out) {
  const RefTensor &dy = *in[0], &indices = *in[1];
  RefTensor r = makeResult(op.getResult());
  int64_t axis = op.getAxis(), size = r.shape[axis];
  int64_t inner = product(r.shape, axis + 1, r.shape.size());
  int64_t count = indices.numElements();
  int64_t outer = product(r.shape, 0, axis);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t n = 0; n < count; ++n) {
      auto k = checkedIndex(op, indices, n, op.getBound().value_or(size));
      if (failed(k))
        return failure();
      for (int64_t j = 0; j < inner; ++j)
        r.floats[(o * size + *k) * inner + j] +=
            dy.floats[(o * count + n) * inner + j];
    }
  finish(r, out);
  return success();
}

LogicalResult gatherElementsGradKernel(GatherElementsGradOp op, Operands in,
                                       std::vector<RefTensor> &out) {
  const RefTensor &dy = *in[0], &indices = *in[1];
  RefTensor r = makeResult(op.getResult());
  int64_t axis = op.getAxis();
  std::vector<int64_t> strides = stridesOf(r.shape);
  for (int64_t i = 0, e = dy.numElements(); i < e; ++i) {
    auto k = checkedIndex(op, indices, i, r.shape[axis]);
    if (failed(k))
      return failure();
    int64_t rem = i, dst = 0;
    for (int64_t d = dy.rank() - 1; d >= 0; --d) {
      int64_t coord = d == axis ? *k : rem % dy.shape[d];
      dst += coord * strides[d];
      rem /= dy.shape[d];
    }
    r.floats[dst] += dy.floats[i];
  }
  finish(r, out);
  return success();
}

LogicalResult sliceGradKernel(SliceGradOp op, Operands in,
                              std::vector<RefTensor> &out) {
  const RefTensor &dy = *in[0];
  RefTensor r = makeResult(op.getResult());
  ArrayRef<int64_t> starts = op.getStarts(), steps = op.getStrides();
  std::vector<int64_t> strides = stridesOf(r.shape);
  for (int64_t i = 0, e = dy.numElements(); i < e; ++i) {
    int64_t rem = i, dst = 0;
    for (int64_t d = dy.rank() - 1; d >= 0; --d) {
      dst += (starts[d] + (rem % dy.shape[d]) * steps[d]) * strides[d];
      rem /= dy.shape[d];
    }
    r.floats[dst] = dy.floats[i];
  }
  finish(r, out);
  return success();
}

} // namespace

void registerGradKernels(KernelTable &table) {
  addKernel<LayerNormGradOp>(table, layerNormGradKernel);
  addKernel<RmsNormGradOp>(table, rmsNormGradKernel);
  addSoftmaxGrad<SoftmaxGradOp>(table, /*logForm=*/false);
  addSoftmaxGrad<LogSoftmaxGradOp>(table, /*logForm=*/true);
  addKernel<GeluGradOp>(table, geluGradKernel);
  addKernel<SiluGradOp>(table, siluGradKernel);
  addKernel<CrossEntropyGradOp>(table, crossEntropyGradKernel);
  addKernel<GatherGradOp>(table, gatherGradKernel);
  addKernel<GatherElementsGradOp>(table, gatherElementsGradKernel);
  addKernel<SliceGradOp>(table, sliceGradKernel);
  registerOptimizerKernels(table);
  registerAttentionGradKernels(table);
}

} // namespace llmc
