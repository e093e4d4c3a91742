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

/// A matmul whose batch dims broadcast partially ([2, 4] against [2, 1]:
/// Falcon's multi-query attention, unraised) has no single batch stride, so
/// cuBLASLt's strided batch cannot run it. The operand that broadcasts is
/// materialized at the result's batch dims first; one that broadcasts
/// wholly (all batch dims 1, or none) keeps stride 0 and is left alone.
void materializeBatchBroadcast(MatmulOp op, OpBuilder &builder) {
  auto result = cast<RankedTensorType>(op.getResult().getType());
  int64_t rank = result.getRank();
  auto batchOf = [&](ArrayRef<int64_t> shape) {
    SmallVector<int64_t> b(rank - 2, 1);
    int64_t n = static_cast<int64_t>(shape.size()) - 2;
    for (int64_t i = 0; i < n; ++i)
      b[rank - 2 - n + i] = shape[i];
    return b;
  };
  ArrayRef<int64_t> batchD = result.getShape().drop_back(2);
  auto widen = [&](OpOperand &operand) {
    auto type = cast<RankedTensorType>(operand.get().getType());
    SmallVector<int64_t> batch = batchOf(type.getShape());
    if (llvm::equal(batch, batchD) || llvm::all_of(batch, [](int64_t d) {
          return d == 1;
        }))
      return;
    SmallVector<int64_t> shape(batchD.begin(), batchD.end());
    shape.append(type.getShape().take_back(2).begin(),
                 type.getShape().take_back(2).end());
    builder.setInsertionPoint(op);
    Value wide = builder.create<BroadcastToOp>(
        op.getLoc(), RankedTensorType::get(shape, type.getElementType()),
        operand.get());
    operand.set(wide);
  };
  widen(op->getOpOperand(0));
  widen(op->getOpOperand(1));
}

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
    func.walk([&](MatmulOp op) {
      if (!op->getParentOfType<KernelOp>())
        materializeBatchBroadcast(op, builder);
    });
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
