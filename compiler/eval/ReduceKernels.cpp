//===- ReduceKernels.cpp - reduce_sum, reduce_mean, reduce_max ------------===//
//
// Float reductions accumulate in double in row-major order (deterministic)
// and round once. Integer sums are exact int64 arithmetic wrapped to the
// result's width; an integer mean is the sum divided by the count,
// truncated toward zero. reduce_max propagates NaN; over zero elements it
// gives -inf (floats) or the type's minimum (integers), and a float mean
// over zero elements is NaN.
//
//===----------------------------------------------------------------------===//
#include "compiler/eval/Kernels.h"

#include "dialects/llmc/LlmcOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc {

namespace {

enum class Reduction { Sum, Mean, Max };

/// For every input dim, its stride in the result (0 for a reduced dim), so
/// that an input element's result index is sum(coord[d] * stride[d]).
std::vector<int64_t> resultStridesPerInputDim(const std::vector<int64_t> &in,
                                              ArrayRef<int64_t> axes) {
  std::vector<bool> reduced(in.size(), false);
  for (int64_t a : axes)
    reduced[a] = true;
  std::vector<int64_t> strides(in.size(), 0);
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(in.size()) - 1; d >= 0; --d) {
    if (reduced[d])
      continue;
    strides[d] = stride;
    stride *= in[d];
  }
  return strides;
}

template <typename OpTy> void addReduce(KernelTable &table, Reduction kind) {
  addKernel<OpTy>(
      table, [kind](OpTy op, Operands in, std::vector<RefTensor> &out) {
        const RefTensor &x = *in[0];
        RefTensor r = makeResult(op.getResult());
        std::vector<int64_t> strides =
            resultStridesPerInputDim(x.shape, op.getAxes());
        int64_t count = 1;
        for (int64_t a : op.getAxes())
          count *= x.shape[a];
        int64_t n = r.numElements();
        if (kind == Reduction::Max) {
          if (r.isFloat())
            r.floats.assign(n, -std::numeric_limits<double>::infinity());
          else
            r.ints.assign(n, std::numeric_limits<int64_t>::min());
        }
        for (int64_t i = 0, e = x.numElements(); i < e; ++i) {
          int64_t rem = i, dst = 0;
          for (int64_t d = x.rank() - 1; d >= 0; --d) {
            dst += (rem % x.shape[d]) * strides[d];
            rem /= x.shape[d];
          }
          if (r.isFloat()) {
            double v = x.floats[i];
            double &acc = r.floats[dst];
            if (kind != Reduction::Max)
              acc += v;
            else if (std::isnan(v) || v > acc)
              acc = std::isnan(acc) ? acc : v;
          } else {
            int64_t v = x.ints[i];
            int64_t &acc = r.ints[dst];
            if (kind != Reduction::Max)
              acc = static_cast<int64_t>(static_cast<uint64_t>(acc) +
                                         static_cast<uint64_t>(v));
            else if (v > acc)
              acc = v;
          }
        }
        if (kind == Reduction::Mean) {
          for (double &v : r.floats)
            v /= static_cast<double>(count);
          for (int64_t &v : r.ints)
            v = count ? v / count : 0;
        }
        roundInPlace(r);
        out.push_back(std::move(r));
        return success();
      });
}

} // namespace

void registerReduceKernels(KernelTable &table) {
  addReduce<ReduceSumOp>(table, Reduction::Sum);
  addReduce<ReduceMeanOp>(table, Reduction::Mean);
  addReduce<ReduceMaxOp>(table, Reduction::Max);
}

} // namespace llmc
