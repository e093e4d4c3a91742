//===- FusionUtils.cpp - What the fusion passes and codegen agree on ------===//
#include "passes/FusionUtils.h"
#include "passes/MatmulEpilogues.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::llmc::fusion {

llvm::SmallDenseSet<Value> bufferFamily(Value v) {
  while (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape.getInput();
  llvm::SmallDenseSet<Value> family{v};
  SmallVector<Value> work{v};
  while (!work.empty()) {
    Value x = work.pop_back_val();
    for (Operation *user : x.getUsers())
      if (auto reshape = dyn_cast<ReshapeOp>(user))
        if (family.insert(reshape.getResult()).second)
          work.push_back(reshape.getResult());
  }
  return family;
}

bool isElementwise(Operation *op) {
  return isa<NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReciprocalOp, TanhOp,
             ErfOp, SigmoidOp, ReluOp, CosOp, SinOp, SiluOp, GeluOp,
             GeluGradOp, SiluGradOp, IsNanOp, CastOp, AddOp, SubOp, MulOp,
             DivOp, PowOp, MaxOp, MinOp, CompareOp, WhereOp>(op);
}

static unsigned floatWidth(Type t) {
  return isa<Float32Type, BFloat16Type, Float16Type>(t)
             ? t.getIntOrFloatBitWidth()
             : 0;
}

static std::pair<unsigned, unsigned> castWidths(Operation *op) {
  auto cast = dyn_cast_or_null<CastOp>(op);
  if (!cast)
    return {0, 0};
  return {floatWidth(getElementTypeOrSelf(cast.getInput().getType())),
          floatWidth(getElementTypeOrSelf(cast.getResult().getType()))};
}

bool isWideningFloatCast(Operation *op) {
  auto [from, to] = castWidths(op);
  return from == 16 && to == 32;
}

bool isNarrowingFloatCast(Operation *op) {
  auto [from, to] = castWidths(op);
  return from == 32 && to == 16;
}

bool absorbsOperandCast(Operation *op, unsigned i) {
  if (isRowOperand(op, i))
    return true;
  if (auto rms = dyn_cast<RmsNormOp>(op))
    return i == rms.getInputMutable().getOperandNumber();
  if (auto ce = dyn_cast<CrossEntropyOp>(op))
    return i == ce.getLogitsMutable().getOperandNumber();
  if (auto ce = dyn_cast<CrossEntropyGradOp>(op))
    return i == ce.getLogitsMutable().getOperandNumber();
  // Not a reduction, but an elementwise op with a gather (the pair
  // partner): its kernel loads the input through loadAs and computes in
  // f32, so a bf16 projection widened for the f32 RoPE of autocast rides
  // in that load. The tables stay as they are (read per (t, r), shared).
  if (auto rot = dyn_cast<RotaryOp>(op))
    return i == rot.getInputMutable().getOperandNumber();
  return false;
}

bool absorbsResultCast(Operation *op, unsigned i) {
  // The first result of each is the row-wise one its kernel stores
  // through storeAs (y, dx, dlogits); norm-gradient weight sums are not.
  // rotary: its f32 result rounded to bf16 for attention (forward) or for
  // the projection's gradient GEMMs (backward), by the same storeAs.
  return i == 0 && isa<LayerNormOp, RmsNormOp, LayerNormGradOp, RmsNormGradOp,
                       CrossEntropyGradOp, RotaryOp>(op);
}

static bool sameShape(Value a, Value b) {
  auto ta = dyn_cast<RankedTensorType>(a.getType());
  auto tb = dyn_cast<RankedTensorType>(b.getType());
  return ta && tb && ta.getShape() == tb.getShape();
}

SmallVector<SmallVector<Operation *>> segments(KernelOp group) {
  llvm::EquivalenceClasses<Operation *> classes;
  // Ops that read the same outside tensor element for element (of their
  // own result's shape) share an iteration space: one segment, so the
  // kernel loads that tensor once (sibling fusion).
  llvm::DenseMap<Value, Operation *> wholeReader;
  for (Operation &op : group.getGroupOps()) {
    classes.insert(&op);
    for (Value v : op.getOperands()) {
      if (Operation *def = v.getDefiningOp();
          def && def->getParentOp() == group.getOperation()) {
        classes.unionSets(def, &op);
        continue;
      }
      if (op.getNumResults() != 1 || !sameShape(op.getResult(0), v))
        continue;
      auto [it, first] = wholeReader.try_emplace(v, &op);
      if (!first)
        classes.unionSets(it->second, &op);
    }
  }
  SmallVector<SmallVector<Operation *>> out;
  llvm::DenseMap<Operation *, unsigned> index;
  for (Operation &op : group.getGroupOps()) {
    Operation *leader = classes.getLeaderValue(&op);
    auto [it, inserted] = index.try_emplace(leader, out.size());
    if (inserted)
      out.emplace_back();
    out[it->second].push_back(&op);
  }
  return out;
}

/// A reduction and casts only: each a widening cast from outside into one
/// of its absorbable operands, or a narrowing cast of an absorbable result.
static bool isReductionWithCasts(KernelOp group, Operation *r) {
  for (Operation &op : group.getGroupOps()) {
    if (&op == r)
      continue;
    Value in = op.getOperand(0);
    bool prologue = isWideningFloatCast(&op) && op.hasOneUse() &&
                    *op.user_begin() == r &&
                    in.getParentRegion() != &group.getBody() &&
                    absorbsOperandCast(r, op.use_begin()->getOperandNumber());
    bool epilogue = isNarrowingFloatCast(&op) && in.getDefiningOp() == r &&
                    in.hasOneUse() &&
                    absorbsResultCast(r, cast<OpResult>(in).getResultNumber());
    if (!prologue && !epilogue)
      return false;
  }
  return true;
}

GroupKind classify(KernelOp group) {
  SmallVector<Operation *> ops;
  for (Operation &op : group.getGroupOps())
    ops.push_back(&op);
  if (group->hasAttr(epilogue::kAttr))
    return GroupKind::MatmulEpilogue;
  if (ops.size() == 1)
    return GroupKind::Single;
  if (ops.size() == 2 && isa<MatmulOp>(ops[0]) && isa<AddOp>(ops[1]))
    return GroupKind::MatmulBias;
  if (llvm::all_of(ops, isElementwise)) {
    for (const auto &segment : segments(group))
      for (Operation *op : segment)
        if (op->getNumResults() != 1 ||
            !sameShape(op->getResult(0), segment.front()->getResult(0)))
          return GroupKind::Unknown;
    return GroupKind::Elementwise;
  }
  if (classifierOps(group).first)
    return GroupKind::Classifier;
  if (Operation *r = reductionOp(group); r && isReductionWithCasts(group, r))
    return GroupKind::Reduction;
  if (rowFusedParts(group))
    return GroupKind::RowFused;
  return GroupKind::Unknown;
}

bool hasWarpRowKernel(Operation *op) {
  if (!isa_and_nonnull<LayerNormOp, RmsNormOp, LayerNormGradOp,
                       RmsNormGradOp>(op))
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  if (!type || !type.hasStaticShape())
    return false;
  int64_t a = 0;
  if (auto ln = dyn_cast<LayerNormOp>(op))
    a = ln.getAxis();
  else if (auto rms = dyn_cast<RmsNormOp>(op))
    a = rms.getAxis();
  else if (auto g = dyn_cast<LayerNormGradOp>(op))
    a = g.getAxis();
  else
    a = cast<RmsNormGradOp>(op).getAxis();
  int64_t rank = type.getRank();
  if (a < 0)
    a += rank;
  if (a < 0 || a >= rank)
    return false;
  int64_t cols = 1;
  for (int64_t d = a; d < rank; ++d)
    cols *= type.getDimSize(d);
  int64_t limit = isa<LayerNormOp, RmsNormOp>(op) ? kMaxWarpNormRow
                                                  : kMaxWarpNormGradRow;
  return cols % 4 == 0 && cols <= limit;
}

bool isRowOperand(Operation *op, unsigned i) {
  if (auto ln = dyn_cast<LayerNormOp>(op))
    return i == ln.getInputMutable().getOperandNumber();
  if (auto rms = dyn_cast<RmsNormOp>(op))
    return i == rms.getInputMutable().getOperandNumber();
  if (auto g = dyn_cast<LayerNormGradOp>(op))
    return i == g.getInputMutable().getOperandNumber() ||
           i == g.getGradMutable().getOperandNumber();
  if (auto g = dyn_cast<RmsNormGradOp>(op))
    return i == g.getInputMutable().getOperandNumber() ||
           i == g.getGradMutable().getOperandNumber();
  return false;
}

/// The first normalized axis of a norm gradient, non-negative.
static int64_t normGradAxis(Operation *norm) {
  int64_t a = 0;
  if (auto g = dyn_cast<LayerNormGradOp>(norm))
    a = g.getAxis();
  else
    a = cast<RmsNormGradOp>(norm).getAxis();
  int64_t rank = cast<RankedTensorType>(norm->getOperand(0).getType()).getRank();
  return a < 0 ? a + rank : a;
}

bool isColumnSum(Operation *norm, ReduceSumOp sum, Value row) {
  if (!isa_and_nonnull<LayerNormGradOp, RmsNormGradOp>(norm) ||
      !hasWarpRowKernel(norm) || sum.getInput() != row || sum.getKeepdims() ||
      !sameShape(row, norm->getResult(0)))
    return false;
  int64_t axis = normGradAxis(norm);
  ArrayRef<int64_t> axes = sum.getAxes();
  if (axis < 1 || static_cast<int64_t>(axes.size()) != axis)
    return false;
  for (auto [i, a] : llvm::enumerate(axes))
    if (a != static_cast<int64_t>(i))
      return false;
  return true;
}

std::optional<RowFusedParts> rowFusedParts(KernelOp group) {
  RowFusedParts parts;
  for (Operation &op : group.getGroupOps()) {
    if (isElementwise(&op)) {
      (parts.norm ? parts.epilogue : parts.prologue).push_back(&op);
      continue;
    }
    if (parts.norm && isa<ReduceSumOp>(op)) {
      parts.colSums.push_back(&op);
      continue;
    }
    if (parts.norm || !hasWarpRowKernel(&op))
      return std::nullopt;
    parts.norm = &op;
  }
  if (!parts.norm || (parts.prologue.empty() && parts.epilogue.empty() &&
                      parts.colSums.empty()))
    return std::nullopt;
  Operation *norm = parts.norm;
  Value row = norm->getOperand(0);
  llvm::SmallPtrSet<Operation *, 8> pro(parts.prologue.begin(),
                                        parts.prologue.end());
  llvm::SmallPtrSet<Operation *, 8> epi(parts.epilogue.begin(),
                                        parts.epilogue.end());
  llvm::SmallPtrSet<Operation *, 4> sums(parts.colSums.begin(),
                                         parts.colSums.end());
  Operation *yield = group.getYield();
  auto inside = [&](Value v) { return v.getParentRegion() == &group.getBody(); };
  // A column sum reads the norm's row result or an epilogue value, and only
  // the yield reads it: the parameter-sum kernel writes it.
  for (Operation *op : parts.colSums) {
    auto sum = cast<ReduceSumOp>(op);
    Operation *def = sum.getInput().getDefiningOp();
    bool rowValue = (def == norm &&
                     cast<OpResult>(sum.getInput()).getResultNumber() == 0) ||
                    epi.count(def) != 0;
    if (!rowValue || !isColumnSum(norm, sum, sum.getInput()) ||
        llvm::any_of(sum->getUsers(),
                     [&](Operation *u) { return u != yield; }))
      return std::nullopt;
  }
  for (Operation *op : llvm::concat<Operation *>(parts.prologue, parts.epilogue)) {
    bool isPro = pro.count(op);
    if (op->getNumResults() != 1 || !sameShape(op->getResult(0), row))
      return std::nullopt;
    for (Value v : op->getOperands()) {
      if (!inside(v)) {
        if (!sameShape(v, row))
          return std::nullopt;
        continue;
      }
      Operation *def = v.getDefiningOp();
      bool ok = isPro ? pro.count(def) != 0
                      : epi.count(def) != 0 ||
                            (def == norm &&
                             cast<OpResult>(v).getResultNumber() == 0);
      if (!ok)
        return std::nullopt;
    }
    for (OpOperand &use : op->getResult(0).getUses()) {
      Operation *user = use.getOwner();
      bool ok = user == yield ||
                (isPro ? pro.count(user) != 0 ||
                             (user == norm &&
                              isRowOperand(norm, use.getOperandNumber()))
                       : epi.count(user) != 0 || sums.count(user) != 0);
      if (!ok)
        return std::nullopt;
    }
  }
  for (OpOperand &operand : norm->getOpOperands())
    if (inside(operand.get()) &&
        !isRowOperand(norm, operand.getOperandNumber()))
      return std::nullopt;
  for (OpResult r : norm->getResults())
    for (Operation *user : r.getUsers())
      if (user != yield && !(r.getResultNumber() == 0 &&
                             (epi.count(user) || sums.count(user))))
        return std::nullopt;
  return parts;
}

const char *kindName(GroupKind kind) {
  switch (kind) {
  case GroupKind::Single:
    return "single";
  case GroupKind::MatmulBias:
    return "matmul+bias";
  case GroupKind::MatmulEpilogue:
    return "matmul+epilogue";
  case GroupKind::Elementwise:
    return "elementwise";
  case GroupKind::Reduction:
    return "reduction+casts";
  case GroupKind::Classifier:
    return "classifier";
  case GroupKind::RowFused:
    return "reduction+elementwise";
  case GroupKind::Unknown:
    break;
  }
  return "unknown";
}

Operation *reductionOp(KernelOp group) {
  Operation *found = nullptr;
  for (Operation &op : group.getGroupOps()) {
    if (isa<CastOp>(op))
      continue;
    if (found)
      return nullptr;
    found = &op;
  }
  if (!found)
    return nullptr;
  for (unsigned i = 0; i < found->getNumOperands(); ++i)
    if (absorbsOperandCast(found, i))
      return found;
  return nullptr;
}

std::pair<CrossEntropyOp, CrossEntropyGradOp> classifierOps(KernelOp group) {
  CrossEntropyOp ce;
  CrossEntropyGradOp grad;
  SmallVector<Operation *> casts;
  for (Operation &op : group.getGroupOps()) {
    if (auto c = dyn_cast<CrossEntropyOp>(op); c && !ce)
      ce = c;
    else if (auto g = dyn_cast<CrossEntropyGradOp>(op); g && !grad)
      grad = g;
    else if (isa<CastOp>(op))
      casts.push_back(&op);
    else
      return {};
  }
  if (!ce || !grad || ce.getLogits() != grad.getLogits() ||
      ce.getTargets() != grad.getTargets() ||
      ce.getReduction() != grad.getReduction() ||
      ce.getReduction() == LossReduction::none ||
      ce.getIgnoreIndex() != grad.getIgnoreIndex() ||
      ce.getClasses() != grad.getClasses() ||
      grad.getGrad().getParentRegion() == &group.getBody() ||
      ce.getTargets().getParentRegion() == &group.getBody())
    return {};
  // At most the logits' widening cast (read by both, from outside) and the
  // gradient's narrowing cast (its only reader).
  for (Operation *c : casts) {
    Value in = c->getOperand(0);
    bool prologue = isWideningFloatCast(c) && c->getResult(0) == ce.getLogits() &&
                    in.getParentRegion() != &group.getBody();
    bool epilogue = isNarrowingFloatCast(c) && in == grad.getResult() &&
                    in.hasOneUse();
    if (!prologue && !epilogue)
      return {};
  }
  if (!ce.getLogits().getDefiningOp<CastOp>() &&
      ce.getLogits().getParentRegion() == &group.getBody())
    return {};
  // The group yields the loss and the gradient (through its cast), in order.
  Operation *yield = group.getYield();
  Value gradOut = grad.getResult();
  if (gradOut.hasOneUse() && isa<CastOp>(*gradOut.user_begin()))
    gradOut = gradOut.user_begin()->getResult(0);
  if (yield->getNumOperands() != 2 || yield->getOperand(0) != ce.getResult() ||
      yield->getOperand(1) != gradOut)
    return {};
  return {ce, grad};
}

SmallVector<Value> groupInputs(KernelOp group) {
  llvm::SetVector<Value> inputs;
  for (Operation &op : group.getGroupOps())
    for (Value v : op.getOperands())
      if (v.getParentRegion() != &group.getBody())
        inputs.insert(v);
  return SmallVector<Value>(inputs.begin(), inputs.end());
}

int64_t overwrittenInput(KernelOp group, unsigned r) {
  auto attr = group->getAttrOfType<DenseI64ArrayAttr>(kOverwritesAttr);
  if (!attr || r >= attr.size())
    return -1;
  return attr[r];
}

std::optional<std::string> verticalBlocker(KernelOp producer,
                                           KernelOp consumer, Value value) {
  if (producer->getBlock() != consumer->getBlock())
    return std::string("the groups are in different blocks");
  if (classify(producer) != GroupKind::Elementwise &&
      classify(producer) != GroupKind::Single)
    return std::string("the producer is not elementwise");
  for (Operation &op : producer.getGroupOps())
    if (!isElementwise(&op))
      return "the producer's " + op.getName().getStringRef().str() +
             " is not elementwise";
  if (segments(producer).size() != 1 || segments(consumer).size() != 1)
    return std::string("a horizontal group (several segments) takes no more");
  // The consumer's iteration space: every op of it has the result shape.
  Value space = consumer.getGroupOps().begin()->getResult(0);
  if (!sameShape(value, space))
    return std::string("the consumer broadcasts the result (fusing would "
                       "recompute it per element)");
  // Moving the producer's ops down to the consumer: nothing between the two
  // may read the producer's results.
  for (Value r : producer.getResults())
    for (Operation *user : r.getUsers()) {
      Operation *top = user;
      while (top->getBlock() != consumer->getBlock())
        top = top->getParentOp();
      if (top != consumer.getOperation() && top->isBeforeInBlock(consumer))
        return std::string("a group between the two reads the result");
    }
  llvm::SetVector<Value> tensors;
  for (KernelOp g : {producer, consumer}) {
    for (Value v : groupInputs(g))
      if (v.getDefiningOp() != producer.getOperation())
        tensors.insert(v);
    for (Value r : g.getResults())
      tensors.insert(r);
  }
  if (tensors.size() > kMaxKernelTensors)
    return "the fused kernel would read and write more than " +
           std::to_string(kMaxKernelTensors) + " tensors";
  return std::nullopt;
}

Operation *warpNormOf(KernelOp group) {
  GroupKind kind = classify(group);
  Operation *norm = nullptr;
  if (kind == GroupKind::Single)
    norm = &*group.getGroupOps().begin();
  else if (kind == GroupKind::Reduction)
    norm = reductionOp(group);
  else if (kind == GroupKind::RowFused)
    norm = rowFusedParts(group)->norm;
  return hasWarpRowKernel(norm) ? norm : nullptr;
}

/// The producer is one elementwise chain of the row's shape that reads
/// only values of the row's shape (no broadcast: the warp kernel loads
/// every operand at the row's offsets).
static std::optional<std::string> rowChainBlocker(KernelOp group, Value row) {
  GroupKind kind = classify(group);
  bool elementwise = kind == GroupKind::Elementwise ||
                     (kind == GroupKind::Single &&
                      isElementwise(&*group.getGroupOps().begin()));
  if (!elementwise)
    return std::string("the other group is not elementwise");
  if (segments(group).size() != 1)
    return std::string("a horizontal group (several segments) takes no more");
  for (Operation &op : group.getGroupOps())
    if (!sameShape(op.getResult(0), row))
      return std::string("an elementwise op has another shape than the row");
  return std::nullopt;
}

static bool readsOnlyRowShaped(KernelOp group, Value row,
                               Operation *except = nullptr) {
  for (Value v : groupInputs(group))
    if ((!except || v.getDefiningOp() != except) && !sameShape(v, row))
      return false;
  return true;
}

/// What a norm prologue and a norm epilogue both need: `normGroup` holds a
/// norm with a warp row kernel (returned in `norm`), and `chain`, in the
/// same block, is one elementwise chain of the row's shape that reads only
/// row-shaped values, apart from the results of `except` (the norm group,
/// for an epilogue).
static std::optional<std::string> rowFusionBlocker(KernelOp normGroup,
                                                   KernelOp chain,
                                                   Operation *except,
                                                   Operation *&norm) {
  norm = warpNormOf(normGroup);
  if (!norm)
    return std::string("the reduction has no warp row kernel (a layer or "
                       "RMS norm or a norm gradient over rows of 4k "
                       "elements, at most ") +
           std::to_string(kMaxWarpNormRow) + " / " +
           std::to_string(kMaxWarpNormGradRow) + ")";
  if (normGroup->getBlock() != chain->getBlock())
    return std::string("the groups are in different blocks");
  Value row = norm->getOperand(0);
  if (auto why = rowChainBlocker(chain, row))
    return why;
  if (!readsOnlyRowShaped(chain, row, except))
    return std::string("the elementwise group broadcasts a value (the row "
                       "kernel loads every operand at the row's offsets)");
  return std::nullopt;
}

/// The kernel-parameter limit on the merged group.
static std::optional<std::string> tensorLimitBlocker(KernelOp producer,
                                                     KernelOp consumer) {
  if (groupInputs(producer).size() + groupInputs(consumer).size() +
          producer.getNumResults() + consumer.getNumResults() >
      kMaxKernelTensors)
    return "the fused kernel would read and write more than " +
           std::to_string(kMaxKernelTensors) + " tensors";
  return std::nullopt;
}

std::optional<std::string> normPrologueBlocker(KernelOp producer,
                                               KernelOp consumer, Value value) {
  Operation *norm = nullptr;
  if (auto why = rowFusionBlocker(consumer, producer, nullptr, norm))
    return why;
  // Inside the consumer the producer's results may feed only the norm's row
  // operands, directly or through its prologue (ops before the norm).
  for (Value r : producer.getResults())
    for (OpOperand &use : r.getUses()) {
      Operation *user = use.getOwner();
      if (user->getParentOp() != consumer.getOperation())
        continue;
      bool ok = user == norm ? isRowOperand(norm, use.getOperandNumber())
                             : user->isBeforeInBlock(norm) &&
                                   isElementwise(user);
      if (!ok)
        return std::string("the consumer reads the result other than as "
                           "the norm's row operand");
    }
  (void)value;
  for (Value r : producer.getResults())
    for (Operation *user : r.getUsers()) {
      Operation *top = user;
      while (top->getBlock() != consumer->getBlock())
        top = top->getParentOp();
      if (top != consumer.getOperation() && top->isBeforeInBlock(consumer))
        return std::string("a group between the two reads the result");
    }
  return tensorLimitBlocker(producer, consumer);
}

std::optional<std::string> normEpilogueBlocker(KernelOp producer,
                                               KernelOp consumer, Value value) {
  Operation *norm = nullptr;
  if (auto why =
          rowFusionBlocker(producer, consumer, producer.getOperation(), norm))
    return why;
  // What it reads of the norm group: the norm's row result or its
  // epilogue's values, never the parameter gradients.
  Operation *yield = producer.getYield();
  for (Value v : groupInputs(consumer)) {
    if (v.getDefiningOp() != producer.getOperation())
      continue;
    Value inner = yield->getOperand(cast<OpResult>(v).getResultNumber());
    Operation *def = inner.getDefiningOp();
    bool rowResult = (def == norm && cast<OpResult>(inner).getResultNumber() == 0) ||
                     (def && def != norm && isElementwise(def) &&
                      norm->isBeforeInBlock(def));
    if (!rowResult)
      return std::string("the elementwise group reads a result that is not "
                         "the norm's row result");
  }
  (void)value;
  // The merged group takes the norm's place: the consumer's other inputs
  // must exist there.
  for (Value v : groupInputs(consumer)) {
    Operation *def = v.getDefiningOp();
    if (!def || def == producer.getOperation())
      continue;
    while (def->getBlock() != producer->getBlock())
      def = def->getParentOp();
    if (!def->isBeforeInBlock(producer))
      return std::string("the elementwise group reads a value computed after "
                         "the norm");
  }
  return tensorLimitBlocker(producer, consumer);
}

std::optional<std::string> normColumnSumBlocker(KernelOp producer,
                                                ReduceSumOp sum, Value value) {
  Operation *norm = warpNormOf(producer);
  if (!isa_and_nonnull<LayerNormGradOp, RmsNormGradOp>(norm))
    return std::string("only a norm gradient's row kernel sums columns");
  auto host = dyn_cast<KernelOp>(sum->getParentOp());
  if (!host || host->getBlock() != producer->getBlock())
    return std::string("the groups are in different blocks");
  // The sum's group: the sum alone, or a weight gradient with the sum as
  // its cuBLASLt bias-gradient epilogue (which it leaves).
  auto kind = epilogue::of(host);
  bool alone = std::next(host.getGroupOps().begin()) ==
               host.getGroupOps().end();
  bool biasGrad = (kind == epilogue::Kind::BiasGradLhs ||
                   kind == epilogue::Kind::BiasGradRhs) &&
                  host.getNumResults() == 2 &&
                  host.getYield()->getOperand(1) == sum.getResult();
  if (!alone && !biasGrad)
    return std::string("the sum shares its group with other work");
  Value inner =
      producer.getYield()->getOperand(cast<OpResult>(value).getResultNumber());
  Operation *def = inner.getDefiningOp();
  bool rowValue =
      (def == norm && cast<OpResult>(inner).getResultNumber() == 0) ||
      (def && def != norm && isElementwise(def) && norm->isBeforeInBlock(def));
  if (!rowValue)
    return std::string("the sum reads a result that is not a row value of "
                       "the norm gradient");
  if (sum.getKeepdims() || !sameShape(value, inner))
    return std::string("the sum keeps its reduced dims");
  // isColumnSum on the value the kernel computes.
  ArrayRef<int64_t> axes = sum.getAxes();
  int64_t axis = normGradAxis(norm);
  bool leading = static_cast<int64_t>(axes.size()) == axis && axis >= 1;
  for (auto [i, a] : llvm::enumerate(axes))
    leading = leading && a == static_cast<int64_t>(i);
  if (!leading)
    return std::string("the sum is not over every axis before the norm's "
                       "(a column sum of the rows)");
  return std::nullopt;
}

} // namespace mlir::llmc::fusion
