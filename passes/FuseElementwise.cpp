//===- FuseElementwise.cpp - Elementwise chains and casts into fewer groups ===//
//
// Three rewrites of llmc.kernel groups, each switchable (Passes.td) and each
// with its rules and cost model in docs/fusion.md:
//   vertical    a producer group of elementwise ops moves into the
//               elementwise group that reads it (same shape, nothing
//               between the two reads it); what outside still reads is
//               yielded, so it is written once and never recomputed;
//               siblings: a group that reads what an earlier one reads
//               joins it, so the shared input is loaded once; an
//               elementwise op whose operands a later group reads anyway
//               is recomputed there instead of written and read back;
//   reductions  an exact float cast rides in a row reduction's load
//               (widening, copied into every reader) or store (narrowing,
//               the only reader of the result);
//   horizontal  consecutive elementwise groups that do not read one another
//               become one group with a segment each;
//   col-sums    a bias gradient (reduce_sum over the rows) of a norm
//               gradient's row value joins the norm group and is summed in
//               its row kernel, next to dweight and dbias; a weight
//               gradient that had it as a cuBLASLt epilogue (BGRADA/BGRADB,
//               a separate reduction kernel inside cuBLASLt) loses it.
// Every merge goes through mergeGroups: the ops of the merged groups move
// into one new group, in order, which yields every value read outside it.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "passes/FusionUtils.h"
#include "passes/MatmulEpilogues.h"

#include "dialects/llmc/LlmcOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#define DEBUG_TYPE "llmc-fuse-elementwise"

namespace mlir::llmc {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::fusion;

namespace {

/// Merges `groups` (their ops keep this order) into one group placed before
/// `insertBefore`; the caller has checked that every operand is defined
/// there and every outside reader comes after it. Returns the new group.
KernelOp mergeGroups(ArrayRef<KernelOp> groups, Operation *insertBefore) {
  SmallVector<Operation *> ops;
  SmallVector<Location> locs;
  for (KernelOp g : groups) {
    Operation *yield = g.getYield();
    for (auto [k, r] : llvm::enumerate(g.getResults()))
      r.replaceAllUsesWith(yield->getOperand(k));
    for (Operation &op : g.getGroupOps())
      ops.push_back(&op);
    locs.push_back(g.getLoc());
  }
  // The old yields go away with their groups: they read nothing later.
  llvm::SmallPtrSet<Operation *, 16> inside(ops.begin(), ops.end());
  for (KernelOp g : groups)
    inside.insert(g.getYield());
  SmallVector<Value> yielded;
  SmallVector<Type> types;
  for (Operation *op : ops)
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(),
                       [&](Operation *u) { return !inside.count(u); })) {
        yielded.push_back(r);
        types.push_back(r.getType());
      }
  OpBuilder builder(insertBefore);
  MLIRContext *ctx = insertBefore->getContext();
  auto merged = builder.create<KernelOp>(FusedLoc::get(ctx, locs), types,
                                         /*in_place=*/nullptr);
  Block *body = builder.createBlock(&merged.getBody());
  for (Operation *op : ops)
    op->moveBefore(body, body->end());
  builder.setInsertionPointToEnd(body);
  builder.create<YieldOp>(merged.getLoc(), yielded);
  for (auto [k, v] : llvm::enumerate(yielded))
    v.replaceUsesWithIf(merged.getResult(k), [&](OpOperand &use) {
      return !merged->isAncestor(use.getOwner());
    });
  for (KernelOp g : groups)
    g.erase();
  return merged;
}

SmallVector<KernelOp> groupsOf(func::FuncOp func) {
  SmallVector<KernelOp> groups;
  for (Block &block : func.getBody())
    for (Operation &op : block)
      if (auto g = dyn_cast<KernelOp>(op))
        groups.push_back(g);
  return groups;
}

/// Vertical: in program order, each elementwise group takes its elementwise
/// producers while one fits; a chain a -> b -> c ends in c's group.
void fuseVertical(func::FuncOp func) {
  for (KernelOp group : groupsOf(func)) {
    if (classify(group) != GroupKind::Elementwise &&
        !(classify(group) == GroupKind::Single &&
          isElementwise(&*group.getGroupOps().begin())))
      continue;
    for (bool merged = true; merged;) {
      merged = false;
      for (Value v : groupInputs(group)) {
        auto producer = v.getDefiningOp<KernelOp>();
        if (!producer || verticalBlocker(producer, group, v))
          continue;
        group = mergeGroups({producer, group}, group);
        merged = true;
        break;
      }
    }
  }
}

