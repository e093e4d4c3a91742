//===- ElementwiseEmitters.cpp - Unary, binary, compare, where, cast ------===//
//
// One scheme for every elementwise op: one thread per result element in a
// grid-stride loop; each operand is read at its broadcast offset, with the
// dims collapsed first (IndexMath.h), converted to its compute type (f32 for
// every float type), combined by the op's expression and stored converted
// to the result type. gelu_grad and silu_grad (a = the forward input, b =
// the cotangent) use the same scheme with a device helper for the
// derivative.
//
// Conventions follow the reference evaluator (docs/reference-evaluator.md):
// max/min/relu propagate NaN, integer arithmetic wraps (done in unsigned
// arithmetic, where C++ defines it), integer division truncates toward zero.
// Where the evaluator reports an error (integer division by zero, a float
// cast to an integer out of range) the kernel cannot; it yields 0 for the
// division and whatever the conversion gives for the cast.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Emitters.h"

#include "dialects/llmc/LlmcOps.h"

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

/// Builds the result's compute-typed expression from the operands'
/// compute-typed values (named a, b, c in operand order).
using ExprFn = std::function<std::string(Type operandType)>;

/// The operand type an op's expression is chosen by: the first operand's,
/// where's first value's.
Type exprOperandType(Operation *op) {
  return elementTypeOf(op->getOperand(op->getNumOperands() == 3 ? 1 : 0));
}

ScalarExpr makeExpr(Operation *op, const std::string &scheme,
                    const ExprFn &expr, bool exprIsStorage = false,
                    const std::string &helpers = "") {
  return {scheme, expr(exprOperandType(op)), exprIsStorage, helpers};
}

LogicalResult emitElementwise(Operation *op, const EmitContext &ctx,
                              OpLowering &out, const ScalarExpr &e) {
  const std::string &scheme = e.scheme, &helpers = e.helpers;
  bool exprIsStorage = e.isStorage;
  Value result = op->getResult(0);
  Shape shape = shapeOf(result);
  int64_t n = numElements(shape);
  IndexSpace space;
  space.shape = shape;
  for (Value v : op->getOperands())
    space.strides.push_back(broadcastStrides(shapeOf(v), shape));
  IndexSpace flat = collapseDims(space);

  KernelSource src(op, ctx.name);
  src.scheme("one thread per element, grid-stride loop; " + scheme);
  src.constant("kN", n, "elements of the result " + dimsString(shape));
  if (!helpers.empty())
    src.helper(helpers);

  static const char *names[] = {"a", "b", "c"};
  std::string params, body;
  std::vector<KernelArg> args;
  body += emitCoordinates("i", "i", flat.shape,
                          neededCoordinates(flat.shape, flat.strides), "    ");
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    Type t = elementTypeOf(op->getOperand(i));
    std::string p = std::string("in_") + names[i];
    params += inParam(t, p) + ", ";
    std::string offset =
        offsetExpression("i", "i", flat.shape, flat.strides[i]);
    body += "    const " + computeType(t) + " " + names[i] + " = " +
            loadAs(t, p + "[" + offset + "]") + ";\n";
    args.push_back(KernelArg::operand(i));
  }
  Type rt = elementTypeOf(result);
  params += outParam(rt, "out");
  args.push_back(KernelArg::result(0));
  const std::string &value = e.expr;
  body +=
      "    out[i] = " + (exprIsStorage ? value : storeAs(rt, value)) + ";\n";

  src.kernel("extern \"C\" __global__ void __launch_bounds__(" +
             std::to_string(ctx.options.blockSize) + ")\n" + ctx.name + "(" +
             params + ") {\n" +
             "  for (index_t i = (index_t)blockIdx.x * blockDim.x + "
             "threadIdx.x; i < kN;\n"
             "       i += (index_t)gridDim.x * blockDim.x) {\n" +
             body + "  }\n}\n");
  return singleKernel(out, elementwiseLaunch(src, ctx, n, std::move(args)));
}

/// The unsigned type of an integer compute type, for wrapping arithmetic.
std::string unsignedOf(Type t) {
  return t.isSignlessInteger(64) ? "unsigned long long" : "unsigned";
}

