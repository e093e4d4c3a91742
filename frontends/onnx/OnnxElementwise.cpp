//===- OnnxElementwise.cpp - Elementwise ONNX ops -------------------------===//
//
// Unary math, numpy-broadcasting binary ops, comparisons, logic, Where, Cast
// and Clip. Each op first tries the constant evaluator (all inputs known at
// import time and a result within the fold limit) and otherwise emits the
// llmc op, whose own type inference checks broadcasting. ONNX has logic ops
// llmc lacks; on run-time values they become where/compare:
//   And(a, b) = where(a, b, false)     Or(a, b) = where(a, true, b)
//   Xor(a, b) = compare ne (a, b)      Not(a)    = compare eq (a, false)
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxConstants.h"
#include "frontends/onnx/OnnxGraph.h"
#include "frontends/onnx/onnx.pb.h"

#include "dialects/llmc/LlmcOps.h"

using namespace mlir;
namespace ll = mlir::llmc;

namespace llmc::onnximport {

//===----------------------------------------------------------------------===//
// Binary ops
//===----------------------------------------------------------------------===//

/// Emits `kind` on two run-time values.
static FailureOr<Value> emitBinary(OnnxNode &n, BinaryKind kind, Value a,
                                   Value b) {
  auto cmp = [&](ll::ComparePredicate p) {
    return n.create<ll::CompareOp>(
        {a, b}, {n.b.getNamedAttr("predicate", ll::ComparePredicateAttr::get(
                                                   n.b.getContext(), p))});
  };
  Type boolType = n.b.getI1Type();
  switch (kind) {
  case BinaryKind::Add: return n.create<ll::AddOp>({a, b});
  case BinaryKind::Sub: return n.create<ll::SubOp>({a, b});
  case BinaryKind::Mul: return n.create<ll::MulOp>({a, b});
  case BinaryKind::Div: return n.create<ll::DivOp>({a, b});
  case BinaryKind::Max: return n.create<ll::MaxOp>({a, b});
  case BinaryKind::Min: return n.create<ll::MinOp>({a, b});
  case BinaryKind::Pow: {
    Type base = cast<ShapedType>(a.getType()).getElementType();
    if (!isa<FloatType>(base)) {
      n.emitError() << "llmc computes Pow on float tensors only";
      return failure();
    }
    return n.create<ll::PowOp>({a, n.cast(b, base)});
  }
  case BinaryKind::Equal: return cmp(ll::ComparePredicate::eq);
  case BinaryKind::Less: return cmp(ll::ComparePredicate::lt);
  case BinaryKind::LessOrEqual: return cmp(ll::ComparePredicate::le);
  case BinaryKind::Greater: return cmp(ll::ComparePredicate::gt);
  case BinaryKind::GreaterOrEqual: return cmp(ll::ComparePredicate::ge);
  case BinaryKind::Xor: return cmp(ll::ComparePredicate::ne);
  case BinaryKind::And:
    return n.create<ll::WhereOp>({a, b, n.scalar(boolType, 0)});
  case BinaryKind::Or:
    return n.create<ll::WhereOp>({a, n.scalar(boolType, 1), b});
  case BinaryKind::Mod:
    break;
  }
  n.emitError() << "llmc evaluates " << n.opType()
                << " only on values known at import time";
  return failure();
}

/// lhs `kind` rhs on import values: evaluated when both are constants and
/// the result is small, emitted otherwise.
static FailureOr<ImportValue> applyBinary(OnnxNode &n, BinaryKind kind,
                                          ImportValue &lhs, llvm::StringRef ln,
                                          ImportValue &rhs,
                                          llvm::StringRef rn) {
  if (lhs.isConstant() && rhs.isConstant()) {
    const TensorData &a = *lhs.constant;
    TensorData b = *rhs.constant;
    if (kind == BinaryKind::Pow && b.dtype() != a.dtype())
      b = evalCast(b, a.dtype());
    auto shape = broadcastStatic(a.shape(), b.shape());
    if (!shape) {
      n.emitError() << "operand shapes are not broadcast-compatible";
      return failure();
    }
    if (n.canFold(*shape)) {
      auto r = evalBinary(kind, a, b);
      if (!r) {
        (void)n.evalError(r.takeError());
        return failure();
      }
      return ImportValue::of(std::move(*r));
    }
  }
  auto a = n.graph.materialize(lhs, n.loc, ln);
  auto b = failed(a) ? a : n.graph.materialize(rhs, n.loc, rn);
  if (failed(b))
    return failure();
  auto r = emitBinary(n, kind, *a, *b);
  if (failed(r))
    return failure();
  return ImportValue::of(*r);
}

/// Binary op, or a variadic one (Max, Min, Sum) folded from the left.
template <BinaryKind kind> static LogicalResult binaryOp(OnnxNode &n) {
  if (n.numInputs() < 1)
    return n.emitError() << "needs at least one input";
  ImportValue acc = n.input(0);
  std::string accName = n.inputName(0).str();
  for (unsigned i = 1; i < n.numInputs(); ++i) {
    ImportValue rhs = n.input(i);
    auto r = applyBinary(n, kind, acc, accName, rhs, n.inputName(i));
    if (failed(r))
      return failure();
    acc = std::move(*r);
    accName = n.name().str();
  }
  n.setOutput(0, std::move(acc));
  return success();
}

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

static FailureOr<Value> emitUnary(OnnxNode &n, UnaryKind kind, Value x) {
  switch (kind) {
  case UnaryKind::Neg: return n.create<ll::NegOp>({x});
  case UnaryKind::Abs: return n.create<ll::AbsOp>({x});
  case UnaryKind::Exp: return n.create<ll::ExpOp>({x});
  case UnaryKind::Log: return n.create<ll::LogOp>({x});
  case UnaryKind::Sqrt: return n.create<ll::SqrtOp>({x});
  case UnaryKind::Reciprocal: return n.create<ll::ReciprocalOp>({x});
  case UnaryKind::Tanh: return n.create<ll::TanhOp>({x});
  case UnaryKind::Erf: return n.create<ll::ErfOp>({x});
  case UnaryKind::Sigmoid: return n.create<ll::SigmoidOp>({x});
  case UnaryKind::Relu: return n.create<ll::ReluOp>({x});
  case UnaryKind::Cos: return n.create<ll::CosOp>({x});
  case UnaryKind::Sin: return n.create<ll::SinOp>({x});
  case UnaryKind::IsNaN: return n.create<ll::IsNanOp>({x});
  case UnaryKind::Not:
    return n.create<ll::CompareOp>(
        {x, n.scalar(n.b.getI1Type(), 0)},
        {n.b.getNamedAttr("predicate",
                          ll::ComparePredicateAttr::get(
                              n.b.getContext(), ll::ComparePredicate::eq))});
  case UnaryKind::Floor:
  case UnaryKind::Ceil:
    break;
  }
  n.emitError() << "llmc evaluates " << n.opType()
                << " only on values known at import time";
  return failure();
}

template <UnaryKind kind> static LogicalResult unaryOp(OnnxNode &n) {
  if (const TensorData *x = n.constant(0); x && n.canFold(x->shape())) {
    n.setOutput(0, evalUnary(kind, *x));
    return success();
  }
  auto x = n.value(0);
  if (failed(x))
    return failure();
  auto r = emitUnary(n, kind, *x);
  if (failed(r))
    return failure();
  n.setOutput(0, *r);
  return success();
}

//===----------------------------------------------------------------------===//
// Cast, CastLike, Where, Clip, Dropout
//===----------------------------------------------------------------------===//

static LogicalResult castTo(OnnxNode &n, DType to) {
  int32_t code = static_cast<int32_t>(to);
  if (!isKnownDType(code) || dtypeSize(to) == 0)
    return n.emitError() << "casts to " << dtypeName(code)
                         << ", which llmc cannot represent";
  if (const TensorData *x = n.constant(0); x && n.canFold(x->shape())) {
    n.setOutput(0, evalCast(*x, to));
    return success();
  }
  auto elt = llmcElementType(to, n.b.getContext());
  if (failed(elt))
    return n.emitError() << "casts to "
                         << dtypeName(static_cast<int32_t>(to))
                         << ", which llmc tensors cannot hold (f32, f16, "
                            "bf16, f64, i32, i64, bool)";
  auto x = n.value(0);
  if (failed(x))
    return failure();
  n.setOutput(0, n.cast(*x, *elt));
  return success();
}

static LogicalResult castOp(OnnxNode &n) {
  return castTo(n, static_cast<DType>(n.getInt("to", 1)));
}

static LogicalResult castLikeOp(OnnxNode &n) { return castTo(n, n.dtype(1)); }

static LogicalResult whereOp(OnnxNode &n) {
  const TensorData *c = n.constant(0), *x = n.constant(1), *y = n.constant(2);
  if (c && x && y) {
    auto xy = broadcastStatic(x->shape(), y->shape());
    auto shape = xy ? broadcastStatic(c->shape(), *xy) : std::nullopt;
    if (shape && n.canFold(*shape)) {
      auto r = evalWhere(*c, *x, *y);
      if (!r)
        return n.evalError(r.takeError());
      n.setOutput(0, std::move(*r));
      return success();
    }
  }
  auto cv = n.value(0);
  auto xv = failed(cv) ? cv : n.value(1);
  auto yv = failed(xv) ? xv : n.value(2);
  if (failed(yv))
    return failure();
  auto r = n.create<ll::WhereOp>({*cv, *xv, *yv});
  if (failed(r))
    return failure();
  n.setOutput(0, *r);
  return success();
}

/// Clip(x, min, max) = Min(Max(x, min), max); absent bounds are skipped.
static LogicalResult clipOp(OnnxNode &n) {
  ImportValue acc = n.input(0);
  std::string name = n.inputName(0).str();
  for (auto [i, kind] : {std::pair{1u, BinaryKind::Max},
                         std::pair{2u, BinaryKind::Min}}) {
    if (!n.hasInput(i))
      continue;
    ImportValue bound = n.input(i);
    auto r = applyBinary(n, kind, acc, name, bound, n.inputName(i));
    if (failed(r))
      return failure();
    acc = std::move(*r);
    name = n.name().str();
  }
  n.setOutput(0, std::move(acc));
  return success();
}

/// Dropout is an identity at inference and with ratio 0. In training mode it
/// is x * llmc.dropout_mask: a counter-based keep mask (Philox, keyed by the
/// node's seed, a per-node offset and the training step) scaled by
/// 1 / (1 - ratio), so the backward pass and any recomputation draw the
/// same mask. The mask output is `dropout_mask != 0`.
static LogicalResult dropoutOp(OnnxNode &n) {
  bool training = false;
  if (n.hasInput(2)) {
    auto mode = n.requireScalar(2, "training_mode");
    if (failed(mode))
      return failure();
    training = (*mode)->getInt(0) != 0;
  }
  double ratio = 0.5; // ONNX's default
  if (training && n.hasInput(1)) {
    auto r = n.requireScalar(1, "ratio");
    if (failed(r))
      return failure();
    ratio = (*r)->dtype() == DType::Float
                ? shortestDouble(static_cast<float>((*r)->getDouble(0)))
                : (*r)->getDouble(0);
    if (!(ratio >= 0 && ratio < 1))
      return n.emitError() << "has ratio " << ratio
                           << "; dropout needs a ratio in [0, 1)";
  }
  auto x = n.value(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  if (!training || ratio == 0) {
    n.setOutput(0, n.input(0));
    if (n.outputUsed(1))
      n.setOutput(1, n.splat(type.clone(n.b.getI1Type()), 1));
    return success();
  }
  if (!isa<FloatType>(type.getElementType()))
    return n.emitError() << "drops elements of a non-float tensor";
  if (failed(n.requireStaticShape(0, "training-mode Dropout")))
    return failure();
  if (type.getNumElements() > int64_t(UINT32_MAX))
    return n.emitError() << "drops elements of a tensor of "
                         << type.getNumElements()
                         << " elements; llmc's dropout counts at most 2^32 - 1";
  Value m = n.b.create<ll::DropoutMaskOp>(
      n.loc, type, /*step=*/Value(), n.b.getF64FloatAttr(ratio),
      n.b.getI64IntegerAttr(n.getInt("seed", 0)),
      n.b.getI64IntegerAttr(n.graph.dropoutSites++));
  auto y = n.create<ll::MulOp>({*x, m});
  if (failed(y))
    return failure();
  n.setOutput(0, *y);
  if (n.outputUsed(1)) {
    auto keep = n.create<ll::CompareOp>(
        {m, n.scalar(type.getElementType(), 0)},
        {n.b.getNamedAttr("predicate",
                          ll::ComparePredicateAttr::get(
                              n.b.getContext(), ll::ComparePredicate::ne))});
    if (failed(keep))
      return failure();
    n.setOutput(1, *keep);
  }
  return success();
}

void registerElementwiseOps(OpRegistry &r) {
  r["Add"] = binaryOp<BinaryKind::Add>;
  r["Sub"] = binaryOp<BinaryKind::Sub>;
  r["Mul"] = binaryOp<BinaryKind::Mul>;
  r["Div"] = binaryOp<BinaryKind::Div>;
  r["Pow"] = binaryOp<BinaryKind::Pow>;
  r["Mod"] = binaryOp<BinaryKind::Mod>;
  r["Max"] = binaryOp<BinaryKind::Max>;
  r["Min"] = binaryOp<BinaryKind::Min>;
  r["Sum"] = binaryOp<BinaryKind::Add>;
  r["Equal"] = binaryOp<BinaryKind::Equal>;
  r["Less"] = binaryOp<BinaryKind::Less>;
  r["LessOrEqual"] = binaryOp<BinaryKind::LessOrEqual>;
  r["Greater"] = binaryOp<BinaryKind::Greater>;
  r["GreaterOrEqual"] = binaryOp<BinaryKind::GreaterOrEqual>;
  r["And"] = binaryOp<BinaryKind::And>;
  r["Or"] = binaryOp<BinaryKind::Or>;
  r["Xor"] = binaryOp<BinaryKind::Xor>;

  r["Neg"] = unaryOp<UnaryKind::Neg>;
  r["Abs"] = unaryOp<UnaryKind::Abs>;
  r["Exp"] = unaryOp<UnaryKind::Exp>;
  r["Log"] = unaryOp<UnaryKind::Log>;
  r["Sqrt"] = unaryOp<UnaryKind::Sqrt>;
  r["Reciprocal"] = unaryOp<UnaryKind::Reciprocal>;
  r["Tanh"] = unaryOp<UnaryKind::Tanh>;
  r["Erf"] = unaryOp<UnaryKind::Erf>;
  r["Sigmoid"] = unaryOp<UnaryKind::Sigmoid>;
  r["Relu"] = unaryOp<UnaryKind::Relu>;
  r["Cos"] = unaryOp<UnaryKind::Cos>;
  r["Sin"] = unaryOp<UnaryKind::Sin>;
  r["Floor"] = unaryOp<UnaryKind::Floor>;
  r["Ceil"] = unaryOp<UnaryKind::Ceil>;
  r["Not"] = unaryOp<UnaryKind::Not>;
  r["IsNaN"] = unaryOp<UnaryKind::IsNaN>;

  r["Cast"] = castOp;
  r["CastLike"] = castLikeOp;
  r["Where"] = whereOp;
  r["Clip"] = clipOp;
  r["Dropout"] = dropoutOp;
}

} // namespace llmc::onnximport