bool isElementwiseGroup(KernelOp group) {
  GroupKind kind = classify(group);
  return kind == GroupKind::Elementwise ||
         (kind == GroupKind::Single &&
          isElementwise(&*group.getGroupOps().begin()));
}

bool mayWriteInPlace(KernelOp group, func::FuncOp func);

/// Whether every op of `group` that reads `v` computes a result of v's
/// shape (v is read element for element, not broadcast).
bool readsWhole(KernelOp group, Value v) {
  auto shapeOf = [](Value x) {
    return cast<RankedTensorType>(x.getType()).getShape();
  };
  for (Operation &op : group.getGroupOps())
    if (llvm::is_contained(op.getOperands(), v) &&
        (op.getNumResults() != 1 ||
         !isa<RankedTensorType>(op.getResult(0).getType()) ||
         shapeOf(op.getResult(0)) != shapeOf(v)))
      return false;
  return true;
}

int64_t tensorBytes(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return 0;
  int64_t bits = t.getElementType().isIntOrFloat()
                     ? t.getElementType().getIntOrFloatBitWidth()
                     : 0;
  return t.getNumElements() * std::max<int64_t>(bits / 8, 1);
}

/// Whether moving `b` up to `a` makes more bytes live between the two:
/// b's results then live from a's place on, while each input of b whose
/// every other reader is at or before `a` dies there instead of at b. For
/// SwiGLU's backward the inputs that die earlier (dy, up, gate) outweigh
/// d_gate; a merge that would raise the peak the memory planner and
/// rematerialization work against is not made.
/// A group holding a copy that llmc-rematerialize recomputes: that pass
/// chose its copies by the planned peak of levels of the fused plan, and a
/// sibling moved up to a copy shifts which level fits a budget (gpt2-tiny
/// at 43 MiB then also recomputed two attentions for the same peak).
/// Siblings leave such groups where they are.
bool holdsRecomputed(KernelOp group) {
  return llvm::any_of(group.getGroupOps(), [](Operation &op) {
    return op.hasAttr("llmc.recomputed");
  });
}

bool growsLiveBytes(KernelOp a, KernelOp b, ArrayRef<Value> inputs) {
  int64_t added = 0, freed = 0;
  for (Value r : b.getResults())
    added += tensorBytes(r);
  Block *block = a->getBlock();
  for (Value in : inputs) {
    bool diesAtA = llvm::all_of(in.getUsers(), [&](Operation *user) {
      Operation *top = block->findAncestorOpInBlock(*user);
      return top == b.getOperation() ||
             (top && !isa<func::ReturnOp>(top) &&
              (top == a.getOperation() || top->isBeforeInBlock(a)));
    });
    if (diesAtA && !isa<BlockArgument>(in))
      freed += tensorBytes(in);
  }
  return added > freed;
}

/// Siblings (under the vertical switch): a later elementwise group `b`
/// that reads a tensor `v` which an earlier elementwise group `a` reads
/// too, both element for element, joins `a` at a's place when every input
/// of b exists there and b reads nothing a computes. The two become one
/// segment (FusionUtils `segments`: a shared whole input joins them), so
/// v is loaded once: SwiGLU's backward, `d_up = dy * silu(gate)` and
/// `d_gate = silu_grad(gate, dy * up)`, reads dy once instead of twice.
/// b's results are then live from a's place on: the move is made only
/// when the inputs of b that die at a instead weigh at least as much.
void fuseSiblings(func::FuncOp func) {
  for (KernelOp b : groupsOf(func)) {
    if (!isElementwiseGroup(b) || mayWriteInPlace(b, func) ||
        holdsRecomputed(b) || segments(b).size() != 1)
      continue;
    SmallVector<Value> inputs = groupInputs(b);
    KernelOp partner;
    for (Value v : inputs) {
      if (!isa<RankedTensorType>(v.getType()) || !readsWhole(b, v))
        continue;
      for (Operation *user : v.getUsers()) {
        auto a = dyn_cast<KernelOp>(user->getParentOp());
        if (!a || a == b || a->getBlock() != b->getBlock() ||
            !a->isBeforeInBlock(b) || !isElementwiseGroup(a) ||
            mayWriteInPlace(a, func) || holdsRecomputed(a) ||
            segments(a).size() != 1 ||
            !readsWhole(a, v))
          continue;
        bool available = llvm::all_of(inputs, [&](Value in) {
          Operation *def = in.getDefiningOp();
          return !def || (def->getBlock() == a->getBlock() &&
                          def->isBeforeInBlock(a));
        });
        unsigned tensors = groupInputs(a).size() + inputs.size() +
                           a.getNumResults() + b.getNumResults();
        if (available && tensors <= kMaxKernelTensors &&
            !growsLiveBytes(a, b, inputs)) {
          partner = a;
          break;
        }
      }
      if (partner)
        break;
    }
    if (partner)
      mergeGroups({partner, b}, partner);
  }
}

