//===- ClassifierChunks.h - How many chunks of tokens the classifier takes ===//
//
// llmc-chunk-classifier (passes/ChunkClassifier.cpp) computes the logits,
// the loss, their gradient and the products that read it one chunk of
// tokens at a time. The count is the memory plan's decision (docs/memory.md,
// "The chunked classifier"): each candidate (1, 2, 4, ... chunks, dividing
// the tokens) is planned on a copy of the module (plannedPeak), and its
// cost modelled from the bytes and launches the chunks add (the pass
// records them) against the step's floor (its FLOPs at the H100's measured
// GEMM rate). With a budget: the fewest chunks whose peak fits it, else the
// lowest peak (recomputation does the rest). Without: the lowest peak among
// the candidates that cost under 1% of the step, when it is lower than the
// whole classifier's.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CLASSIFIERCHUNKS_H
#define LLMC_COMPILER_CLASSIFIERCHUNKS_H

#include "compiler/Pipeline.h"

#include <string>
#include <vector>

namespace llmc {

struct ClassifierChunkCandidate {
  int64_t chunks = 1;
  uint64_t peak = 0;     // planned device memory (plannedPeak)
  double costMs = 0;     // modelled time the chunks add
  double costShare = 0;  // costMs over the step's modelled floor
};

struct ClassifierChunkChoice {
  int64_t chunks = 1;
  int64_t tokens = 0;       // 0: no classifier to chunk
  double stepFloorMs = 0;   // the denominator of costShare
  std::string why;          // one line: why this count
  std::vector<ClassifierChunkCandidate> candidates; // when planned
};

/// Applies `recompute.classifierChunks` to @train_step (or chooses it when
/// 0, as above) and returns the decision; the module keeps the chosen
/// rewrite. Eval plans and functions without a classifier stay whole.
mlir::FailureOr<ClassifierChunkChoice>
runClassifierChunks(mlir::ModuleOp module, const RecomputeConfig &recompute,
                    const FusionConfig &fusion = {});

/// The report's line ("2 chunks of 8192 tokens: ...") and, for --explain,
/// one line per candidate.
std::vector<std::string> classifierChunkLines(const ClassifierChunkChoice &c,
                                              bool candidates);

} // namespace llmc

#endif // LLMC_COMPILER_CLASSIFIERCHUNKS_H
