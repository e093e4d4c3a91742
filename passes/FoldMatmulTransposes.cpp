//===- FoldMatmulTransposes.cpp - transposed operands as matmul flags -----===//
//
// An exported linear layer with an [out, in] weight (HF's lm_head, every
// nn.Linear) computes x W^T as `matmul(x, transpose(W))`. The transpose is
// a full read and write of the weight every step, and autodiff adds another
// for its gradient (the transpose's VJP); at GPT-2's tied vocabulary that
// is two 77 MB copies, 0.65 ms per step on an H100 (BENCHMARKS.md, session
// 4). cuBLASLt reads either layout at the same speed, so the matmul takes
// the transposed operand as a flag instead, and the matmul's own VJP then
// writes dW in W's layout (LlmcNNVjps.cpp: no transpose in the backward).
//
// Runs right after raising: attention raising matches `matmul(q,
// transpose(k))` and refuses matmuls with flags, so folding earlier would
// hide attention from it. Only transposes that swap the last two dims and
// keep the others fold (a matmul's flag means exactly that); the numerics
// are the same sums.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/llmc/LlmcOps.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::llmc {
#define GEN_PASS_DEF_FOLDMATMULTRANSPOSESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

/// `value` as a transpose of the last two dims of another value.
TransposeOp lastTwoSwap(Value value) {
  auto t = value.getDefiningOp<TransposeOp>();
  if (!t)
    return nullptr;
  ArrayRef<int64_t> perm = t.getPermutation();
  int64_t rank = perm.size();
  if (rank < 2)
    return nullptr;
  for (int64_t i = 0; i < rank - 2; ++i)
    if (perm[i] != i)
      return nullptr;
  return perm[rank - 2] == rank - 1 && perm[rank - 1] == rank - 2 ? t
                                                                  : nullptr;
}

struct FoldMatmulTransposesPass
    : mlir::llmc::impl::FoldMatmulTransposesPassBase<
          FoldMatmulTransposesPass> {
  void runOnOperation() override {
    // A transpose read by two matmuls is listed once.
    llvm::SetVector<Operation *> maybeDead;
    getOperation().walk([&](MatmulOp op) {
      if (TransposeOp t = lastTwoSwap(op.getLhs())) {
        op.getLhsMutable().assign(t.getInput());
        op.setTransposeLhs(!op.getTransposeLhs());
        maybeDead.insert(t);
      }
      if (TransposeOp t = lastTwoSwap(op.getRhs())) {
        op.getRhsMutable().assign(t.getInput());
        op.setTransposeRhs(!op.getTransposeRhs());
        maybeDead.insert(t);
      }
    });
    for (Operation *t : maybeDead)
      if (t->use_empty())
        t->erase();
  }
};

} // namespace
