//===- NNKernels.cpp - matmul, norms, softmax -----------------------------===//
//
// matmul accumulates in double (exact int64 for integers) and rounds each
// result element once. Norm statistics are two-pass in double: the mean,
// then the biased variance of (x - mean). softmax and log_softmax subtract
// the row maximum first; a row that is entirely -inf gives NaN, as
// torch.softmax does (attention's fully masked rows are handled separately,
// see AttentionKernels.cpp).
//
//===----------------------------------------------------------------------===//
#include "compiler/eval/Kernels.h"
#include "compiler/common/FloatFormats.h"
#include "compiler/common/Philox.h"

#include "dialects/llmc/LlmcOps.h"

#include "mlir/IR/BuiltinOps.h"

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

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

LogicalResult matmulKernel(MatmulOp op, Operands in,
                           std::vector<RefTensor> &out) {
  const RefTensor &a = *in[0], &b = *in[1];
  RefTensor r = makeResult(op.getResult());
  bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
  int64_t ar = a.rank(), rr = r.rank();
  int64_t M = r.shape[rr - 2], N = r.shape[rr - 1];
  int64_t K = ta ? a.shape[ar - 2] : a.shape[ar - 1];
  std::vector<int64_t> batch(r.shape.begin(), r.shape.end() - 2);
  BroadcastMap aBatch({a.shape.begin(), a.shape.end() - 2}, batch);
  BroadcastMap bBatch({b.shape.begin(), b.shape.end() - 2}, batch);
  // Element (m, k) of a matrix stored [M, K], or [K, M] when transposed.
  auto at = [](bool t, int64_t rows, int64_t cols, int64_t i, int64_t j) {
    return t ? j * rows + i : i * cols + j;
  };
  // `llmc.accumulate = bf16` is the mutation test's planted mistake
  // (docs/precision.md): every partial sum is rounded to that type, as a
  // GEMM accumulating in bf16 would. Without it the sum is exact.
  std::optional<ElementKind> accKind;
  if (auto t = op->getAttrOfType<TypeAttr>("llmc.accumulate"))
    accKind = kindOf(t.getValue());
  // `llmc.precision = "tf32"` on the module (--precision tf32): every f32
  // matmul reads its operands as TF32 (cuBLASLt's FAST_TF32 compute type)
  // and accumulates exactly; the result is f32 as before.
  auto module = op->getParentOfType<ModuleOp>();
  auto precision =
      module ? module->getAttrOfType<StringAttr>("llmc.precision") : nullptr;
  bool tf32 = precision && precision.getValue() == "tf32" &&
              a.kind == ElementKind::F32 && b.kind == ElementKind::F32;
  std::vector<double> aTf32, bTf32;
  if (tf32) {
    aTf32.reserve(a.floats.size());
    bTf32.reserve(b.floats.size());
    for (double x : a.floats)
      aTf32.push_back(roundToTf32(x));
    for (double x : b.floats)
      bTf32.push_back(roundToTf32(x));
  }
  const std::vector<double> &af = tf32 ? aTf32 : a.floats;
  const std::vector<double> &bf = tf32 ? bTf32 : b.floats;
  std::vector<double> acc(M * N);
  std::vector<int64_t> iacc(M * N);
  for (int64_t bi = 0, be = product(batch, 0, batch.size()); bi < be; ++bi) {
    int64_t aBase = aBatch(bi) * M * K, bBase = bBatch(bi) * K * N;
    std::fill(acc.begin(), acc.end(), 0.0);
    std::fill(iacc.begin(), iacc.end(), 0);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) {
        int64_t ai = aBase + at(ta, M, K, m, k);
        for (int64_t n = 0; n < N; ++n) {
          int64_t bj = bBase + at(tb, K, N, k, n);
          if (r.isFloat() && accKind)
            acc[m * N + n] =
                roundToKind(acc[m * N + n] + af[ai] * bf[bj], *accKind);
          else if (r.isFloat())
            acc[m * N + n] += af[ai] * bf[bj];
          else
            iacc[m * N + n] =
                static_cast<int64_t>(static_cast<uint64_t>(iacc[m * N + n]) +
                                     static_cast<uint64_t>(a.ints[ai]) *
                                         static_cast<uint64_t>(b.ints[bj]));
        }
      }
    for (int64_t i = 0; i < M * N; ++i) {
      if (r.isFloat())
        r.floats[bi * M * N + i] = acc[i];
      else
        r.ints[bi * M * N + i] = iacc[i];
    }
  }
  // A bf16/f16 linear layer rounds once, after its bias (cuBLASLt's bias
  // epilogue, torch's addmm): the add rounds what it reads from here. In a
  // GELU epilogue without a bias the gelu reads it unrounded.
  bool narrow = r.isFloat() && r.kind != ElementKind::F32 &&
                r.kind != ElementKind::F64;
  if (!(narrow && (linearBiasAdd(op) || heldUnrounded(op))))
    roundInPlace(r);
  out.push_back(std::move(r));
  return success();
}

//===----------------------------------------------------------------------===//
// layer_norm, rms_norm
//===----------------------------------------------------------------------===//

