//===- RaiseSilu.cpp - Raise x * sigmoid(x) to llmc.silu -------------------===//
//
// SwiGLU MLPs (Llama, Qwen) export silu as Sigmoid followed by Mul. The
// pattern needs the sigmoid to feed only this mul, or the sigmoid would be
// computed twice.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/RaisePatterns.h"
#include "passes/RaiseUtils.h"

#define DEBUG_TYPE "llmc-raise-silu"

namespace mlir::llmc {
#define GEN_PASS_DEF_RAISESILUPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

// mul(x, sigmoid(x)) = silu(x), either operand order.
struct RaiseSilu : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [x, s] : {std::pair(op.getLhs(), op.getRhs()),
                        std::pair(op.getRhs(), op.getLhs())}) {
      auto sigmoid = s.getDefiningOp<SigmoidOp>();
      if (!sigmoid || sigmoid.getInput() != x)
        continue;
      if (!s.hasOneUse())
        return rewriter.notifyMatchFailure(op, "sigmoid has other uses");
      if (x.getType() != op.getType())
        return rewriter.notifyMatchFailure(op, "mul broadcasts x");
      rewriter.replaceOpWithNewOp<SiluOp>(op, x);
      return success();
    }
    return rewriter.notifyMatchFailure(op, "not x * sigmoid(x)");
  }
};

struct RaiseSiluPass : mlir::llmc::impl::RaiseSiluPassBase<RaiseSiluPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateRaiseSiluPatterns(patterns);
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  getArgument())))
      signalPassFailure();
  }
};

} // namespace

void mlir::llmc::populateRaiseSiluPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseSilu>(patterns.getContext());
}
