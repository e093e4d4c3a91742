//===- ElementwiseKernels.cpp - Unary, binary, compare, where, cast -------===//
//
// Float ops compute in double and round once to the result's format.
// Integer ops compute exactly in int64 and wrap to the result's width (two's
// complement), as the hardware does; integer division truncates toward zero
// and division by zero is an error. max/min propagate NaN (torch.maximum).
// gelu and silu live here too: they are elementwise.
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

/// Two's complement arithmetic without signed-overflow UB.
int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) +
                              static_cast<uint64_t>(b));
}
int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) -
                              static_cast<uint64_t>(b));
}
int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) *
                              static_cast<uint64_t>(b));
}

double nanMax(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return a > b ? a : b;
}
double nanMin(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return a < b ? a : b;
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

/// Registers a unary op: `floatFn` on float kinds, `intFn` (if any) on
/// integer kinds.
template <typename OpTy>
void addUnary(KernelTable &table, double (*floatFn)(double),
              int64_t (*intFn)(int64_t) = nullptr) {
  addKernel<OpTy>(table, [floatFn, intFn](OpTy op, Operands in,
                                          std::vector<RefTensor> &out) {
    RefTensor r = makeResult(op.getResult());
    const RefTensor &x = *in[0];
    if (r.isFloat()) {
      for (int64_t i = 0, e = r.numElements(); i < e; ++i)
        r.floats[i] = floatFn(x.floats[i]);
    } else {
      for (int64_t i = 0, e = r.numElements(); i < e; ++i)
        r.ints[i] = intFn(x.ints[i]);
    }
    roundInPlace(r);
    out.push_back(std::move(r));
    return success();
  });
}

double geluErf(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}
double geluTanh(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

void registerUnary(KernelTable &t) {
  addUnary<NegOp>(
      t, [](double x) { return -x; }, [](int64_t x) { return wrapSub(0, x); });
  addUnary<AbsOp>(
      t, [](double x) { return std::fabs(x); },
      [](int64_t x) { return x < 0 ? wrapSub(0, x) : x; });
  addUnary<ExpOp>(t, [](double x) { return std::exp(x); });
  addUnary<LogOp>(t, [](double x) { return std::log(x); });
  addUnary<SqrtOp>(t, [](double x) { return std::sqrt(x); });
  addUnary<RsqrtOp>(t, [](double x) { return 1.0 / std::sqrt(x); });
  addUnary<ReciprocalOp>(t, [](double x) { return 1.0 / x; });
  addUnary<TanhOp>(t, [](double x) { return std::tanh(x); });
  addUnary<ErfOp>(t, [](double x) { return std::erf(x); });
  addUnary<SigmoidOp>(t, sigmoid);
  addUnary<ReluOp>(
      t, [](double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); });
  addUnary<CosOp>(t, [](double x) { return std::cos(x); });
  addUnary<SinOp>(t, [](double x) { return std::sin(x); });
  addUnary<SiluOp>(t, [](double x) { return x * sigmoid(x); });
  addKernel<GeluOp>(t, [](GeluOp op, Operands in, std::vector<RefTensor> &out) {
    RefTensor r = makeResult(op.getResult());
    bool tanhForm = op.getApproximation() == GeluApproximation::tanh;
    for (int64_t i = 0, e = r.numElements(); i < e; ++i)
      r.floats[i] =
          tanhForm ? geluTanh(in[0]->floats[i]) : geluErf(in[0]->floats[i]);
    roundInPlace(r);
    out.push_back(std::move(r));
    return success();
  });
  addKernel<IsNanOp>(t,
                     [](IsNanOp op, Operands in, std::vector<RefTensor> &out) {
                       RefTensor r = makeResult(op.getResult());
                       for (int64_t i = 0, e = r.numElements(); i < e; ++i)
                         r.ints[i] = std::isnan(in[0]->floats[i]);
                       out.push_back(std::move(r));
                       return success();
                     });
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

LogicalResult castKernel(CastOp op, Operands in, std::vector<RefTensor> &out) {
  const RefTensor &x = *in[0];
  RefTensor r = makeResult(op.getResult());
  for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
    if (r.kind == ElementKind::I1) {
      r.ints[i] = x.isFloat() ? x.floats[i] != 0 : x.ints[i] != 0;
    } else if (r.isFloat()) {
      r.floats[i] = x.getDouble(i); // rounded below
    } else if (!x.isFloat()) {
      r.ints[i] = x.ints[i]; // wrapped below
    } else {
      // Float to integer truncates toward zero; values with no integer
      // result have no defined meaning, so they are an error.
      double v = std::trunc(x.floats[i]);
      double limit =
          r.kind == ElementKind::I32 ? 2147483648.0 : 9223372036854775808.0;
      if (!(v >= -limit && v < limit))
        return op.emitError("reference evaluator: cannot cast ")
               << x.floats[i] << " (element " << i << ") to "
               << kindName(r.kind);
      r.ints[i] = static_cast<int64_t>(v);
    }
  }
  roundInPlace(r);
  out.push_back(std::move(r));
  return success();
}

//===----------------------------------------------------------------------===//
// Binary with broadcasting
//===----------------------------------------------------------------------===//

/// Integer op result, or std::nullopt for an error (division by zero).
using IntFn = std::optional<int64_t> (*)(int64_t, int64_t);
using FloatFn = double (*)(double, double);

template <typename OpTy>
void addBinary(KernelTable &table, FloatFn floatFn, IntFn intFn) {
  addKernel<OpTy>(
      table,
      [floatFn, intFn](OpTy op, Operands in,
                       std::vector<RefTensor> &out) -> LogicalResult {
        RefTensor r = makeResult(op.getResult());
        BroadcastMap lhs(in[0]->shape, r.shape), rhs(in[1]->shape, r.shape);
        for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
          if (r.isFloat()) {
            r.floats[i] = floatFn(in[0]->floats[lhs(i)], in[1]->floats[rhs(i)]);
            continue;
          }
          auto v = intFn(in[0]->ints[lhs(i)], in[1]->ints[rhs(i)]);
          if (!v)
            return op.emitError("reference evaluator: integer division by zero "
                                "at result element ")
                   << i;
          r.ints[i] = *v;
        }
        if (!heldUnrounded(op))
          roundInPlace(r);
        out.push_back(std::move(r));
        return success();
      });
}

