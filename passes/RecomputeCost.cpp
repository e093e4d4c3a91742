//===- RecomputeCost.cpp - Modelled time of recomputed forward ops --------===//
//
// What kernel formation and fusion make of a set S of recomputed ops, and
// what each piece costs (docs/memory.md, "The order"):
//
// - a matmul: its FLOPs at the GEMM rate (or its bytes, if more), plus a
//   launch; a row-vector bias add, and a tanh GELU behind it on a bf16 or
//   f16 product, ride in its cuBLASLt epilogue (llmc-fuse-epilogues) and
//   cost nothing more;
// - attention: its FLOPs at cuDNN's measured forward rate, plus a launch;
//   the reshapes, and the transposes and splits that only connect q, k, v
//   and the output to attention, are views (llmc-fold-attention-transposes,
//   llmc-fold-qkv-slices);
// - any other op moves bytes: each operand it reads from memory (a kept
//   value, or a matmul's result), none for an operand an elementwise op or
//   norm of S computes in the same kernel (vertical fusion, norm prologues
//   and epilogues), and each result someone must read from memory (a
//   backward reader, or an op of S that cannot take it in registers),
//   plus a launch per kernel that writes. A result whose one backward
//   reader is an elementwise op of its shape is not written: the copy
//   joins that reader's kernel (it is placed right before it) and costs
//   its extra reads only.
//
//===----------------------------------------------------------------------===//
#include "passes/RecomputeCost.h"

#include "dialects/llmc/LlmcOps.h"
#include "passes/FusionUtils.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::recompute;

namespace {

using OpSet = llvm::DenseSet<Operation *>;

uint64_t bytesOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return 0;
  uint64_t bits = t.getElementType().getIntOrFloatBitWidth();
  return static_cast<uint64_t>(t.getNumElements()) * ((bits + 7) / 8);
}

bool isAttention(Operation *op) {
  return isa<AttentionOp, AttentionLseOp, AttentionGradOp>(op);
}

bool isShapeOp(Operation *op) {
  return isa<ReshapeOp, TransposeOp, SplitOp>(op);
}

/// Every reader of every result is attention or such a shape op.
bool feedsAttentionOnly(Operation *op) {
  for (Operation *user : op->getUsers())
    if (!isAttention(user) && !(isShapeOp(user) && feedsAttentionOnly(user)))
      return false;
  return !op->use_empty();
}

/// Reads attention's result, directly or through such shape ops.
bool readsAttention(Operation *op) {
  Operation *def = op->getOperand(0).getDefiningOp();
  return def && (isAttention(def) || (isShapeOp(def) && readsAttention(def)));
}

/// An op whose result another op of the same kernel reads in registers.
bool fusesOut(Operation *op) {
  return fusion::isElementwise(op) || isa<LayerNormOp, RmsNormOp>(op);
}
/// An op that reads an operand computed in its own kernel.
bool fusesIn(Operation *op) {
  return fusion::isElementwise(op) || isa<LayerNormOp>(op);
}

/// In S, in the epilogue of a matmul of S: its bias add, and a GELU of
/// that add or of the product.
bool isEpilogue(Operation *op, const OpSet &set) {
  if (!set.contains(op))
    return false;
  if (isa<AddOp>(op)) {
    for (unsigned i = 0; i < 2; ++i) {
      Operation *def = op->getOperand(i).getDefiningOp();
      auto bias = dyn_cast<RankedTensorType>(op->getOperand(1 - i).getType());
      if (def && isa<MatmulOp>(def) && set.contains(def) && bias &&
          bias.getRank() == 1)
        return true;
    }
    return false;
  }
  if (auto gelu = dyn_cast<GeluOp>(op)) {
    // cuBLASLt's GELU_AUX (passes/MatmulEpilogues.cpp): tanh, on a bf16 or
    // f16 product whose rows are a multiple of 8 long.
    auto type = dyn_cast<RankedTensorType>(gelu->getOperand(0).getType());
    if (gelu.getApproximation() != GeluApproximation::tanh || !type ||
        !type.hasStaticShape() || type.getRank() < 2 ||
        !isa<BFloat16Type, Float16Type>(type.getElementType()) ||
        type.getShape().back() % 8 != 0)
      return false;
    Operation *def = op->getOperand(0).getDefiningOp();
    return def && set.contains(def) &&
           (isa<MatmulOp>(def) || (isa<AddOp>(def) && isEpilogue(def, set)));
  }
  return false;
}

/// The op that computes `v`, through the reshapes of S (aliases).
Operation *producer(Value v, const OpSet &set) {
  Operation *def = v.getDefiningOp();
  while (def && isa<ReshapeOp>(def) && set.contains(def))
    def = def->getOperand(0).getDefiningOp();
  return def;
}

/// The readers of `v` a recomputed copy has: ops of S (through its
/// reshapes) and backward ops (forward readers keep the original).
void readers(Value v, const OpSet &set,
             const llvm::DenseSet<Operation *> &forward,
             llvm::SmallVectorImpl<Operation *> &inSet,
             llvm::SmallVectorImpl<Operation *> &outside) {
  for (Operation *user : v.getUsers()) {
    if (set.contains(user) && isa<ReshapeOp>(user))
      readers(user->getResult(0), set, forward, inSet, outside);
    else if (set.contains(user))
      inSet.push_back(user);
    else if (!forward.contains(user))
      outside.push_back(user);
  }
}

