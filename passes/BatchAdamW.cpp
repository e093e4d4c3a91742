//===- BatchAdamW.cpp - Per-parameter AdamW into multi-tensor updates -----===//
//
// Groups the `llmc.adamw_update` ops of a function into
// `llmc.multi_adamw_update` ops (docs/training-ir.md §3):
//
// 1. Each update's gradient is split into (g, scale): `llmc.mul(g, s)` with a
//    rank-0 `s` whose only use is this update gives (g, s), anything else
//    (grad, none).
// 2. Updates are grouped by (lr, step, beta1, beta2, epsilon, element type,
//    scale), in program order; weight decay is per tensor.
// 3. Each group becomes one multi-tensor op, inserted where the group's last
//    update was (every operand of the group dominates it); the updates'
//    results are replaced by its results and the updates and the absorbed
//    muls are erased.
// 4. A multi-tensor update's gradient or a global_norm input that is an
//    exact widening cast (bf16/f16 -> f32, what autodiff leaves after a bf16
//    weight gradient under --precision bf16) is read from the cast's source;
//    the ops widen on load, so results are bitwise the same and the cast's
//    kernel and f32 copy go.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/llmc/LlmcOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SetVector.h"

#include <map>

#define DEBUG_TYPE "llmc-batch-adamw"

namespace mlir::llmc {
#define GEN_PASS_DEF_BATCHADAMWPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

/// One per-parameter update with its gradient split into (grad, scale).
struct Member {
  AdamWUpdateOp update;
  Value grad;
  MulOp absorbed; // the `grad * scale` op the group reads through, or null
};

/// What the updates of one group must share.
struct GroupKey {
  Value lr, step, scale;
  double beta1, beta2, epsilon;
  Type element;
  auto tuple() const {
    return std::make_tuple(lr.getAsOpaquePointer(), step.getAsOpaquePointer(),
                           scale.getAsOpaquePointer(), beta1, beta2, epsilon,
                           element.getAsOpaquePointer());
  }
  bool operator<(const GroupKey &o) const { return tuple() < o.tuple(); }
};

bool isRank0(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() == 0;
}

/// grad = g * s (either order) with a rank-0 s and no other use of the
/// product: returns the mul, else null.
MulOp scaledGradient(AdamWUpdateOp update) {
  Value grad = update.getGrad();
  auto mul = grad.getDefiningOp<MulOp>();
  if (!mul || !grad.hasOneUse())
    return nullptr;
  for (unsigned i = 0; i < 2; ++i)
    if (isRank0(mul->getOperand(1 - i)) &&
        mul->getOperand(i).getType() == grad.getType())
      return mul;
  return nullptr;
}

/// `v` = cast(x) widening a bf16/f16 x exactly to f32 (same shape): x,
/// else null. The multi-tensor update and global_norm read x as it is
/// stored and widen it in registers, so the cast's kernel, its f32 copy and
/// the wider read go (docs/training-ir.md §3).
Value widenedFrom(Value v) {
  auto cast = v.getDefiningOp<CastOp>();
  if (!cast)
    return nullptr;
  Value x = cast->getOperand(0);
  auto from = dyn_cast<RankedTensorType>(x.getType());
  auto to = dyn_cast<RankedTensorType>(v.getType());
  if (!from || !to || from.getShape() != to.getShape())
    return nullptr;
  Type fe = from.getElementType(), te = to.getElementType();
  return (fe.isBF16() || fe.isF16()) && te.isF32() ? x : nullptr;
}

struct BatchAdamWPass : mlir::llmc::impl::BatchAdamWPassBase<BatchAdamWPass> {
  void runOnOperation() override {
    runBatching();
    readGradientsNarrow();
  }

  /// Operands of multi_adamw_update's grads and of global_norm that are
  /// exact widening casts read their source instead; casts left without a
  /// use are erased.
  void readGradientsNarrow() {
    llvm::SetVector<Operation *> casts;
    getOperation().walk([&](Operation *op) {
      unsigned begin = 0, end = 0;
      if (auto multi = dyn_cast<MultiAdamWUpdateOp>(op)) {
        begin = multi.getNumTensors();
        end = 2 * multi.getNumTensors();
      } else if (isa<GlobalNormOp>(op)) {
        end = op->getNumOperands();
      } else {
        return;
      }
      for (unsigned i = begin; i < end; ++i)
        if (Value x = widenedFrom(op->getOperand(i))) {
          casts.insert(op->getOperand(i).getDefiningOp());
          op->setOperand(i, x);
        }
    });
    for (Operation *cast : casts)
      if (cast->use_empty())
        cast->erase();
  }

  void runBatching() {
    std::map<GroupKey, unsigned> index;
    SmallVector<SmallVector<Member>> groups;
    SmallVector<Value> scales;
    getOperation().walk([&](AdamWUpdateOp update) {
      Member m{update, update.getGrad(), scaledGradient(update)};
      Value scale;
      if (m.absorbed) {
        bool gradFirst =
            m.absorbed.getLhs().getType() == update.getGrad().getType();
        m.grad = gradFirst ? m.absorbed.getLhs() : m.absorbed.getRhs();
        scale = gradFirst ? m.absorbed.getRhs() : m.absorbed.getLhs();
      }
      GroupKey key{update.getLr(),
                   update.getStep(),
                   scale,
                   update.getBeta1().convertToDouble(),
                   update.getBeta2().convertToDouble(),
                   update.getEpsilon().convertToDouble(),
                   getElementTypeOrSelf(update.getParam().getType())};
      auto [it, added] = index.try_emplace(key, groups.size());
      if (added) {
        groups.emplace_back();
        scales.push_back(scale);
      }
      groups[it->second].push_back(m);
    });
    for (auto [members, scale] : llvm::zip(groups, scales))
      buildGroup(members, scale);
  }

  void buildGroup(MutableArrayRef<Member> members, Value scale) {
    AdamWUpdateOp last = members.back().update;
    OpBuilder b(last);
    SmallVector<Value> params, grads, ms, vs;
    SmallVector<Type> types[3];
    SmallVector<double> decays;
    SmallVector<Location> locs;
    for (Member &m : members) {
      params.push_back(m.update.getParam());
      grads.push_back(m.grad);
      ms.push_back(m.update.getM());
      vs.push_back(m.update.getV());
      for (unsigned j = 0; j < 3; ++j)
        types[j].push_back(m.update.getResult(j).getType());
      decays.push_back(m.update.getWeightDecay().convertToDouble());
      locs.push_back(m.update.getLoc());
    }
    SmallVector<Type> resultTypes;
    for (auto &t : types)
      resultTypes.append(t);
    auto multi = b.create<MultiAdamWUpdateOp>(
        b.getFusedLoc(locs), resultTypes, params, grads, ms, vs, last.getLr(),
        last.getStep(), scale, last.getBeta1Attr(), last.getBeta2Attr(),
        last.getEpsilonAttr(), b.getDenseF64ArrayAttr(decays));
    for (auto [k, m] : llvm::enumerate(members)) {
      m.update.getNewParam().replaceAllUsesWith(multi.getNewParam(k));
      m.update.getNewM().replaceAllUsesWith(multi.getNewM(k));
      m.update.getNewV().replaceAllUsesWith(multi.getNewV(k));
      m.update.erase();
      if (m.absorbed)
        m.absorbed.erase();
    }
  }
};

} // namespace
