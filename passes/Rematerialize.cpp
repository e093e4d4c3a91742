//===- Rematerialize.cpp - Recompute activations under a memory budget ----===//
//
// Activation checkpointing as an IR rewrite (docs/memory.md,
// "Rematerialization"), after canonicalize/CSE and before kernel formation.
// For every function that returns a `loss` (or, in gradient accumulation's
// @accumulate_step, the "accum.loss" sum) and has a backward pass:
//
// 1. The forward is the backward slice of the loss in the function body.
//    A candidate is a forward op (not a constant) whose results a
//    non-forward op reads (a saved activation), that the function does not
//    return, and whose saved result outlives the start of the backward
//    (a value only the first backward ops read, like the logits that the
//    loss gradient reads right away, would be recomputed next to itself;
//    a value computed once the backward began, like the chunked
//    classifier's later chunks, is alive over none of it, and one the
//    forward still reads after its first backward reader, like the tied
//    embedding's weight copy there, would be copied beside itself).
// 2. A candidate's closure is the op and, transitively, the forward ops
//    it reads that no non-forward op reads (dead after the forward unless
//    recomputed); a closure of views only (a reshape of a kept value)
//    saves nothing and is dropped. Its class (the report's) is the most
//    expensive op of the closure: 0 elementwise/norm/shape ops, 1
//    attention, 2 matmul. The order is greedy: next the candidate whose
//    recomputation adds the least modelled time (RecomputeCost.h) per
//    byte no longer kept, given those before it; earlier in the forward
//    first among equals (alive longer, so recomputing it lowers the
//    backward's peak more); candidates sharing a matmul or attention op
//    are one unit, priced and taken together.
// 3. Level j of L recomputes the first round(j * N / L) candidates, the
//    cut moved to the end of its unit. With a budget, levels 0, 1, ... are
//    planned on copies of the module until one fits: the shortest fitting
//    prefix of a fixed order, so the planned peak is monotonic in the
//    budget whatever shape the peak has over the levels. None fitting is
//    an error naming the smallest peak found.
// 4. Recomputing a set clones the union of its closures (each op once),
//    in forward order, each before the earliest non-forward reader of it or
//    of a clone that reads it; non-forward readers then read the clones.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/llmc/LlmcOps.h"
#include "passes/RecomputeCost.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#define DEBUG_TYPE "llmc-rematerialize"

namespace mlir::llmc {
#define GEN_PASS_DEF_REMATERIALIZEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

constexpr llvm::StringLiteral kRecomputed = "llmc.recomputed";

uint64_t bytesOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return 0;
  uint64_t bits = t.getElementType().getIntOrFloatBitWidth();
  return static_cast<uint64_t>(t.getNumElements()) * ((bits + 7) / 8);
}

int costClass(Operation *op) {
  if (isa<MatmulOp>(op))
    return 2;
  if (isa<AttentionOp, AttentionLseOp>(op))
    return 1;
  return 0;
}

struct Candidate {
  Operation *op;
  llvm::SmallVector<Operation *> closure; // op and what it alone needs
  int cls = 0;
  int64_t position = 0;
  uint64_t bytes = 0; // of the results a non-forward op reads
  double seconds = 0; // its share of its unit's modelled recompute time
  size_t unit = 0;    // candidates taken together share one (q, k, v)
};

/// Steps 1-2 for one function: its forward ops and ordered candidates.
struct Analysis {
  llvm::DenseSet<Operation *> forward;
  llvm::DenseMap<Operation *, int64_t> position;
  std::vector<Candidate> candidates;
  bool hasBackward = false;
};

bool isForwardOnly(Operation *op, const Analysis &a) {
  for (Operation *user : op->getUsers())
    if (!a.forward.contains(user))
      return false;
  return true;
}

/// Whether score x is below y, beyond the rounding of summing the same
/// prices in another order.
bool lessScore(double x, double y) {
  return x < y - 1e-9 * std::max(std::abs(x), std::abs(y));
}

/// The modelled time of recomputing the first `count` candidates.
double modelledSeconds(const Analysis &a, size_t count) {
  llvm::DenseSet<Operation *> set;
  for (size_t i = 0; i < count; ++i)
    set.insert(a.candidates[i].closure.begin(), a.candidates[i].closure.end());
  return recompute::CostModel(a.forward, a.position).cost(set);
}