/// Recomputation (under the vertical switch): an elementwise group `c` that
/// reads `s`, the result of an elementwise op of another elementwise group
/// `p`, computes s itself when every operand of that op is a tensor of s's
/// shape that c reads anyway, element for element: c loads no byte more,
/// and p no longer writes s when nothing else reads it. SwiGLU: the
/// forward's silu(gate), kept for the backward's d_up = dy * silu(gate), is
/// recomputed in the backward kernel, which reads gate for silu_grad (2 x
/// 92 MB a layer at Llama 1B's shape, and those 92 MB no longer live from
/// the forward to the backward). Exact: the copy computes in the same
/// types, and a fused kernel keeps each value in its storage type, rounded
/// where the one-op kernel stored it.
void recomputeCheapOperands(func::FuncOp func) {
  auto sameShape = [](Value a, Value b) {
    auto ta = dyn_cast<RankedTensorType>(a.getType());
    auto tb = dyn_cast<RankedTensorType>(b.getType());
    return ta && tb && ta.getShape() == tb.getShape();
  };
  for (KernelOp c : groupsOf(func)) {
    if (!isElementwiseGroup(c) || holdsRecomputed(c))
      continue;
    SmallVector<Value> inputs = groupInputs(c);
    llvm::SetVector<Operation *> shrunk;
    for (Value s : inputs) {
      auto p = s.getDefiningOp<KernelOp>();
      if (!p || !isElementwiseGroup(p) || holdsRecomputed(p) ||
          !readsWhole(c, s))
        continue;
      Value inner =
          p.getYield()->getOperand(cast<OpResult>(s).getResultNumber());
      Operation *op = inner.getDefiningOp();
      if (!op || op->getNumResults() != 1 || op->getNumOperands() == 0 ||
          !isElementwise(op))
        continue;
      bool readAnyway = llvm::all_of(op->getOperands(), [&](Value x) {
        return x.getParentRegion() != &p.getBody() && sameShape(x, s) &&
               llvm::is_contained(inputs, x) && readsWhole(c, x);
      });
      if (!readAnyway)
        continue;
      OpBuilder builder(&c.getBody().front(), c.getBody().front().begin());
      Operation *copy = builder.clone(*op);
      s.replaceUsesWithIf(copy->getResult(0), [&](OpOperand &use) {
        return c->isAncestor(use.getOwner());
      });
      if (s.use_empty())
        shrunk.insert(p);
    }
    // A producer yields only what is still read outside it (mergeGroups of
    // the one group); one that nothing reads any more goes.
    for (Operation *op : shrunk) {
      auto p = cast<KernelOp>(op);
      if (p->use_empty())
        p.erase();
      else
        mergeGroups({p}, p);
    }
  }
}

/// The one-op group of a float cast, or null.
CastOp soleCast(KernelOp group) {
  auto ops = group.getGroupOps();
  if (std::next(ops.begin()) != ops.end())
    return nullptr;
  return dyn_cast<CastOp>(*ops.begin());
}

/// The group around `op` when it holds a reduction that takes casts.
KernelOp reductionGroupOf(Operation *op) {
  auto group = dyn_cast_or_null<KernelOp>(op->getParentOp());
  if (!group)
    return nullptr;
  GroupKind kind = classify(group);
  if (kind != GroupKind::Single && kind != GroupKind::Reduction)
    return nullptr;
  return reductionOp(group) == op ? group : nullptr;
}

