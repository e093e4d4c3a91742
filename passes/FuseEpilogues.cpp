//===- FuseEpilogues.cpp - Bias adds into their matmul's group ------------===//
//
// add(matmul(x, w), b) => one group, one cuBLASLt call with a BIAS epilogue;
// then GELU, GELU-gradient and bias-gradient epilogues (MatmulEpilogues.cpp)
// (the conditions are in Passes.td; each has a negative case in
// test/lit/passes/fuse-epilogues.mlir). The add moves into the matmul's
// group, reads the matmul's result there, and becomes what the group
// yields; the add's group goes away. The CUDA backend lowers such a group
// to the matmul's MatmulStep with `bias` set (compiler/codegen).
//
// Liveness needs nothing new: the group's result is the product's buffer,
// and b, read inside the group, lives until the group as any operand does.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/llmc/LlmcOps.h"
#include "passes/EpilogueUtils.h"
#include "passes/MatmulEpilogues.h"

#define DEBUG_TYPE "llmc-fuse-epilogues"

namespace mlir::llmc {
#define GEN_PASS_DEF_FUSEEPILOGUESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

/// b is [n] or [1, ..., 1, n] of D's element type: one value per column.
bool isRowVector(Value b, RankedTensorType d) {
  auto type = dyn_cast<RankedTensorType>(b.getType());
  if (!type || type.getRank() < 1 || type.getRank() > d.getRank() ||
      type.getElementType() != d.getElementType() ||
      type.getShape().back() != d.getShape().back())
    return false;
  return llvm::all_of(type.getShape().drop_back(),
                      [](int64_t dim) { return dim == 1; });
}

/// The matmul group whose result operand `i` of `add` is, when every
/// condition holds; null otherwise.
KernelOp epilogueHost(AddOp add, unsigned i) {
  Value d = add->getOperand(i), b = add->getOperand(1 - i);
  auto group = d.getDefiningOp<KernelOp>();
  if (!group || group->getBlock() != add->getParentOp()->getBlock() ||
      !d.hasOneUse() || b == d)
    return nullptr;
  auto matmul = dyn_cast_or_null<MatmulOp>(soleOp(group));
  auto dType = dyn_cast<RankedTensorType>(d.getType());
  if (!matmul || !dType || !dType.hasStaticShape() || dType.getRank() < 2 ||
      add.getType() != dType ||
      !isa<Float32Type, BFloat16Type, Float16Type>(dType.getElementType()) ||
      !isRowVector(b, dType) || !definedBefore(b, group) ||
      !isSingleGemm(matmul))
    return nullptr;
  return group;
}

struct FuseEpiloguesPass
    : public mlir::llmc::impl::FuseEpiloguesPassBase<FuseEpiloguesPass> {
  using FuseEpiloguesPassBase::FuseEpiloguesPassBase;

  void runOnOperation() override {
    SmallVector<KernelOp> groups;
    getOperation().walk([&](KernelOp group) { groups.push_back(group); });
    for (KernelOp addGroup : groups) {
      auto add = dyn_cast_or_null<AddOp>(soleOp(addGroup));
      if (!add || addGroup.getYield()->getOperands() != add->getResults())
        continue;
      for (unsigned i = 0; i < 2; ++i) {
        KernelOp host = epilogueHost(add, i);
        if (!host)
          continue;
        Operation *yield = host.getYield();
        add->moveBefore(yield);
        add->setOperand(i, yield->getOperand(0));
        yield->setOperand(0, add.getResult());
        addGroup.getResult(0).replaceAllUsesWith(host.getResult(0));
        addGroup.erase();
        break;
      }
    }
    // GELU and bias gradients after the bias adds: the forward GELU takes
    // a matmul + bias group (MatmulEpilogues.cpp).
    func::FuncOp func = getOperation();
    if (gelu)
      epilogue::fuseGelu(func);
    if (geluGrad)
      epilogue::fuseGeluGrad(func, biasGrad && geluGradBias);
    if (biasGrad)
      epilogue::fuseBiasGrad(func, biasGradRhs);
  }
};

} // namespace
