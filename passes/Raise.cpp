//===- Raise.cpp - All raising patterns, canonicalization and CSE ----------===//
//
// The raising stage that the pipeline runs after import: every llmc-raise-*
// pattern set plus the llmc folds and canonicalization patterns, applied
// greedily, then CSE, repeated until a round changes nothing.
//
// 1. Greedy rewrite with all raising patterns and canonicalizations (folds
//    remove the shape arithmetic the importer left, and dead ops vanish).
// 2. CSE: exporters repeat masks, scales and rotary tables per layer; merged
//    copies let single-use checks and later patterns see one value.
// 3. Repeat while either step changed the function.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/RaisePatterns.h"

#include "mlir/IR/Dominance.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "llmc-raise"

namespace mlir::llmc {
#define GEN_PASS_DEF_RAISEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

LogicalResult mlir::llmc::applyRaisePatterns(Operation *op,
                                             RewritePatternSet &&patterns,
                                             StringRef passName) {
  if (succeeded(applyPatternsAndFoldGreedily(op, std::move(patterns))))
    return success();
  return op->emitError() << passName
                         << " did not converge: a pattern keeps rewriting";
}

namespace {

struct RaisePass : mlir::llmc::impl::RaisePassBase<RaisePass> {
  using RaisePassBase::RaisePassBase;

  LogicalResult initialize(MLIRContext *context) override {
    RewritePatternSet set(context);
    populateRaiseAttentionPatterns(set);
    populateRaiseCrossEntropyPatterns(set);
    populateRaiseGeluPatterns(set);
    populateRaiseLayerNormPatterns(set);
    populateRaiseRmsNormPatterns(set);
    populateRaiseRotaryPatterns(set);
    populateRaiseSiluPatterns(set);
    populateRaiseSoftmaxPatterns(set);
    for (Dialect *dialect : context->getLoadedDialects())
      dialect->getCanonicalizationPatterns(set);
    for (RegisteredOperationName op : context->getRegisteredOperations())
      op.getCanonicalizationPatterns(set, context);
    patterns = FrozenRewritePatternSet(std::move(set));
    return success();
  }

  void runOnOperation() override {
    Operation *func = getOperation();
    IRRewriter rewriter(&getContext());
    for (int64_t round = 0; round < maxIterations; ++round) {
      bool rewritten = false;
      GreedyRewriteConfig config;
      if (failed(applyPatternsAndFoldGreedily(func, patterns, config,
                                              &rewritten))) {
        func->emitError("llmc-raise did not converge: a pattern keeps "
                        "rewriting");
        return signalPassFailure();
      }
      bool merged = false;
      DominanceInfo dominance(func);
      eliminateCommonSubExpressions(rewriter, dominance, func, &merged);
      if (!rewritten && !merged)
        return;
    }
    // Not reaching a fixpoint is not an error: the IR is valid, only maybe
    // less raised. Say so, because a later stage may then miss a kernel.
    func->emitWarning() << "llmc-raise stopped after "
                        << static_cast<int64_t>(maxIterations)
                        << " rounds without reaching a fixpoint";
  }

  FrozenRewritePatternSet patterns;
};

} // namespace