/// `a <op> b` for integers, wrapped to the width (two's complement).
std::string wrapped(Type t, const std::string &a, const std::string &op,
                    const std::string &b) {
  std::string u = unsignedOf(t);
  return "(" + computeType(t) + ")((" + u + ")" + a + " " + op + " (" + u +
         ")" + b + ")";
}

/// Each elementwise op's expression, by op name.
using ExprTable = llvm::StringMap<std::function<ScalarExpr(Operation *)>>;

template <typename OpTy, typename Fn> void addExpr(ExprTable &table, Fn fn) {
  table[OpTy::getOperationName()] = [fn](Operation *op) {
    return fn(cast<OpTy>(op));
  };
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

/// Where a unary float expression meets its neighbours in a fused kernel
/// (ScalarExpr::end, ::sealsOperands).
struct Boundary {
  ScalarExpr::End end = ScalarExpr::End::Rounded;
  bool sealsOperands = true;
};
/// A library function: may end in a plain multiply, reads its operand with
/// arithmetic that may absorb one.
constexpr Boundary kLibrary = {ScalarExpr::End::Open, false};
/// A division or square root of a library function's value (sigmoid).
constexpr Boundary kDividesLibrary = {ScalarExpr::End::Rounded, false};
/// Negated or absolute value: the operand's ending, read by a sign change.
constexpr Boundary kPassThrough = {ScalarExpr::End::PassThrough, true};

template <typename OpTy>
void addUnary(ExprTable &t, const char *floatExpr,
              const char *intKind = nullptr, Boundary boundary = {}) {
  addExpr<OpTy>(t, [floatExpr, intKind, boundary](OpTy op) {
    ScalarExpr e = makeExpr(op, std::string("y = ") + floatExpr,
                           [&](Type type) -> std::string {
                             if (isFloatType(type) || !intKind)
                               return floatExpr;
                             if (std::string(intKind) == "neg")
                               return wrapped(type, "0", "-", "a");
                             return "(a < 0 ? " + wrapped(type, "0", "-", "a") +
                                    " : a)";
                           });
    e.end = boundary.end;
    e.sealsOperands = boundary.sealsOperands;
    return e;
  });
}

std::string castExpr(Type from, Type to) {
  if (to.isSignlessInteger(1))
    return "a != 0";
  if (isFloatType(to)) {
    if (from.isSignlessInteger(1))
      return "(a ? 1.0f : 0.0f)";
    return "(float)a";
  }
  // To an integer: floats truncate toward zero, integers wrap.
  return "(" + computeType(to) + ")a";
}

ScalarExpr castExprOf(CastOp op) {
  Type from = elementTypeOf(op.getInput()), to = elementTypeOf(op.getResult());
  // An integer converts to bf16/f16 in one rounding, not through f32.
  if (!isFloatType(from) && !from.isSignlessInteger(1) &&
      (to.isBF16() || to.isF16())) {
    std::string fn = std::string("__") +
                     (from.isSignlessInteger(64) ? "ll" : "int") + "2" +
                     (to.isBF16() ? "bfloat16" : "half") + "_rn";
    return makeExpr(
        op, "cast: integer to a 16-bit float in one rounding",
        [&](Type) { return fn + "(a)"; }, /*exprIsStorage=*/true);
  }
  ScalarExpr e =
      makeExpr(op, "cast", [&](Type) { return castExpr(from, to); });
  if (from.isF32() && to.isF32())
    e.end = ScalarExpr::End::PassThrough; // the value itself
  return e;
}

//===----------------------------------------------------------------------===//
// Binary, compare, where
//===----------------------------------------------------------------------===//

/// `floatExpr` is shown in the scheme; `rounded` (when given) is what the
/// kernel computes: the same value, explicitly rounded (Emitters.h).
template <typename OpTy>
void addBinary(ExprTable &t, const char *floatExpr,
               std::function<std::string(Type)> intExpr,
               const char *rounded = nullptr, Boundary boundary = {}) {
  addExpr<OpTy>(t, [floatExpr, intExpr, rounded, boundary](OpTy op) {
    ScalarExpr e = makeExpr(
        op, std::string("numpy broadcasting; y = ") + floatExpr,
        [&](Type type) -> std::string {
          if (!isFloatType(type))
            return intExpr(type);
          return rounded ? rounded : floatExpr;
        });
    e.end = boundary.end;
    e.sealsOperands = boundary.sealsOperands;
    return e;
  });
}

const char *comparison(ComparePredicate p) {
  switch (p) {
  case ComparePredicate::eq:
    return "a == b";
  case ComparePredicate::ne:
    return "a != b";
  case ComparePredicate::lt:
    return "a < b";
  case ComparePredicate::le:
    return "a <= b";
  case ComparePredicate::gt:
    return "a > b";
  case ComparePredicate::ge:
    return "a >= b";
  }
  return "false";
}

//===----------------------------------------------------------------------===//
// Activation derivatives
//===----------------------------------------------------------------------===//

const char *kGeluErfGrad =
    R"(// Phi(x) + x * phi(x): the derivative of x * Phi(x).
__device__ __forceinline__ float geluErfGrad(float x) {
  const float cdf = 0.5f * (1.0f + erff(x * 0.7071067812f));
  const float pdf = expf(-0.5f * x * x) * 0.3989422804f;
  return cdf + x * pdf;
})";

