//===- RaiseUtils.cpp - Matching helpers of the raising passes ------------===//
//
// Constant evaluation in f64 on the few ops that constant subgraphs use
// (masks, scales, epsilons), product flattening and use checks. See
// RaiseUtils.h for what each helper accepts.
//
//===----------------------------------------------------------------------===//
#include "passes/RaiseUtils.h"

#include "dialects/llmc/ShapeUtils.h"

#include "mlir/IR/DialectResourceBlobManager.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace mlir::llmc;

namespace mlir::llmc::raise {

Type elementTypeOf(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}

bool nearlyEqual(double a, double b) {
  if (b == 0)
    return std::abs(a) <= kConstantTolerance;
  return std::abs(a - b) <= kConstantTolerance * std::abs(b);
}

//===----------------------------------------------------------------------===//
// Elementwise semantics shared by the scalar and the dense evaluator
//===----------------------------------------------------------------------===//

/// x converted to the element type `to`: integers truncate toward zero and
/// i1 tests for non-zero, as llmc.cast does.
static double convertTo(double x, Type to) {
  if (to.isInteger(1))
    return x != 0 ? 1 : 0;
  if (isa<IntegerType>(to))
    return std::trunc(x);
  return x;
}

static std::optional<double> applyUnary(Operation *op, double x) {
  return TypeSwitch<Operation *, std::optional<double>>(op)
      .Case([&](NegOp) { return -x; })
      .Case([&](AbsOp) { return std::abs(x); })
      .Case([&](SqrtOp) { return std::sqrt(x); })
      .Case([&](RsqrtOp) { return 1.0 / std::sqrt(x); })
      .Case([&](ReciprocalOp) { return 1.0 / x; })
      .Case([&](ExpOp) { return std::exp(x); })
      .Case([&](LogOp) { return std::log(x); })
      .Case([&](TanhOp) { return std::tanh(x); })
      .Case([&](CastOp c) {
        return convertTo(x, elementTypeOf(c.getResult()));
      })
      .Default([](Operation *) { return std::nullopt; });
}

static std::optional<double> applyBinary(Operation *op, double x, double y) {
  bool isInt = isa<IntegerType>(elementTypeOf(op->getOperand(0)));
  return TypeSwitch<Operation *, std::optional<double>>(op)
      .Case([&](AddOp) { return x + y; })
      .Case([&](SubOp) { return x - y; })
      .Case([&](MulOp) { return x * y; })
      .Case([&](DivOp) -> std::optional<double> {
        if (isInt)
          return y == 0 ? std::nullopt : std::optional(std::trunc(x / y));
        return x / y;
      })
      .Case([&](PowOp) { return std::pow(x, y); })
      .Case([&](MaxOp) { return std::max(x, y); })
      .Case([&](MinOp) { return std::min(x, y); })
      .Case([&](CompareOp c) {
        bool r = false;
        switch (c.getPredicate()) {
        case ComparePredicate::eq: r = x == y; break;
        case ComparePredicate::ne: r = x != y; break;
        case ComparePredicate::lt: r = x < y; break;
        case ComparePredicate::le: r = x <= y; break;
        case ComparePredicate::gt: r = x > y; break;
        case ComparePredicate::ge: r = x >= y; break;
        }
        return r ? 1.0 : 0.0;
      })
      .Default([](Operation *) { return std::nullopt; });
}

static bool isShapeOnly(Operation *op) {
  return isa<ReshapeOp, BroadcastToOp, TransposeOp, SliceOp>(op);
}

//===----------------------------------------------------------------------===//
// Scalar constants
//===----------------------------------------------------------------------===//

/// Values of a resource blob (raw little-endian elements, one byte per i1,
/// as the importers store them), or std::nullopt when the blob is missing
/// (elided) or of the wrong size.
static std::optional<std::vector<double>>
resourceValues(DenseResourceElementsAttr attr) {
  AsmResourceBlob *blob = attr.getRawHandle().getBlob();
  Type t = attr.getType().getElementType();
  if (!blob || !attr.getType().hasStaticShape())
    return std::nullopt;
  unsigned bits = t.getIntOrFloatBitWidth();
  size_t width = bits == 1 ? 1 : bits / 8;
  int64_t n = attr.getType().getNumElements();
  ArrayRef<char> data = blob->getData();
  if (data.size() != static_cast<size_t>(n) * width)
    return std::nullopt;
  std::vector<double> out(n);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t raw = 0;
    for (size_t b = 0; b < width; ++b)
      raw |= static_cast<uint64_t>(static_cast<uint8_t>(data[i * width + b]))
             << (8 * b);
    if (auto ft = dyn_cast<FloatType>(t))
      out[i] = APFloat(ft.getFloatSemantics(), APInt(bits, raw))
                   .convertToDouble();
    else if (bits == 1)
      out[i] = raw != 0;
    else
      out[i] = static_cast<double>(APInt(bits, raw).getSExtValue());
  }
  return out;
}