/// A widening cast whose every reader loads it as a reduction's absorbable
/// operand: a copy of the cast goes into each reader's group (a load of the
/// narrow value, exact), and the cast's own group goes away.
bool foldWidening(KernelOp castGroup, CastOp cast) {
  Value out = castGroup.getResult(0);
  if (out.use_empty())
    return false;
  for (OpOperand &use : out.getUses())
    if (!reductionGroupOf(use.getOwner()) ||
        !absorbsOperandCast(use.getOwner(), use.getOperandNumber()))
      return false;
  for (OpOperand &use : llvm::make_early_inc_range(out.getUses())) {
    Operation *reader = use.getOwner();
    OpBuilder builder(reader);
    Operation *copy = builder.clone(*cast);
    use.set(copy->getResult(0));
  }
  castGroup.erase();
  return true;
}

/// A narrowing cast that is the only reader of a reduction's absorbable
/// result joins the reduction's group (one rounding at its store).
bool foldNarrowing(KernelOp castGroup, CastOp cast) {
  auto in = dyn_cast<OpResult>(cast.getInput());
  auto producer = in ? dyn_cast<KernelOp>(in.getOwner()) : nullptr;
  if (!producer || !in.hasOneUse())
    return false;
  auto inner = dyn_cast<OpResult>(
      producer.getYield()->getOperand(in.getResultNumber()));
  if (!inner || reductionGroupOf(inner.getOwner()) != producer ||
      !absorbsResultCast(inner.getOwner(), inner.getResultNumber()))
    return false;
  // At the producer's place: the cast reads nothing else, while the
  // producer's other results may have readers before the cast's group.
  mergeGroups({producer, castGroup}, producer);
  return true;
}

/// cast(reshape(y)) => reshape(cast(y)) for a narrowing cast, when nothing
/// else reads the reshape: the cast then reads its producer's group result
/// directly (an ONNX view between a layer norm and its matmul's input cast).
/// A reshape is an alias of its operand's buffer, and a cast maps element i
/// to element i, so both orders write the same bytes.
KernelOp castBeforeReshape(KernelOp group, CastOp cast) {
  auto reshape = cast.getInput().getDefiningOp<ReshapeOp>();
  if (!reshape || !reshape->hasOneUse() ||
      !reshape.getInput().getDefiningOp<KernelOp>())
    return group;
  Value source = reshape.getInput();
  auto sourceType = llvm::cast<RankedTensorType>(source.getType());
  auto castType = llvm::cast<RankedTensorType>(cast.getType());
  auto narrowType = RankedTensorType::get(sourceType.getShape(),
                                          castType.getElementType());
  OpBuilder builder(group);
  auto moved = builder.create<KernelOp>(group.getLoc(), TypeRange{narrowType},
                                        /*in_place=*/nullptr);
  Block *body = builder.createBlock(&moved.getBody());
  cast->moveBefore(body, body->end());
  cast->setOperand(0, source);
  cast.getResult().setType(narrowType);
  builder.setInsertionPointToEnd(body);
  builder.create<YieldOp>(cast.getLoc(), cast.getResult());
  builder.setInsertionPointAfter(moved);
  auto back = builder.create<ReshapeOp>(reshape.getLoc(), castType,
                                        moved.getResult(0));
  group.getResult(0).replaceAllUsesWith(back.getResult());
  group.erase();
  reshape.erase();
  return moved;
}

