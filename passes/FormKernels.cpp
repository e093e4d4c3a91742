//===- FormKernels.cpp - Every compute op in a group of its own -----------===//
//
// The first kernel-IR pass (docs/kernel-ir.md): each op of the function
// body that launches something becomes a one-op llmc.kernel, placed where
// the op was, whose results replace the op's. reshape (an alias of its
// operand's buffer) and constant (a buffer with initial data) launch
// nothing and stay outside, as do the terminator and existing groups.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/llmc/LlmcOps.h"

#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "llmc-form-kernels"

namespace mlir::llmc {
#define GEN_PASS_DEF_FORMKERNELSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

bool launchesNothing(Operation &op) {
  return op.hasTrait<mlir::OpTrait::IsTerminator>() ||
         isa<KernelOp, ReshapeOp, ConstantOp>(op);
}

struct FormKernelsPass
    : public mlir::llmc::impl::FormKernelsPassBase<FormKernelsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    OpBuilder builder(func.getContext());
    for (Block &block : func.getBody())
      for (Operation &op : llvm::make_early_inc_range(block)) {
        if (launchesNothing(op))
          continue;
        builder.setInsertionPoint(&op);
        auto group = builder.create<KernelOp>(op.getLoc(), op.getResultTypes(),
                                              /*in_place=*/nullptr);
        Block *body = builder.createBlock(&group.getBody());
        op.replaceAllUsesWith(group.getResults());
        op.moveBefore(body, body->end());
        builder.setInsertionPointToEnd(body);
        builder.create<YieldOp>(op.getLoc(), op.getResults());
      }
  }
};

} // namespace