/// Step 2's order, greedy: next comes the candidate whose recomputation
/// adds the least modelled time per byte no longer kept, given those
/// before it (so a GELU's pre-activation, once the GELU is recomputed,
/// costs only what its matmul adds over the GELU's own kernel), earlier in
/// the forward first among equals. Candidates whose closures share a
/// matmul or attention op (q, k and v of one projection) are one unit,
/// priced and taken together: alone, each would pay the whole product.
void order(Analysis &a) {
  size_t n = a.candidates.size();
  recompute::CostModel model(a.forward, a.position);
  llvm::DenseMap<Operation *, llvm::SmallVector<size_t>> byHeavy;
  for (size_t i = 0; i < n; ++i)
    for (Operation *op : a.candidates[i].closure)
      if (costClass(op) > 0)
        byHeavy[op].push_back(i);
  std::vector<llvm::SmallVector<size_t>> unitOf(n);
  for (size_t i = 0; i < n; ++i) {
    unitOf[i].push_back(i);
    for (Operation *op : a.candidates[i].closure)
      if (costClass(op) > 0)
        for (size_t j : byHeavy[op])
          if (!llvm::is_contained(unitOf[i], j))
            unitOf[i].push_back(j);
  }
  std::vector<bool> taken(n, false);
  llvm::DenseSet<Operation *> set;
  std::vector<Candidate> sorted;
  while (sorted.size() < n) {
    size_t best = n;
    double bestScore = 0, bestDelta = 0;
    llvm::SmallVector<size_t> bestUnit;
    llvm::SmallVector<Operation *> bestOps;
    for (size_t i = 0; i < n; ++i) {
      if (taken[i])
        continue;
      llvm::SmallVector<size_t> unit;
      llvm::SmallVector<Operation *> ops;
      llvm::DenseSet<Operation *> inOps;
      uint64_t bytes = 0;
      for (size_t j : unitOf[i]) {
        if (taken[j])
          continue;
        unit.push_back(j);
        bytes += a.candidates[j].bytes;
        for (Operation *op : a.candidates[j].closure)
          if (!set.contains(op) && inOps.insert(op).second)
            ops.push_back(op);
      }
      double delta = model.delta(set, ops);
      double score = delta / static_cast<double>(std::max<uint64_t>(bytes, 1));
      if (best == n || lessScore(score, bestScore) ||
          (!lessScore(bestScore, score) &&
           a.candidates[i].position < a.candidates[best].position)) {
        best = i;
        bestScore = score;
        bestDelta = delta;
        bestUnit = std::move(unit);
        bestOps = std::move(ops);
      }
    }
    llvm::sort(bestUnit, [&](size_t x, size_t y) {
      return a.candidates[x].position < a.candidates[y].position;
    });
    uint64_t unitBytes = 0;
    for (size_t j : bestUnit)
      unitBytes += a.candidates[j].bytes;
    size_t unitIndex = sorted.empty() ? 0 : sorted.back().unit + 1;
    for (size_t j : bestUnit) {
      Candidate c = a.candidates[j];
      c.seconds = unitBytes ? bestDelta * static_cast<double>(c.bytes) /
                                  static_cast<double>(unitBytes)
                            : bestDelta / static_cast<double>(bestUnit.size());
      c.unit = unitIndex;
      taken[j] = true;
      sorted.push_back(std::move(c));
    }
    set.insert(bestOps.begin(), bestOps.end());
  }
  a.candidates = std::move(sorted);
}

