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
