//===- EpilogueUtils.h - Predicates of llmc-fuse-epilogues -------*- C++ -*-===//
//
// Shared by the bias-add rewrite (FuseEpilogues.cpp) and the GELU and
// bias-gradient rewrites (MatmulEpilogues.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_EPILOGUEUTILS_H
#define LLMC_PASSES_EPILOGUEUTILS_H

#include "dialects/llmc/LlmcOps.h"
#include "passes/FusionUtils.h"

namespace mlir::llmc {

/// The only op of `group`, or null when it holds several.
inline Operation *soleOp(KernelOp group) {
  Block &body = group.getBody().front();
  return body.getOperations().size() == 2 ? &body.front() : nullptr;
}

/// `v` exists when `group` runs: an argument of its block or defined
/// before it there.
inline bool definedBefore(Value v, Operation *group) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == group->getBlock();
  Operation *def = v.getDefiningOp();
  return def->getBlock() == group->getBlock() && def->isBeforeInBlock(group);
}

inline int64_t batchElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape.drop_back(2))
    n *= d;
  return n;
}

/// One GEMM: the lhs batch folds into the rows (an unbatched rhs, lhs not
/// transposed), or there is no batch (compiler/codegen/MatmulEmitters.cpp).
inline bool isSingleGemm(MatmulOp matmul) {
  auto rhs = cast<RankedTensorType>(matmul.getRhs().getType());
  auto d = cast<RankedTensorType>(matmul.getResult().getType());
  return (batchElements(rhs.getShape()) == 1 && !matmul.getTransposeLhs()) ||
         batchElements(d.getShape()) == 1;
}

} // namespace mlir::llmc

#endif // LLMC_PASSES_EPILOGUEUTILS_H