Analysis analyze(func::FuncOp func) {
  Analysis a;
  Block &body = func.getBody().front();
  int64_t i = 0;
  for (Operation &op : body)
    a.position[&op] = i++;
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // The loss, or in gradient accumulation's @accumulate_step the running
  // sum of the micro-batches' losses it returns into its "accum.loss"
  // state: its slice is the micro-batch's forward, with that one add.
  Value loss;
  for (unsigned r = 0; r < func.getNumResults(); ++r) {
    auto name = func.getResultAttrOfType<StringAttr>(r, "llmc.output");
    auto state = func.getResultAttrOfType<StringAttr>(r, "llmc.state");
    if ((name && name.getValue() == "loss") ||
        (state && state.getValue() == "accum.loss"))
      loss = ret.getOperand(r);
  }
  if (!loss || !loss.getDefiningOp())
    return a;
  llvm::SmallVector<Operation *> work{loss.getDefiningOp()};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (op->getBlock() != &body || !a.forward.insert(op).second)
      continue;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp())
        work.push_back(def);
  }
  llvm::DenseSet<Value> returned(ret.getOperands().begin(),
                                 ret.getOperands().end());
  // The terminator reads returned values; it is not a backward reader.
  auto readAfter = [&](Operation *op) {
    llvm::SmallVector<Operation *> readers;
    for (Operation *user : op->getUsers())
      if (!a.forward.contains(user) && user != ret)
        readers.push_back(user);
    return readers;
  };
  struct Saved {
    Operation *op;
    int64_t first, last, lastForward;
    uint64_t bytes;
  };
  std::vector<Saved> saved;
  for (Operation &op : body) {
    if (!a.forward.contains(&op) || isa<ConstantOp>(op) ||
        llvm::any_of(op.getResults(),
                     [&](Value v) { return returned.contains(v); }))
      continue;
    auto readers = readAfter(&op);
    if (readers.empty())
      continue;
    Saved s{&op, INT64_MAX, 0, 0, 0};
    for (Operation *r : readers) {
      s.first = std::min(s.first, a.position[r]);
      s.last = std::max(s.last, a.position[r]);
    }
    for (Operation *user : op.getUsers())
      if (a.forward.contains(user))
        s.lastForward = std::max(s.lastForward, a.position[user]);
    for (Value v : op.getResults())
      if (llvm::any_of(v.getUsers(),
                       [&](Operation *u) { return !a.forward.contains(u); }))
        s.bytes += bytesOf(v);
    saved.push_back(s);
  }
  a.hasBackward = !saved.empty();
  // The two earliest first readers: the backward's start seen by each value.
  int64_t first0 = INT64_MAX, first1 = INT64_MAX;
  for (const Saved &s : saved) {
    if (s.first < first0) {
      first1 = first0;
      first0 = s.first;
    } else if (s.first < first1) {
      first1 = s.first;
    }
  }
  for (const Saved &s : saved) {
    int64_t others = s.first == first0 ? first1 : first0;
    if (others != INT64_MAX && s.last < others)
      continue; // freed before any other saved value is read
    if (a.position[s.op] > first0)
      continue; // computed once the backward began: alive over none of it
    if (s.lastForward > s.first)
      continue; // read by the forward after the backward reads it (a tied
                // embedding's weight copy in the chunked classifier): a
                // copy would live beside the original
    Candidate c;
    c.op = s.op;
    c.position = a.position[s.op];
    c.bytes = s.bytes;
    llvm::DenseSet<Operation *> seen;
    llvm::SmallVector<Operation *> stack{s.op};
    while (!stack.empty()) {
      Operation *op = stack.pop_back_val();
      if (!seen.insert(op).second)
        continue;
      c.closure.push_back(op);
      c.cls = std::max(c.cls, costClass(op));
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (def && a.forward.contains(def) && !isa<ConstantOp>(def) &&
            isForwardOnly(def, a))
          stack.push_back(def);
      }
    }
    // Views of a kept value (a reshape, attention's folded transposes)
    // keep it alive in their copy: nothing is saved.
    if (llvm::all_of(c.closure, recompute::isView))
      continue;
    a.candidates.push_back(std::move(c));
  }
  order(a);
  return a;
}

/// "1234 bytes (1.18 KiB)": the planner's number and a readable one.
std::string sizeText(uint64_t bytes) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%llu bytes (%.2f MiB)",
                static_cast<unsigned long long>(bytes),
                static_cast<double>(bytes) / (1 << 20));
  return buf;
}

/// The number of candidates level `level` of `levels` recomputes: an even
/// cut of the order, moved to the end of the unit it falls in.
size_t prefixOf(const Analysis &a, int64_t level, int64_t levels) {
  size_t n = a.candidates.size();
  if (levels <= 0 || level <= 0)
    return 0;
  if (level >= levels)
    return n;
  auto k = static_cast<size_t>((static_cast<double>(level) * n) / levels + 0.5);
  while (k > 0 && k < n && a.candidates[k].unit == a.candidates[k - 1].unit)
    ++k;
  return k;
}

/// One level the budget search planned.
struct Tried {
  int64_t level;
  size_t count;
  uint64_t peak;
  double seconds; // modelled
};