std::optional<int64_t> intDiv(int64_t a, int64_t b) {
  if (b == 0)
    return std::nullopt;
  if (b == -1)
    return wrapSub(0, a); // INT64_MIN / -1 wraps instead of trapping
  return a / b;           // C++ truncates toward zero
}

void registerBinary(KernelTable &t) {
  using I = std::optional<int64_t>;
  addBinary<AddOp>(
      t, [](double a, double b) { return a + b; },
      [](int64_t a, int64_t b) -> I { return wrapAdd(a, b); });
  addBinary<SubOp>(
      t, [](double a, double b) { return a - b; },
      [](int64_t a, int64_t b) -> I { return wrapSub(a, b); });
  addBinary<MulOp>(
      t, [](double a, double b) { return a * b; },
      [](int64_t a, int64_t b) -> I { return wrapMul(a, b); });
  addBinary<DivOp>(
      t, [](double a, double b) { return a / b; }, intDiv);
  addBinary<PowOp>(
      t, [](double a, double b) { return std::pow(a, b); }, nullptr);
  addBinary<MaxOp>(t, nanMax,
                   [](int64_t a, int64_t b) -> I { return a > b ? a : b; });
  addBinary<MinOp>(t, nanMin,
                   [](int64_t a, int64_t b) -> I { return a < b ? a : b; });
}

//===----------------------------------------------------------------------===//
// Compare, where
//===----------------------------------------------------------------------===//

template <typename T> bool comparePred(ComparePredicate p, T a, T b) {
  switch (p) {
  case ComparePredicate::eq:
    return a == b;
  case ComparePredicate::ne:
    return a != b; // true for NaN, as IEEE says
  case ComparePredicate::lt:
    return a < b;
  case ComparePredicate::le:
    return a <= b;
  case ComparePredicate::gt:
    return a > b;
  case ComparePredicate::ge:
    return a >= b;
  }
  return false;
}

LogicalResult compareKernel(CompareOp op, Operands in,
                            std::vector<RefTensor> &out) {
  RefTensor r = makeResult(op.getResult());
  BroadcastMap lhs(in[0]->shape, r.shape), rhs(in[1]->shape, r.shape);
  ComparePredicate p = op.getPredicate();
  bool isFloat = in[0]->isFloat();
  for (int64_t i = 0, e = r.numElements(); i < e; ++i)
    r.ints[i] =
        isFloat ? comparePred(p, in[0]->floats[lhs(i)], in[1]->floats[rhs(i)])
                : comparePred(p, in[0]->ints[lhs(i)], in[1]->ints[rhs(i)]);
  out.push_back(std::move(r));
  return success();
}

LogicalResult whereKernel(WhereOp op, Operands in,
                          std::vector<RefTensor> &out) {
  RefTensor r = makeResult(op.getResult());
  BroadcastMap cond(in[0]->shape, r.shape), onTrue(in[1]->shape, r.shape),
      onFalse(in[2]->shape, r.shape);
  for (int64_t i = 0, e = r.numElements(); i < e; ++i) {
    if (in[0]->ints[cond(i)])
      r.copyElement(i, *in[1], onTrue(i));
    else
      r.copyElement(i, *in[2], onFalse(i));
  }
  out.push_back(std::move(r));
  return success();
}

} // namespace

void registerElementwiseKernels(KernelTable &table) {
  registerUnary(table);
  registerBinary(table);
  addKernel<CastOp>(table, castKernel);
  addKernel<CompareOp>(table, compareKernel);
  addKernel<WhereOp>(table, whereKernel);
}

} // namespace llmc
