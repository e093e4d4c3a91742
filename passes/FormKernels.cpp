//===- FormKernels.cpp - Every compute op in a group of its own -----------===//
//
// The first kernel-IR pass (docs/kernel-ir.md): each op of the function
// body that launches something becomes a one-op llmc.kernel, placed where
// the op was, whose results replace the op's. reshape (an alias of its
// operand's buffer) and constant (a buffer with initial data) launch
// nothing and stay outside, as do the terminator and existing groups.
//
// One pair is a group from the start: a bf16/f16 matmul and its linear
// bias add. The IR means one rounding after the bias (autocast's addmm,
// docs/precision.md; the evaluator rounds there), which two launches with
// a bf16 product between them cannot give, so the pair is not an optional
// fusion: with every fusion off it is still one cuBLASLt call with a BIAS
// epilogue. The group sits at the add, so a bias computed after the matmul
// is no obstacle (llmc-fuse-epilogues, which merges f32 pairs, where both
// forms round alike, moves the add up instead).
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

int64_t batchElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape.drop_back(2))
    n *= d;
  return n;
}

/// The bias add that must share `matmul`'s group: the linear bias add
/// (linearBiasAdd) of a bf16/f16 product that one cuBLASLt call can compute
/// (a static product of rank >= 2, a bias of its element type, one GEMM:
/// compiler/codegen/MatmulEmitters.cpp).
AddOp narrowBiasEpilogue(MatmulOp matmul) {
  AddOp add = linearBiasAdd(matmul);
  auto d = dyn_cast<RankedTensorType>(matmul.getResult().getType());
  if (!add || !d || !d.hasStaticShape() || d.getRank() < 2 ||
      !isa<BFloat16Type, Float16Type>(d.getElementType()) ||
      add.getType() != d)
    return nullptr;
  Value bias = add.getLhs() == matmul.getResult() ? add.getRhs() : add.getLhs();
  auto b = cast<RankedTensorType>(bias.getType());
  if (b.getElementType() != d.getElementType() || b.getRank() > d.getRank())
    return nullptr;
  auto rhs = cast<RankedTensorType>(matmul.getRhs().getType());
  bool singleGemm =
      (batchElements(rhs.getShape()) == 1 && !matmul.getTransposeLhs()) ||
      batchElements(d.getShape()) == 1;
  return singleGemm ? add : nullptr;
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
    for (Block &block : func.getBody()) {
      SmallVector<Operation *> ops;
      for (Operation &op : block)
        if (!launchesNothing(op))
          ops.push_back(&op);
      for (Operation *op : ops) {
        // A bias add already moved into its matmul's group.
        if (op->getBlock() != &block)
          continue;
        AddOp bias;
        if (auto matmul = dyn_cast<MatmulOp>(op))
          bias = narrowBiasEpilogue(matmul);
        // The pair's group goes where the add was: the matmul's operands
        // are defined before it, and the add is its product's only reader.
        Operation *last = bias ? bias.getOperation() : op;
        builder.setInsertionPoint(last);
        auto group = builder.create<KernelOp>(
            op->getLoc(), last->getResultTypes(), /*in_place=*/nullptr);
        Block *body = builder.createBlock(&group.getBody());
        last->replaceAllUsesWith(group.getResults());
        op->moveBefore(body, body->end());
        if (bias)
          bias->moveBefore(body, body->end());
        builder.setInsertionPointToEnd(body);
        builder.create<YieldOp>(op->getLoc(), last->getResults());
      }
    }
  }
};

} // namespace