const char *kGeluTanhGrad =
    R"(// The derivative of 0.5 x (1 + tanh(k (x + c x^3))) itself.
__device__ __forceinline__ float geluTanhGrad(float x) {
  const float k = 0.7978845608f, c = 0.044715f;
  const float t = tanhf(k * (x + c * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * c * x * x);
})";

const char *kSiluGrad =
    R"(__device__ __forceinline__ float siluGrad(float x) {
  const float s = 1.0f / (1.0f + expf(-x));
  return s * (1.0f + x * (1.0f - s));
})";

const ExprTable &exprTable() {
  static const ExprTable table = [] {
    ExprTable t;
  addUnary<NegOp>(t, "-a", "neg", kPassThrough);
  addUnary<AbsOp>(t, "fabsf(a)", "abs", kPassThrough);
  addUnary<ExpOp>(t, "expf(a)", nullptr, kLibrary);
  addUnary<LogOp>(t, "logf(a)", nullptr, kLibrary);
  addUnary<SqrtOp>(t, "sqrtf(a)");
  // 1/sqrtf rather than rsqrtf: rsqrtf is an approximation (2 ulp).
  addUnary<RsqrtOp>(t, "1.0f / sqrtf(a)");
  addUnary<ReciprocalOp>(t, "1.0f / a");
  addUnary<TanhOp>(t, "tanhf(a)", nullptr, kLibrary);
  addUnary<ErfOp>(t, "erff(a)", nullptr, kLibrary);
  addUnary<SigmoidOp>(t, "1.0f / (1.0f + expf(-a))", nullptr, kDividesLibrary);
  addUnary<ReluOp>(t, "(a != a ? a : fmaxf(a, 0.0f))");
  addUnary<CosOp>(t, "cosf(a)", nullptr, kLibrary);
  addUnary<SinOp>(t, "sinf(a)", nullptr, kLibrary);
  addUnary<SiluOp>(t, "a / (1.0f + expf(-a))", nullptr, kDividesLibrary);
  addExpr<GeluOp>(t, [](GeluOp op) {
    bool tanhForm = op.getApproximation() == GeluApproximation::tanh;
    // The last multiply explicitly rounded: a reader's add cannot absorb
    // it (the same value as `0.5f * a * (...)` before a store).
    const char *shown =
        tanhForm ? "0.5f * a * (1.0f + tanhf(0.7978845608f * (a + 0.044715f * "
                   "a * a * a)))"
                 : "0.5f * a * (1.0f + erff(a * 0.7071067812f))";
    const char *e =
        tanhForm ? "__fmul_rn(0.5f * a, 1.0f + tanhf(0.7978845608f * (a + "
                   "0.044715f * a * a * a)))"
                 : "__fmul_rn(0.5f * a, 1.0f + erff(a * 0.7071067812f))";
    ScalarExpr expr = makeExpr(
        op, std::string("gelu ") + (tanhForm ? "tanh" : "erf") + ": y = " +
                shown,
        [e](Type) { return std::string(e); });
    expr.sealsOperands = false;
    return expr;
  });
  // Backward activations: a = the forward input, b = the cotangent.
  addExpr<GeluGradOp>(
      t, [](GeluGradOp op) {
        bool tanhForm = op.getApproximation() == GeluApproximation::tanh;
        ScalarExpr e = makeExpr(
            op,
            std::string("gelu_grad ") + (tanhForm ? "tanh" : "erf") +
                ": y = dy * gelu'(x)",
            [tanhForm](Type) {
              return std::string(tanhForm ? "__fmul_rn(b, geluTanhGrad(a))"
                                          : "__fmul_rn(b, geluErfGrad(a))");
            },
            /*exprIsStorage=*/false, tanhForm ? kGeluTanhGrad : kGeluErfGrad);
        e.sealsOperands = false;
        return e;
      });
  addExpr<SiluGradOp>(
      t, [](SiluGradOp op) {
        ScalarExpr e = makeExpr(
            op,
            "silu_grad: y = dy * s * (1 + x * (1 - s)), s = sigmoid(x)",
            [](Type) { return std::string("__fmul_rn(b, siluGrad(a))"); },
            /*exprIsStorage=*/false, kSiluGrad);
        e.sealsOperands = false;
        return e;
      });
  addExpr<IsNanOp>(
      t, [](IsNanOp op) {
        return makeExpr(op, "y = isnan(a)",
                               [](Type) { return std::string("a != a"); });
      });
  addExpr<CastOp>(t, castExprOf);

  addBinary<AddOp>(
      t, "a + b", [](Type ty) { return wrapped(ty, "a", "+", "b"); },
      "__fadd_rn(a, b)");
  addBinary<SubOp>(
      t, "a - b", [](Type ty) { return wrapped(ty, "a", "-", "b"); },
      "__fsub_rn(a, b)");
  addBinary<MulOp>(
      t, "a * b", [](Type ty) { return wrapped(ty, "a", "*", "b"); },
      "__fmul_rn(a, b)");
  addBinary<DivOp>(t, "a / b", [](Type ty) {
    // Truncates toward zero; MIN / -1 wraps; / 0 gives 0 (the reference
    // reports an error, a kernel cannot).
    return "(b == 0 ? (" + computeType(ty) + ")0 : b == -1 ? " +
           wrapped(ty, "0", "-", "a") + " : a / b)";
  });
  addBinary<PowOp>(
      t, "powf(a, b)", [](Type) { return "powf(a, b)"; }, nullptr, kLibrary);
  addBinary<MaxOp>(t, "((a != a || b != b) ? NAN : fmaxf(a, b))",
                   [](Type) { return "(a > b ? a : b)"; });
  addBinary<MinOp>(t, "((a != a || b != b) ? NAN : fminf(a, b))",
                   [](Type) { return "(a < b ? a : b)"; });
  addExpr<CompareOp>(
      t, [](CompareOp op) {
        const char *e = comparison(op.getPredicate());
        return makeExpr(op,
                               std::string("numpy broadcasting; y = ") + e,
                               [e](Type) { return std::string(e); });
      });
  addExpr<WhereOp>(t, [](WhereOp op) {
    ScalarExpr e = makeExpr(op, "numpy broadcasting; y = a ? b : c",
                            [](Type) { return std::string("a ? b : c"); });
    e.end = ScalarExpr::End::PassThrough; // selects an operand's value
    return e;
  });
    return t;
  }();
  return table;
}

} // namespace

std::optional<ScalarExpr> scalarExpr(Operation *op) {
  auto it = exprTable().find(op->getName().getStringRef());
  if (it == exprTable().end())
    return std::nullopt;
  return it->second(op);
}

void registerElementwiseEmitters(EmitterTable &table) {
  for (const auto &entry : exprTable())
    table[entry.getKey()] = [](Operation *op, const EmitContext &ctx,
                               OpLowering &out) {
      return emitElementwise(op, ctx, out, *scalarExpr(op));
    };
}

} // namespace llmc::codegen
