//===- EpilogueFusion.cpp - Bias adds fused into matmul epilogues ---------===//
//
// add(matmul(x, w), b) => matmul(x, w) + bias b, when all of these hold
// (anything else stays two kernel groups):
//
//   1. one operand of the add is a matmul result that nothing else reads
//      (not the other operand, not the return), so the add may take its
//      buffer;
//   2. the add's result type is the matmul's: b broadcasts into D;
//   3. b is [n] or [1, ..., 1, n] with n the matmul's N (one value per
//      column, the same for every row: what the epilogue adds), of D's
//      element type (the runtime's bias has D's dtype: runtime/Plan.cpp),
//      and D is f32, bf16 or f16;
//   4. b is defined before the matmul (a block argument or an earlier op),
//      because the epilogue reads it at the matmul's position;
//   5. the MatmulStep is one GEMM: batch 1 after the lhs batch folded into
//      m (a per-batch bias would need CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
//      which the runtime does not set), beta 0, no C, no bias yet.
//
// Liveness needs nothing new: b is read by the add, after the matmul, so its
// live range already covers the matmul (and the planner extends it there
// anyway); the add's result is an alias of D, so D lives through its uses.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/EpilogueFusion.h"

#include "dialects/llmc/LlmcOps.h"

#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

/// Condition 3: b's shape and element type against D's.
bool isRowVector(Value b, RankedTensorType d) {
  auto type = dyn_cast<RankedTensorType>(b.getType());
  if (!type || type.getRank() < 1 || type.getRank() > d.getRank() ||
      type.getElementType() != d.getElementType() ||
      type.getShape().back() != d.getShape().back())
    return false;
  return llvm::all_of(type.getShape().drop_back(),
                      [](int64_t dim) { return dim == 1; });
}

/// Condition 4: b exists when the matmul runs.
bool definedBefore(Value b, Operation *matmul) {
  if (auto arg = dyn_cast<BlockArgument>(b))
    return arg.getOwner() == matmul->getBlock();
  Operation *def = b.getDefiningOp();
  return def->getBlock() == matmul->getBlock() && def->isBeforeInBlock(matmul);
}

/// Condition 5.
bool isSingleGemm(const LoweredOp &mm) {
  const OpLowering &l = mm.lowering;
  return l.kind == OpLowering::Kind::Matmul && l.matmul &&
         l.matmul->batch == 1 && l.matmul->beta == 0 && l.matmul->c.empty() &&
         l.matmul->bias.empty() && !mm.bias;
}

} // namespace

unsigned fuseBiasEpilogues(LoweredFunction &f) {
  llvm::DenseMap<Operation *, size_t> index;
  for (auto [i, lo] : llvm::enumerate(f.ops))
    index[lo.op] = i;
  unsigned fused = 0;
  for (LoweredOp &lo : f.ops) {
    auto add = dyn_cast<AddOp>(lo.op);
    if (!add || lo.lowering.kind != OpLowering::Kind::Kernels)
      continue;
    for (unsigned i = 0; i < 2; ++i) {
      Value d = add->getOperand(i), b = add->getOperand(1 - i);
      auto matmul = d.getDefiningOp<MatmulOp>();
      if (!matmul || !d.hasOneUse() || b == d || !index.count(matmul))
        continue; // condition 1
      LoweredOp &mm = f.ops[index[matmul]];
      auto dType = cast<RankedTensorType>(d.getType());
      if (add.getType() != dType || // condition 2
          !isa<Float32Type, BFloat16Type, Float16Type>(
              dType.getElementType()) ||
          !isRowVector(b, dType) || !definedBefore(b, matmul) ||
          !isSingleGemm(mm) || dType.getShape().back() != mm.lowering.matmul->n)
        continue;
      mm.bias = b;
      lo.lowering = OpLowering();
      lo.lowering.kind = OpLowering::Kind::Alias;
      lo.lowering.aliasOperand = i;
      ++fused;
      break;
    }
  }
  return fused;
}

} // namespace llmc::codegen