/// Values of a dense or resource attribute in f64.
static std::optional<std::vector<double>> denseValues(Attribute attr) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr))
    return resourceValues(resource);
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return std::nullopt;
  std::vector<double> out;
  Type t = dense.getElementType();
  if (isa<FloatType>(t)) {
    for (const APFloat &f : dense.getValues<APFloat>())
      out.push_back(f.convertToDouble());
  } else if (t.isInteger(1)) {
    for (bool b : dense.getValues<bool>())
      out.push_back(b ? 1 : 0);
  } else if (isa<IntegerType>(t)) {
    for (const APInt &i : dense.getValues<APInt>())
      out.push_back(static_cast<double>(i.getSExtValue()));
  } else {
    return std::nullopt;
  }
  return out;
}

std::optional<double> getScalarConstant(Value v) {
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (auto c = dyn_cast<ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (dense && dense.isSplat()) {
      auto one = denseValues(dense.resizeSplat(
          RankedTensorType::get({1}, dense.getElementType())));
      return one ? std::optional((*one)[0]) : std::nullopt;
    }
    if (c.getValue().getNumElements() > 4096)
      return std::nullopt;
    auto values = denseValues(c.getValue());
    if (!values || values->empty() ||
        llvm::any_of(*values, [&](double x) { return x != values->front(); }))
      return std::nullopt;
    return values->front();
  }
  if (isShapeOnly(op))
    return getScalarConstant(op->getOperand(0));
  if (auto w = dyn_cast<WhereOp>(op)) {
    auto cond = getScalarConstant(w.getCondition());
    if (!cond)
      return std::nullopt;
    return getScalarConstant(*cond != 0 ? w.getOnTrue() : w.getOnFalse());
  }
  if (op->getNumOperands() == 1 && op->getNumResults() == 1) {
    auto x = getScalarConstant(op->getOperand(0));
    return x ? applyUnary(op, *x) : std::nullopt;
  }
  if (op->getNumOperands() == 2 && op->getNumResults() == 1) {
    auto x = getScalarConstant(op->getOperand(0));
    auto y = x ? getScalarConstant(op->getOperand(1)) : std::nullopt;
    return y ? applyBinary(op, *x, *y) : std::nullopt;
  }
  return std::nullopt;
}

bool isScalarConstant(Value v, double expected) {
  auto c = getScalarConstant(v);
  return c && nearlyEqual(*c, expected);
}

//===----------------------------------------------------------------------===//
// Dense constants
//===----------------------------------------------------------------------===//

