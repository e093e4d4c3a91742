//===- RaiseGelu.cpp - Raise decomposed GELU to llmc.gelu ------------------===//
//
// Exporters write GELU as a product whose association varies:
//   dynamo nanoGPT:  x * (0.5 * (1 + tanh(c * (x + 0.044715 * pow(x, 3)))))
//   HF GPT-2:        (x * 0.5) * (1 + tanh((x + pow(x, 3) * 0.044715) * c))
//   TorchScript erf: (x * (erf(x / 1.4142135) + 1)) * 0.5
// so the matcher flattens the outer product into a coefficient times
// factors (RaiseUtils' collectProduct) and checks the formula on that:
// coefficient 0.5, factors {x, 1 + tanh(...)} or {x, 1 + erf(...)}.
// Every interior op must have one use; x may have any number.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/RaisePatterns.h"
#include "passes/RaiseUtils.h"

#include <cmath>

#define DEBUG_TYPE "llmc-raise-gelu"

namespace mlir::llmc {
#define GEN_PASS_DEF_RAISEGELUPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::raise;

namespace {

/// The operand of `1 + f(...)` (either order) when `v` is that sum with a
/// single use and f is OpTy with a single use; null otherwise.
template <typename OpTy> static OpTy matchOnePlus(Value v) {
  auto add = v.getDefiningOp<AddOp>();
  if (!add || !v.hasOneUse())
    return {};
  for (auto [a, b] : {std::pair(add.getLhs(), add.getRhs()),
                      std::pair(add.getRhs(), add.getLhs())}) {
    auto f = a.template getDefiningOp<OpTy>();
    if (f && a.hasOneUse() && isScalarConstant(b, 1.0) &&
        a.getType() == v.getType())
      return f;
  }
  return {};
}

/// True when `v` = c * x, the product of one factor x and a coefficient
/// within tolerance of c.
static bool isScaled(Value v, Value x, double c) {
  if (!v.hasOneUse())
    return false;
  Product p = collectProduct(v);
  return p.factors.size() == 1 && p.factors[0] == x &&
         nearlyEqual(p.coefficient, c);
}

/// tanh argument: sqrt(2/pi) * (x + 0.044715 * x^3).
static bool isTanhArgument(Value arg, Value x) {
  if (!arg.hasOneUse())
    return false;
  Product outer = collectProduct(arg);
  if (outer.factors.size() != 1 ||
      !nearlyEqual(outer.coefficient, std::sqrt(2.0 / M_PI)))
    return false;
  auto sum = outer.factors[0].getDefiningOp<AddOp>();
  if (!sum || !outer.factors[0].hasOneUse())
    return false;
  Value cube = otherOperand(sum, x);
  if (!cube || !cube.hasOneUse())
    return false;
  Product p = collectProduct(cube);
  expandPowers(p);
  return nearlyEqual(p.coefficient, 0.044715) && p.factors.size() == 3 &&
         llvm::all_of(p.factors, [&](Value f) { return f == x; });
}

// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) = gelu_tanh(x)
// 0.5 * x * (1 + erf(x / sqrt(2)))                      = gelu_erf(x)
struct RaiseGelu : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    Product p = collectProduct(op.getResult());
    if (p.factors.size() != 2)
      return rewriter.notifyMatchFailure(op, "not a product of two factors");
    if (!nearlyEqual(p.coefficient, 0.5))
      return rewriter.notifyMatchFailure(op, "coefficient is not 0.5");
    for (auto [x, u] : {std::pair(p.factors[0], p.factors[1]),
                        std::pair(p.factors[1], p.factors[0])}) {
      if (x.getType() != op.getType())
        continue;
      if (auto tanh = matchOnePlus<TanhOp>(u)) {
        if (!isTanhArgument(tanh.getInput(), x))
          return rewriter.notifyMatchFailure(
              op, "tanh argument is not sqrt(2/pi) * (x + 0.044715 x^3)");
        rewriter.replaceOpWithNewOp<GeluOp>(op, GeluApproximation::tanh, x);
        return success();
      }
      if (auto erf = matchOnePlus<ErfOp>(u)) {
        if (!isScaled(erf.getInput(), x, 1.0 / std::sqrt(2.0)))
          return rewriter.notifyMatchFailure(op,
                                             "erf argument is not x / sqrt(2)");
        rewriter.replaceOpWithNewOp<GeluOp>(op, GeluApproximation::erf, x);
        return success();
      }
    }
    return rewriter.notifyMatchFailure(
        op, "no factor is 1 + tanh(...) or 1 + erf(...) of the other");
  }
};

struct RaiseGeluPass : mlir::llmc::impl::RaiseGeluPassBase<RaiseGeluPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateRaiseGeluPatterns(patterns);
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  getArgument())))
      signalPassFailure();
  }
};

} // namespace

void mlir::llmc::populateRaiseGeluPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseGelu>(patterns.getContext());
}