/// reshape(cast(x)) => cast(reshape(x)) for a widening cast read only by a
/// reshape whose every reader loads it as a row reduction's absorbable
/// operand: the cast then reads a reshape of its input and foldWidening
/// copies it into those readers (an ONNX view between a dgrad matmul and
/// the layer-norm gradient that reads its widened cotangent). Same bytes
/// as castBeforeReshape: a reshape aliases, a cast maps i to i.
KernelOp castAfterReshape(KernelOp group, CastOp cast) {
  Value out = group.getResult(0);
  if (!out.hasOneUse())
    return group;
  auto reshape = dyn_cast<ReshapeOp>(*out.user_begin());
  if (!reshape || reshape.getResult().use_empty())
    return group;
  for (OpOperand &use : reshape.getResult().getUses())
    if (!reductionGroupOf(use.getOwner()) ||
        !absorbsOperandCast(use.getOwner(), use.getOperandNumber()))
      return group;
  auto wideType = llvm::cast<RankedTensorType>(reshape.getType());
  auto narrowType = RankedTensorType::get(
      wideType.getShape(),
      llvm::cast<RankedTensorType>(cast.getInput().getType())
          .getElementType());
  OpBuilder builder(group);
  auto narrow = builder.create<ReshapeOp>(reshape.getLoc(), narrowType,
                                          cast.getInput());
  auto moved = builder.create<KernelOp>(group.getLoc(), TypeRange{wideType},
                                        /*in_place=*/nullptr);
  Block *body = builder.createBlock(&moved.getBody());
  cast->moveBefore(body, body->end());
  cast->setOperand(0, narrow.getResult());
  cast.getResult().setType(wideType);
  builder.setInsertionPointToEnd(body);
  builder.create<YieldOp>(cast.getLoc(), cast.getResult());
  reshape.getResult().replaceAllUsesWith(moved.getResult(0));
  reshape.erase();
  group.erase();
  return moved;
}

void foldReductionCasts(func::FuncOp func) {
  for (KernelOp group : groupsOf(func)) {
    CastOp cast = soleCast(group);
    if (!cast)
      continue;
    if (isNarrowingFloatCast(cast)) {
      group = castBeforeReshape(group, cast);
      cast = soleCast(group);
    } else if (isWideningFloatCast(cast)) {
      group = castAfterReshape(group, cast);
      cast = soleCast(group);
    }
    if (isWideningFloatCast(cast))
      foldWidening(group, cast);
    else if (isNarrowingFloatCast(cast))
      foldNarrowing(group, cast);
  }
}

/// Norm prologues: a norm group (with a warp row kernel) takes the
/// elementwise group that computes a row operand of its norm (read directly
/// or through a widening cast the reductions rewrite put in the group), at
/// the norm group's place; what others read of it is still written.
void fuseNormPrologues(func::FuncOp func) {
  for (KernelOp group : groupsOf(func)) {
    for (bool merged = true; merged;) {
      merged = false;
      Operation *norm = warpNormOf(group);
      if (!norm)
        break;
      for (OpOperand &operand : norm->getOpOperands()) {
        if (!isRowOperand(norm, operand.getOperandNumber()))
          continue;
        Value v = operand.get();
        if (auto c = v.getDefiningOp<CastOp>();
            c && c->getParentOp() == group.getOperation())
          v = c.getInput();
        auto producer = v.getDefiningOp<KernelOp>();
        if (!producer || normPrologueBlocker(producer, group, v))
          continue;
        group = mergeGroups({producer, group}, group);
        merged = true;
        break;
      }
    }
  }
}

/// Norm epilogues: an elementwise group that reads a norm group's row
/// result (a norm gradient's dx: the residual-gradient add and its cast)
/// joins it, at the norm group's place.
void fuseNormEpilogues(func::FuncOp func) {
  // A walk, not a snapshot: the consumers merged in go away ahead of it.
  for (Block &block : func.getBody())
    for (Operation *op = block.empty() ? nullptr : &block.front(); op;
         op = op->getNextNode()) {
    auto group = dyn_cast<KernelOp>(op);
    if (!group)
      continue;
    for (bool merged = true; merged;) {
      merged = false;
      if (!warpNormOf(group))
        break;
      for (Value r : group.getResults()) {
        for (Operation *user : r.getUsers()) {
          auto consumer = dyn_cast<KernelOp>(user->getParentOp());
          if (!consumer || consumer == group ||
              normEpilogueBlocker(group, consumer, r))
            continue;
          group = mergeGroups({group, consumer}, group);
          merged = true;
          break;
        }
        if (merged)
          break;
      }
    }
    op = group.getOperation();
  }
}