/// Row-major linear index in `shape` of result element `index` of
/// `resultShape`, where `shape` numpy-broadcasts to `resultShape`.
static int64_t broadcastIndex(int64_t index, ArrayRef<int64_t> resultShape,
                              ArrayRef<int64_t> shape) {
  int64_t src = 0, stride = 1;
  size_t offset = resultShape.size() - shape.size();
  for (int64_t d = resultShape.size() - 1; d >= 0; --d) {
    int64_t coord = index % resultShape[d];
    index /= resultShape[d];
    if (d < static_cast<int64_t>(offset))
      continue;
    int64_t size = shape[d - offset];
    if (size != 1)
      src += coord * stride;
    stride *= size;
  }
  return src;
}

/// Coordinates of a row-major linear index.
static SmallVector<int64_t> coordsOf(int64_t index, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> coords(shape.size());
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    coords[d] = index % shape[d];
    index /= shape[d];
  }
  return coords;
}

std::optional<ConstTensor> evalConstant(Value v, int64_t maxElements) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  Operation *op = v.getDefiningOp();
  if (!type || !type.hasStaticShape() || !op ||
      type.getNumElements() > maxElements)
    return std::nullopt;
  ConstTensor out;
  out.shape.assign(type.getShape().begin(), type.getShape().end());
  int64_t n = type.getNumElements();
  out.values.resize(n);

  // Operands evaluated with the same limit; any failure fails the whole.
  SmallVector<ConstTensor> in;
  auto evalOperands = [&]() {
    for (Value operand : op->getOperands()) {
      auto t = evalConstant(operand, maxElements);
      if (!t)
        return false;
      in.push_back(std::move(*t));
    }
    return true;
  };

  if (auto c = dyn_cast<ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (dense && dense.isSplat()) {
      auto s = getScalarConstant(v);
      if (!s)
        return std::nullopt;
      std::fill(out.values.begin(), out.values.end(), *s);
      return out;
    }
    auto values = denseValues(c.getValue());
    if (!values)
      return std::nullopt;
    out.values = std::move(*values);
    return out;
  }
  if (auto iota = dyn_cast<IotaOp>(op)) {
    double start = iota.getStart().convertToDouble();
    double step = iota.getStep().convertToDouble();
    for (int64_t i = 0; i < n; ++i)
      out.values[i] = convertTo(
          start + step * coordsOf(i, out.shape)[iota.getDimension()],
          type.getElementType());
    return out;
  }
  if (!evalOperands())
    return std::nullopt;
  if (isa<ReshapeOp>(op)) {
    out.values = std::move(in[0].values);
    return out;
  }
  if (isa<BroadcastToOp>(op)) {
    for (int64_t i = 0; i < n; ++i)
      out.values[i] = in[0].values[broadcastIndex(i, out.shape, in[0].shape)];
    return out;
  }
  if (auto t = dyn_cast<TransposeOp>(op)) {
    ArrayRef<int64_t> perm = t.getPermutation();
    for (int64_t i = 0; i < n; ++i) {
      SmallVector<int64_t> rc = coordsOf(i, out.shape);
      int64_t src = 0;
      for (size_t d = 0; d < in[0].shape.size(); ++d) {
        // Result dim j reads operand dim perm[j].
        int64_t coord = 0;
        for (size_t j = 0; j < perm.size(); ++j)
          if (perm[j] == static_cast<int64_t>(d))
            coord = rc[j];
        src = src * in[0].shape[d] + coord;
      }
      out.values[i] = in[0].values[src];
    }
    return out;
  }
  if (auto w = dyn_cast<WhereOp>(op)) {
    for (int64_t i = 0; i < n; ++i) {
      bool cond = in[0].values[broadcastIndex(i, out.shape, in[0].shape)];
      const ConstTensor &pick = cond ? in[1] : in[2];
      out.values[i] = pick.values[broadcastIndex(i, out.shape, pick.shape)];
    }
    return out;
  }
  if (op->getNumOperands() == 1) {
    for (int64_t i = 0; i < n; ++i) {
      auto r = applyUnary(op, in[0].values[i]);
      if (!r)
        return std::nullopt;
      out.values[i] = *r;
    }
    return out;
  }
  if (op->getNumOperands() == 2) {
    for (int64_t i = 0; i < n; ++i) {
      auto r = applyBinary(
          op, in[0].values[broadcastIndex(i, out.shape, in[0].shape)],
          in[1].values[broadcastIndex(i, out.shape, in[1].shape)]);
      if (!r)
        return std::nullopt;
      out.values[i] = *r;
    }
    return out;
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Products and uses
//===----------------------------------------------------------------------===//

bool hasOneUse(Value v) { return v.hasOneUse(); }

bool onlyUsedBy(Value v, ArrayRef<Operation *> users) {
  return llvm::all_of(v.getUsers(), [&](Operation *user) {
    return llvm::is_contained(users, user);
  });
}

Value otherOperand(Operation *binary, Value known) {
  if (binary->getNumOperands() != 2)
    return {};
  if (binary->getOperand(0) == known)
    return binary->getOperand(1);
  if (binary->getOperand(1) == known)
    return binary->getOperand(0);
  return {};
}

static void collectInto(Value v, bool isRoot, Product &p) {
  if (auto c = getScalarConstant(v)) {
    p.coefficient *= *c;
    return;
  }
  Operation *op = v.getDefiningOp();
  if (op && (isRoot || hasOneUse(v))) {
    if (auto mul = dyn_cast<MulOp>(op)) {
      p.ops.push_back(op);
      collectInto(mul.getLhs(), false, p);
      collectInto(mul.getRhs(), false, p);
      return;
    }
    if (auto div = dyn_cast<DivOp>(op)) {
      if (auto c = getScalarConstant(div.getRhs()); c && *c != 0) {
        p.ops.push_back(op);
        p.coefficient /= *c;
        collectInto(div.getLhs(), false, p);
        return;
      }
    }
    if (auto neg = dyn_cast<NegOp>(op)) {
      p.ops.push_back(op);
      p.coefficient = -p.coefficient;
      collectInto(neg.getInput(), false, p);
      return;
    }
  }
  p.factors.push_back(v);
}

Product collectProduct(Value root) {
  Product p;
  collectInto(root, true, p);
  return p;
}

void expandPowers(Product &product) {
  SmallVector<Value> expanded;
  for (Value f : product.factors) {
    auto pow = f.getDefiningOp<PowOp>();
    auto e = pow && hasOneUse(f) ? getScalarConstant(pow.getRhs())
                                 : std::nullopt;
    if (e && *e >= 1 && *e <= 8 && *e == std::floor(*e)) {
      product.ops.push_back(pow);
      expanded.append(static_cast<size_t>(*e), pow.getLhs());
    } else {
      expanded.push_back(f);
    }
  }
  product.factors = std::move(expanded);
}

bool isNormParam(Value w, Value x, int64_t axis) {
  auto xt = cast<RankedTensorType>(x.getType());
  auto wt = cast<RankedTensorType>(w.getType());
  int64_t first = axis < 0 ? axis + xt.getRank() : axis;
  return first >= 0 && first < xt.getRank() &&
         wt.getElementType() == xt.getElementType() &&
         wt.getShape() == xt.getShape().drop_front(first);
}

int64_t normAxisAttr(int64_t first, int64_t rank) {
  return first == rank - 1 ? -1 : first;
}

double shortestDecimal(double value, Type type) {
  auto ft = dyn_cast<FloatType>(type);
  if (!ft || !std::isfinite(value))
    return value;
  auto rounded = [&](double x) {
    bool lost = false;
    APFloat f(x);
    f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return f;
  };
  APFloat target = rounded(value);
  for (int digits = 1; digits <= 17; ++digits) {
    char text[40];
    std::snprintf(text, sizeof(text), "%.*g", digits, value);
    double candidate = std::strtod(text, nullptr);
    if (rounded(candidate).bitwiseIsEqual(target))
      return candidate;
  }
  return value;
}

} // namespace mlir::llmc::raise