double matmulSeconds(MatmulOp mm) {
  auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
  auto out = cast<RankedTensorType>(mm.getResult().getType());
  int64_t k = lhs.getDimSize(lhs.getRank() - (mm.getTransposeLhs() ? 2 : 1));
  double flops = 2.0 * out.getNumElements() * k;
  double bytes = static_cast<double>(bytesOf(mm.getLhs()) +
                                     bytesOf(mm.getRhs()) +
                                     bytesOf(mm.getResult()));
  return std::max(flops / kMatmulFlopsPerSecond, bytes / kBytesPerSecond);
}

double attentionSeconds(Operation *op) {
  auto q = cast<RankedTensorType>(op->getOperand(0).getType());
  auto k = cast<RankedTensorType>(op->getOperand(1).getType());
  bool seqMajor = op->hasAttr("seq_major");
  int64_t keys = k.getDimSize(seqMajor ? 1 : 2);
  double flops = 4.0 * q.getNumElements() * keys;
  if (op->hasAttr("causal"))
    flops /= 2;
  return flops / kAttentionFlopsPerSecond;
}

} // namespace

bool mlir::llmc::recompute::isView(Operation *op) {
  if (isa<ReshapeOp>(op))
    return true;
  return isa<TransposeOp, SplitOp>(op) &&
         (feedsAttentionOnly(op) || readsAttention(op));
}

double CostModel::local(Operation *op, const OpSet &set) const {
  if (auto mm = dyn_cast<MatmulOp>(op))
    return matmulSeconds(mm) + kLaunchSeconds;
  if (isa<AttentionOp, AttentionLseOp>(op))
    return attentionSeconds(op) + kLaunchSeconds;
  if (isView(op) || isEpilogue(op, set))
    return 0;
  double bytes = 0;
  llvm::SmallVector<Value> seen;
  for (Value v : op->getOperands()) {
    if (llvm::is_contained(seen, v))
      continue;
    seen.push_back(v);
    Operation *def = producer(v, set);
    if (def && set.contains(def) && fusesOut(def) && !isEpilogue(def, set) &&
        fusesIn(op))
      continue; // computed in this kernel
    uint64_t read = bytesOf(v);
    if (isa<GatherOp>(op)) // an embedding lookup reads its rows only
      read = std::min(read, bytesOf(op->getResult(0)));
    bytes += static_cast<double>(read);
  }
  bool writes = false;
  for (Value r : op->getResults()) {
    llvm::SmallVector<Operation *> inSet, outside;
    readers(r, set, forward, inSet, outside);
    bool write = llvm::any_of(inSet, [&](Operation *user) {
      return !(fusesOut(op) && fusesIn(user));
    });
    // One backward elementwise reader of the same shape takes the copy
    // into its own kernel (vertical fusion): no write.
    bool joins = outside.size() == 1 && fusesOut(op) &&
                 fusion::isElementwise(outside.front()) &&
                 outside.front()->getResult(0).getType() == r.getType();
    if (!outside.empty() && !joins)
      write = true;
    if (write) {
      bytes += static_cast<double>(bytesOf(r));
      writes = true;
    }
  }
  return bytes / kBytesPerSecond + (writes ? kLaunchSeconds : 0);
}

double CostModel::cost(const OpSet &set) const {
  std::vector<Operation *> ops(set.begin(), set.end());
  std::sort(ops.begin(), ops.end(), [&](Operation *x, Operation *y) {
    return position.lookup(x) < position.lookup(y);
  });
  double total = 0;
  for (Operation *op : ops)
    total += local(op, set);
  return total;
}

double CostModel::delta(OpSet &set, llvm::ArrayRef<Operation *> added) const {
  // An op's price reads its neighbours (through reshapes) and, for a GELU
  // epilogue, its producer's producer: three hops cover every op whose
  // price `added` can change.
  OpSet near(added.begin(), added.end());
  llvm::SmallVector<Operation *> frontier(added.begin(), added.end());
  for (int hop = 0; hop < 3; ++hop) {
    llvm::SmallVector<Operation *> next;
    auto visit = [&](Operation *op) {
      if (op && (set.contains(op) || near.contains(op)) &&
          near.insert(op).second)
        next.push_back(op);
    };
    for (Operation *op : frontier) {
      for (Value v : op->getOperands())
        visit(v.getDefiningOp());
      for (Operation *user : op->getUsers())
        visit(user);
    }
    frontier = std::move(next);
  }
  std::vector<Operation *> ops(near.begin(), near.end());
  std::sort(ops.begin(), ops.end(), [&](Operation *x, Operation *y) {
    return position.lookup(x) < position.lookup(y);
  });
  double before = 0, after = 0;
  for (Operation *op : ops)
    if (set.contains(op))
      before += local(op, set);
  for (Operation *op : added)
    set.insert(op);
  for (Operation *op : ops)
    after += local(op, set);
  for (Operation *op : added)
    set.erase(op);
  return after - before;
}