/// `host`, a weight-gradient group with its bias-gradient epilogue `sum`,
/// becomes the plain matmul group and a group of the sum alone (after it:
/// the caller moves it away at once).
KernelOp splitBiasGrad(KernelOp host, ReduceSumOp sum) {
  Operation *matmul = &*host.getGroupOps().begin();
  OpBuilder builder(host);
  MLIRContext *ctx = host->getContext();
  auto plain = builder.create<KernelOp>(host.getLoc(),
                                        TypeRange{host.getResult(0).getType()},
                                        /*in_place=*/nullptr);
  auto alone = builder.create<KernelOp>(host.getLoc(),
                                        TypeRange{sum.getType()},
                                        /*in_place=*/nullptr);
  for (auto [g, op] : {std::pair<KernelOp, Operation *>{plain, matmul},
                       {alone, sum.getOperation()}}) {
    Block *body = builder.createBlock(&g.getBody());
    op->moveBefore(body, body->end());
    builder.setInsertionPointToEnd(body);
    builder.create<YieldOp>(host.getLoc(), op->getResult(0));
  }
  (void)ctx;
  host.getResult(0).replaceAllUsesWith(plain.getResult(0));
  host.getResult(1).replaceAllUsesWith(alone.getResult(0));
  host.erase();
  return alone;
}

/// A reduce_sum of a [rows, n] view of `r` (ONNX exports sum the bias
/// gradient of a [B, T, n] cotangent through the view their weight gradient
/// reads), over the view's merged leading axis, that the norm group could
/// take reading `r` itself: rewritten to sum `r` over its leading axes (the
/// same sum of the same elements) and returned; otherwise left as it is.
ReduceSumOp viewedColumnSum(KernelOp group, Operation *user, Value r) {
  auto view = dyn_cast<ReshapeOp>(user);
  auto rType = dyn_cast<RankedTensorType>(r.getType());
  if (!view || !rType || !view.getType().hasStaticShape() ||
      view.getType().getRank() != 2 || rType.getRank() < 2 ||
      view.getType().getShape().back() != rType.getShape().back())
    return nullptr;
  for (Operation *reader : view->getUsers()) {
    auto sum = dyn_cast<ReduceSumOp>(reader);
    if (!sum || sum.getKeepdims() || sum.getAxes() != ArrayRef<int64_t>{0})
      continue;
    SmallVector<int64_t> leading;
    for (int64_t d = 0; d + 1 < rType.getRank(); ++d)
      leading.push_back(d);
    DenseI64ArrayAttr old = sum.getAxesAttr();
    sum->setOperand(0, r);
    sum.setAxes(leading);
    if (!normColumnSumBlocker(group, sum, r))
      return sum;
    sum->setOperand(0, view.getResult());
    sum.setAxesAttr(old);
  }
  return nullptr;
}

/// Column sums: a reduce_sum over the rows of a norm gradient group's row
/// value (dx, or the residual gradient its epilogue computes) moves into
/// that group, at its place; the readers of the sum (the optimizer) all
/// come after the sum's old group, which came after the norm group.
void fuseNormColumnSums(func::FuncOp func) {
  // A walk, not a snapshot: the sums' groups merged in go away ahead of it.
  for (Block &block : func.getBody())
    for (Operation *op = block.empty() ? nullptr : &block.front(); op;
         op = op->getNextNode()) {
    auto group = dyn_cast<KernelOp>(op);
    if (!group)
      continue;
    for (bool merged = true; merged;) {
      merged = false;
      for (Value r : group.getResults()) {
        // A copy: viewedColumnSum adds a use of r.
        SmallVector<Operation *> users(r.getUsers());
        for (Operation *user : users) {
          auto sum = dyn_cast<ReduceSumOp>(user);
          if (!sum)
            sum = viewedColumnSum(group, user, r);
          if (!sum || normColumnSumBlocker(group, sum, r))
            continue;
          auto host = cast<KernelOp>(sum->getParentOp());
          if (epilogue::of(host))
            host = splitBiasGrad(host, sum);
          group = mergeGroups({group, host}, group);
          merged = true;
          break;
        }
        if (merged)
          break;
      }
    }
    op = group.getOperation();
  }
}

/// A result of `group` is returned as the next value of an argument
/// (`llmc.next`): llmc-mark-in-place may then write it into the argument's
/// buffer, which a sibling's ops could still be reading from other threads.
bool mayWriteInPlace(KernelOp group, func::FuncOp func) {
  for (OpOperand &use : group->getUses())
    if (isa<func::ReturnOp>(use.getOwner()) &&
        func.getResultAttr(use.getOperandNumber(), "llmc.next"))
      return true;
  return false;
}