/// Step 4: recompute the first `count` candidates of `a` in `func`.
void recompute(func::FuncOp func, const Analysis &a, size_t count) {
  llvm::DenseSet<Operation *> clone;
  for (size_t i = 0; i < count; ++i)
    clone.insert(a.candidates[i].closure.begin(),
                 a.candidates[i].closure.end());
  if (clone.empty())
    return;
  std::vector<Operation *> ops(clone.begin(), clone.end());
  std::sort(ops.begin(), ops.end(), [&](Operation *x, Operation *y) {
    return a.position.lookup(x) < a.position.lookup(y);
  });
  Operation *ret = func.getBody().front().getTerminator();
  // Where each clone goes: before its first non-forward reader, or before
  // a clone that reads it (consumers first, so theirs are known).
  llvm::DenseMap<Operation *, Operation *> before;
  auto earlier = [&](Operation *x, Operation *y) {
    if (!x)
      return y;
    if (!y)
      return x;
    return a.position.lookup(x) <= a.position.lookup(y) ? x : y;
  };
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    Operation *op = *it, *at = nullptr;
    for (Operation *user : op->getUsers()) {
      if (clone.contains(user))
        at = earlier(at, before.lookup(user));
      else if (!a.forward.contains(user) && user != ret)
        at = earlier(at, user);
    }
    before[op] = at;
  }
  IRMapping map;
  llvm::DenseSet<Operation *> clones;
  for (Operation *op : ops) {
    OpBuilder b(before[op]);
    Operation *copy = b.clone(*op, map);
    copy->setAttr(kRecomputed, b.getUnitAttr());
    clones.insert(copy);
  }
  for (Operation *op : ops)
    for (Value v : op->getResults())
      v.replaceUsesWithIf(map.lookup(v), [&](OpOperand &use) {
        Operation *user = use.getOwner();
        return !a.forward.contains(user) && !clones.contains(user) &&
               user != ret;
      });
}

/// What the module's `llmc.recompute` attribute says about one function.
DictionaryAttr describe(func::FuncOp func, const Analysis &a, size_t count,
                        int64_t level, int64_t levels,
                        std::optional<uint64_t> before,
                        std::optional<uint64_t> after, uint64_t budget,
                        double seconds, llvm::ArrayRef<Tried> tried) {
  Builder b(func.getContext());
  auto nanoseconds = [&](double seconds) {
    return b.getI64IntegerAttr(static_cast<int64_t>(seconds * 1e9 + 0.5));
  };
  SmallVector<Attribute> values;
  for (size_t i = 0; i < count; ++i) {
    const Candidate &c = a.candidates[i];
    SmallVector<NamedAttribute> d{
        b.getNamedAttr("op", b.getStringAttr(c.op->getName().getStringRef())),
        b.getNamedAttr("position", b.getI64IntegerAttr(c.position)),
        b.getNamedAttr("bytes", b.getI64IntegerAttr(c.bytes)),
        b.getNamedAttr("class", b.getI64IntegerAttr(c.cls)),
        b.getNamedAttr("ops", b.getI64IntegerAttr(c.closure.size())),
        b.getNamedAttr("modelled_ns", nanoseconds(c.seconds))};
    if (auto name = dyn_cast<NameLoc>(c.op->getLoc()))
      d.push_back(b.getNamedAttr("name", name.getName()));
    values.push_back(b.getDictionaryAttr(d));
  }
  SmallVector<NamedAttribute> d{
      b.getNamedAttr("func", b.getStringAttr(func.getSymName())),
      b.getNamedAttr("candidates", b.getI64IntegerAttr(a.candidates.size())),
      b.getNamedAttr("level", b.getI64IntegerAttr(level)),
      b.getNamedAttr("levels", b.getI64IntegerAttr(levels)),
      b.getNamedAttr("modelled_ns", nanoseconds(seconds)),
      b.getNamedAttr("values", b.getArrayAttr(values))};
  SmallVector<Attribute> levelsTried;
  for (const Tried &t : tried)
    levelsTried.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("level", b.getI64IntegerAttr(t.level)),
         b.getNamedAttr("count", b.getI64IntegerAttr(t.count)),
         b.getNamedAttr("peak", b.getI64IntegerAttr(t.peak)),
         b.getNamedAttr("modelled_ns", nanoseconds(t.seconds))}));
  if (!levelsTried.empty())
    d.push_back(b.getNamedAttr("tried", b.getArrayAttr(levelsTried)));
  if (budget)
    d.push_back(b.getNamedAttr("budget", b.getI64IntegerAttr(budget)));
  if (before)
    d.push_back(b.getNamedAttr("peak_before", b.getI64IntegerAttr(*before)));
  if (after)
    d.push_back(b.getNamedAttr("peak_after", b.getI64IntegerAttr(*after)));
  return b.getDictionaryAttr(d);
}