/// y = (x - mean) / sqrt(var + eps) * w + b over rows of the trailing dims;
/// `center` false gives rms_norm (no mean, var = mean(x^2), no bias).
void normalize(const RefTensor &x, const RefTensor *weight,
               const RefTensor *bias, int64_t axis, double eps, bool center,
               RefTensor &r) {
  int64_t inner = product(x.shape, axis, x.shape.size());
  int64_t rows = inner ? x.numElements() / inner : 0;
  for (int64_t row = 0; row < rows; ++row) {
    const double *v = &x.floats[row * inner];
    double mean = 0;
    if (center) {
      for (int64_t j = 0; j < inner; ++j)
        mean += v[j];
      mean /= static_cast<double>(inner);
    }
    double var = 0;
    for (int64_t j = 0; j < inner; ++j)
      var += (v[j] - mean) * (v[j] - mean);
    var /= static_cast<double>(inner);
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < inner; ++j) {
      double y = (v[j] - mean) * inv;
      if (weight)
        y *= weight->floats[j];
      if (bias)
        y += bias->floats[j];
      r.floats[row * inner + j] = y;
    }
  }
  roundInPlace(r);
}

LogicalResult layerNormKernel(LayerNormOp op, Operands in,
                              std::vector<RefTensor> &out) {
  size_t next = 1;
  const RefTensor *weight = op.getWeight() ? in[next++] : nullptr;
  const RefTensor *bias = op.getBias() ? in[next++] : nullptr;
  RefTensor r = makeResult(op.getResult());
  normalize(*in[0], weight, bias, normalizedAxis(op.getAxis(), r.rank()),
            op.getEpsilon().convertToDouble(), /*center=*/true, r);
  out.push_back(std::move(r));
  return success();
}

LogicalResult rmsNormKernel(RmsNormOp op, Operands in,
                            std::vector<RefTensor> &out) {
  const RefTensor *weight = op.getWeight() ? in[1] : nullptr;
  RefTensor r = makeResult(op.getResult());
  normalize(*in[0], weight, nullptr, normalizedAxis(op.getAxis(), r.rank()),
            op.getEpsilon().convertToDouble(), /*center=*/false, r);
  out.push_back(std::move(r));
  return success();
}

//===----------------------------------------------------------------------===//
// softmax, log_softmax
//===----------------------------------------------------------------------===//

template <typename OpTy> void addSoftmax(KernelTable &table, bool logForm) {
  addKernel<OpTy>(
      table, [logForm](OpTy op, Operands in, std::vector<RefTensor> &out) {
        const RefTensor &x = *in[0];
        RefTensor r = makeResult(op.getResult());
        int64_t axis = normalizedAxis(op.getAxis(), r.rank());
        int64_t size = x.shape[axis];
        int64_t inner = product(x.shape, axis + 1, x.shape.size());
        int64_t outer = product(x.shape, 0, axis);
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t j = 0; j < inner; ++j) {
            auto idx = [&](int64_t a) { return (o * size + a) * inner + j; };
            double max = -INFINITY;
            for (int64_t a = 0; a < size; ++a)
              max = std::max(max, x.floats[idx(a)]);
            double sum = 0;
            for (int64_t a = 0; a < size; ++a)
              sum += std::exp(x.floats[idx(a)] - max);
            for (int64_t a = 0; a < size; ++a) {
              double shifted = x.floats[idx(a)] - max;
              r.floats[idx(a)] =
                  logForm ? shifted - std::log(sum) : std::exp(shifted) / sum;
            }
          }
        roundInPlace(r);
        out.push_back(std::move(r));
        return success();
      });
}

} // namespace

/// Philox draws per element (compiler/common/Philox.h); step 0 without a step
/// operand.
static LogicalResult dropoutMaskKernel(DropoutMaskOp op, Operands in,
                                       std::vector<RefTensor> &out) {
  RefTensor r = makeResult(op.getResult());
  double ratio = op.getRatio().convertToDouble();
  uint64_t step = in.empty() ? 0 : uint64_t(in[0]->ints[0]);
  uint32_t threshold = dropoutThreshold(ratio);
  double scale = 1.0 / (1.0 - ratio);
  auto seed = uint64_t(op.getSeed());
  auto offset = uint32_t(op.getOffset());
  for (int64_t i = 0, e = r.numElements(); i < e; ++i)
    r.floats[i] =
        dropoutKeeps(seed, offset, step, uint32_t(i), threshold) ? scale : 0;
  roundInPlace(r);
  out.push_back(std::move(r));
  return success();
}

void registerNNKernels(KernelTable &table) {
  addKernel<MatmulOp>(table, matmulKernel);
  addKernel<LayerNormOp>(table, layerNormKernel);
  addKernel<RmsNormOp>(table, rmsNormKernel);
  addSoftmax<SoftmaxOp>(table, /*logForm=*/false);
  addSoftmax<LogSoftmaxOp>(table, /*logForm=*/true);
  addKernel<DropoutMaskOp>(table, dropoutMaskKernel);
}

} // namespace llmc