/// The arguments `group`'s results are returned as the next values of
/// (`llmc.next`): llmc-mark-in-place may write those results into the
/// arguments' buffers, which another segment of a horizontal group could
/// still be reading from other threads. Such a group joins a run only when
/// no other member reads those arguments (nor any reshape of them), and a
/// later member only when it reads none of them.
llvm::SmallDenseSet<Value> inPlaceTargets(KernelOp group, func::FuncOp func) {
  llvm::SmallDenseSet<Value> targets;
  for (OpOperand &use : group->getUses())
    if (isa<func::ReturnOp>(use.getOwner()))
      if (auto next = func.getResultAttrOfType<IntegerAttr>(
              use.getOperandNumber(), "llmc.next");
          next && next.getInt() >= 0 &&
          next.getInt() < func.getNumArguments()) {
        llvm::SmallDenseSet<Value> family =
            bufferFamily(func.getArgument(next.getInt()));
        targets.insert(family.begin(), family.end());
      }
  return targets;
}

/// Horizontal: runs of adjacent elementwise groups, none reading another of
/// the run, become one group in the place of the run's last group (every
/// operand of the run is defined there; nothing in between reads the run).
void fuseHorizontal(func::FuncOp func) {
  for (Block &block : func.getBody()) {
    SmallVector<KernelOp> run;
    llvm::SmallPtrSet<Operation *, 16> runOps;
    llvm::SmallPtrSet<Value, 16> runReads, runTargets;
    unsigned tensors = 0, segmentCount = 0;
    auto flush = [&] {
      if (run.size() > 1)
        mergeGroups(run, run.back());
      run.clear();
      runOps.clear();
      runReads.clear();
      runTargets.clear();
      tensors = segmentCount = 0;
    };
    for (Operation &op : llvm::make_early_inc_range(block)) {
      auto group = dyn_cast<KernelOp>(op);
      GroupKind kind = group ? classify(group) : GroupKind::Unknown;
      bool elementwise =
          kind == GroupKind::Elementwise ||
          (kind == GroupKind::Single &&
           isElementwise(&*group.getGroupOps().begin()));
      if (!elementwise) {
        // reshape and constant launch nothing: they do not end a run
        // unless they read it (the moved ops would then follow them).
        bool readsRun = llvm::any_of(op.getOperands(), [&](Value v) {
          return v.getDefiningOp() && runOps.count(v.getDefiningOp());
        });
        if (!isa<ReshapeOp, ConstantOp>(op) || readsRun)
          flush();
        continue;
      }
      SmallVector<Value> inputs = groupInputs(group);
      llvm::SmallDenseSet<Value> targets = inPlaceTargets(group, func);
      bool readsRun = llvm::any_of(inputs, [&](Value v) {
        return v.getDefiningOp() && runOps.count(v.getDefiningOp());
      });
      bool overwrites =
          llvm::any_of(inputs, [&](Value v) { return runTargets.count(v); }) ||
          llvm::any_of(targets, [&](Value v) { return runReads.count(v); });
      unsigned groupTensors = inputs.size() + group.getNumResults();
      unsigned groupSegments = segments(group).size();
      if (readsRun || overwrites || tensors + groupTensors > kMaxKernelTensors ||
          segmentCount + groupSegments > kMaxSegments)
        flush();
      run.push_back(group);
      runOps.insert(group.getOperation());
      runReads.insert(inputs.begin(), inputs.end());
      runTargets.insert(targets.begin(), targets.end());
      tensors += groupTensors;
      segmentCount += groupSegments;
    }
    flush();
  }
}

struct FuseElementwisePass
    : public mlir::llmc::impl::FuseElementwisePassBase<FuseElementwisePass> {
  using FuseElementwisePassBase::FuseElementwisePassBase;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (vertical) {
      fuseVertical(func);
      fuseSiblings(func);
      recomputeCheapOperands(func);
    }
    if (reductions)
      foldReductionCasts(func);
    if (normPrologue)
      fuseNormPrologues(func);
    if (normEpilogue)
      fuseNormEpilogues(func);
    if (colSums)
      fuseNormColumnSums(func);
    if (horizontal)
      fuseHorizontal(func);
  }
};

} // namespace