struct RematerializePass
    : public mlir::llmc::impl::RematerializePassBase<RematerializePass> {
  RematerializePass() = default;
  RematerializePass(const RematerializePassOptions &options)
      : RematerializePassBase(options) {}
  RematerializePass(const RematerializePassOptions &options,
                    PlannedPeakFn peak)
      : RematerializePassBase(options), plannedPeak(std::move(peak)) {}

  /// The peak of `func` with the first `count` candidates recomputed, on a
  /// copy of the module.
  FailureOr<uint64_t> peakWith(func::FuncOp func, size_t count) {
    OwningOpRef<ModuleOp> copy(cast<ModuleOp>(getOperation()->clone()));
    auto f = copy->lookupSymbol<func::FuncOp>(func.getSymName());
    recompute(f, analyze(f), count);
    return plannedPeak(*copy, func.getSymName());
  }

  /// Step 3: the level the budget needs, or failure (emitted).
  FailureOr<int64_t> chooseLevel(func::FuncOp func, const Analysis &a,
                                 int64_t levels, uint64_t &peakBefore,
                                 uint64_t &peakAfter,
                                 std::vector<Tried> &tried) {
    uint64_t smallest = UINT64_MAX;
    int64_t smallestLevel = 0;
    for (int64_t level = 0; level <= levels; ++level) {
      size_t count = prefixOf(a, level, levels);
      // A cut moved to a unit's end can repeat the previous level's prefix,
      // which did not fit: nothing to plan.
      if (!tried.empty() && tried.back().count == count)
        continue;
      auto peak = peakWith(func, count);
      if (failed(peak))
        return failure();
      tried.push_back({level, count, *peak, modelledSeconds(a, count)});
      if (level == 0)
        peakBefore = *peak;
      if (*peak < smallest) {
        smallest = *peak;
        smallestLevel = level;
      }
      if (*peak <= budget) {
        peakAfter = *peak;
        return level;
      }
    }
    return func.emitError()
           << "the memory budget of " << sizeText(budget)
           << " is below the smallest planned peak recomputation reaches: "
           << sizeText(smallest) << ", recomputing "
           << prefixOf(a, smallestLevel, levels) << " of "
           << a.candidates.size() << " saved values of @" << func.getSymName()
           << " (" << sizeText(peakBefore)
           << " without recomputation); raise the budget or lower the batch";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (budget == 0 && levels < 0)
      return;
    if (budget && !plannedPeak) {
      module.emitError() << "llmc-rematerialize: a budget needs the memory "
                            "planner, which only the compiler provides "
                            "(llmc compile --memory-budget); use levels=N";
      return signalPassFailure();
    }
    SmallVector<Attribute> decisions;
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isExternal())
        continue;
      Analysis a = analyze(func);
      if (!a.hasBackward)
        continue;
      int64_t l = std::min<int64_t>(std::max<int64_t>(maxLevels, 1),
                                    a.candidates.size());
      int64_t level = std::min<int64_t>(levels, l);
      std::optional<uint64_t> before, after;
      std::vector<Tried> tried;
      if (levels < 0) {
        uint64_t b = 0, f = 0;
        auto chosen = chooseLevel(func, a, l, b, f, tried);
        if (failed(chosen))
          return signalPassFailure();
        level = *chosen;
        before = b;
        after = f;
      }
      size_t count = prefixOf(a, level, l);
      double seconds = modelledSeconds(a, count); // before the IR changes
      recompute(func, a, count);
      decisions.push_back(describe(func, a, count, level, l, before, after,
                                   budget, seconds, tried));
    }
    module->setAttr("llmc.recompute",
                    ArrayAttr::get(module.getContext(), decisions));
  }

  PlannedPeakFn plannedPeak;
};

} // namespace

std::unique_ptr<Pass>
mlir::llmc::createRematerializePass(const RematerializePassOptions &options,
                                    PlannedPeakFn plannedPeak) {
  return std::make_unique<RematerializePass>(options, std::move(plannedPeak));
}
