//===- RaisePatterns.h - Pattern sets of the raising passes -------*- C++ -*-===//
//
// Each llmc-raise-<thing> pass owns its patterns; llmc-raise runs all of them
// together, so every pass file exports its set through one function here.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_RAISEPATTERNS_H
#define LLMC_PASSES_RAISEPATTERNS_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::llmc {

void populateRaiseAttentionPatterns(RewritePatternSet &patterns);
void populateRaiseCrossEntropyPatterns(RewritePatternSet &patterns);
void populateRaiseGeluPatterns(RewritePatternSet &patterns);
void populateRaiseLayerNormPatterns(RewritePatternSet &patterns);
void populateRaiseRmsNormPatterns(RewritePatternSet &patterns);
void populateRaiseRotaryPatterns(RewritePatternSet &patterns);
void populateRaiseSiluPatterns(RewritePatternSet &patterns);
void populateRaiseSoftmaxPatterns(RewritePatternSet &patterns);

/// Marks an llmc.attention raised from a model's eager attention code (any
/// form but SDPA's decomposition, sqrt(scale) on q and on k^T): PyTorch ran
/// it as separate ops, which under autocast round the scores and the
/// probabilities to bf16 where the fused op does not. `llmc verify` computes
/// what that moves the loss (docs/verify.md); nothing else reads it.
constexpr llvm::StringLiteral kEagerAttentionAttr = "llmc.eager";

/// Runs `patterns` greedily on `op`; emits an error on `op` when the
/// rewrite does not converge. Shared by the single-pattern passes.
LogicalResult applyRaisePatterns(Operation *op, RewritePatternSet &&patterns,
                                 StringRef passName);

} // namespace mlir::llmc

#endif // LLMC_PASSES_RAISEPATTERNS_H
