//===- ChunkClassifier.cpp - The classifier a chunk of tokens at a time ---===//
//
// The logits of a language model's last matmul are the step's largest
// buffer, alive from the end of the forward to the two products of the
// backward that read their gradient. Computing the logits, the loss, the
// gradient and those two products one chunk of tokens at a time keeps one
// chunk's logits alive instead of all of them; the price is a slice of the
// hidden states per chunk, a concat of the input gradient and a sum of the
// partial weight gradients (docs/memory.md, "The chunked classifier"). The
// pipeline chooses the chunk count from the memory plan (compiler/
// Pipeline.cpp); this pass only applies it.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/llmc/LlmcOps.h"
#include "dialects/llmc/VjpUtils.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseMap.h"

#define DEBUG_TYPE "llmc-chunk-classifier"

namespace mlir::llmc {
#define GEN_PASS_DEF_CHUNKCLASSIFIERPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

/// A product that reads the logits' gradient (or a cast or reshape of it).
struct Reader {
  MatmulOp op;
  unsigned grad = 0; // the operand that is the gradient
  bool rows = false; // the gradient is its lhs: its result rows are tokens
  // else the tokens are the reduction dim (transpose_lhs): the product is a
  // sum over chunks, and the other operand is [tokens, x]
  Value other() { return op->getOperand(1 - grad); }
};

/// The classifier as the training pipeline leaves it.
struct Classifier {
  CrossEntropyOp loss;
  CrossEntropyGradOp grad;
  MatmulOp logits;       // matmul(h, w): the logits before any view
  CastOp widen;          // logits -> the loss's type, or null
  SmallVector<Operation *> forwardViews; // reshapes and casts, in order
  SmallVector<Operation *> gradViews;    // the gradient's casts and reshapes
  SmallVector<Reader> readers;
  int64_t tokens = 0, classes = 0;
};

bool singleUse(Value v) { return v.hasOneUse(); }

/// [..., V] logits and [...] targets (N tokens in all), a view of one
/// matmul, read only by the loss and its gradient; the gradient read only by
/// products whose rows or reduction dim are the tokens.
std::optional<Classifier> match(CrossEntropyOp loss) {
  Classifier c;
  c.loss = loss;
  Value x = loss.getLogits();
  auto xType = dyn_cast<RankedTensorType>(x.getType());
  auto tType = dyn_cast<RankedTensorType>(loss.getTargets().getType());
  if (!xType || xType.getRank() < 2 || !tType ||
      tType.getRank() != xType.getRank() - 1 ||
      loss.getReduction() == LossReduction::none)
    return std::nullopt;
  c.tokens = tType.getNumElements();
  c.classes = xType.getShape().back();
  for (Operation *user : x.getUsers()) {
    if (user == loss.getOperation())
      continue;
    auto g = dyn_cast<CrossEntropyGradOp>(user);
    if (!g || c.grad || g.getTargets() != loss.getTargets() ||
        g.getReduction() != loss.getReduction() ||
        g.getIgnoreIndex() != loss.getIgnoreIndex() ||
        g.getClassesAttr() != loss.getClassesAttr())
      return std::nullopt;
    c.grad = g;
  }
  if (!c.grad)
    return std::nullopt;

  // Back to the matmul through at most one widening cast and reshapes.
  Value v = x;
  while (!v.getDefiningOp<MatmulOp>()) {
    Operation *def = v.getDefiningOp();
    if (!def || (!isa<CastOp>(def) && !isa<ReshapeOp>(def)))
      return std::nullopt;
    if (v != x && !singleUse(v))
      return std::nullopt;
    if (auto cast = dyn_cast<CastOp>(def)) {
      if (c.widen)
        return std::nullopt;
      c.widen = cast;
    }
    c.forwardViews.insert(c.forwardViews.begin(), def);
    v = def->getOperand(0);
  }
  if (v != x && !singleUse(v))
    return std::nullopt;
  c.logits = v.getDefiningOp<MatmulOp>();
  auto rhs = cast<RankedTensorType>(c.logits.getRhs().getType());
  auto lhs = cast<RankedTensorType>(c.logits.getLhs().getType());
  if (c.logits.getTransposeLhs() || rhs.getRank() != 2 ||
      lhs.getNumElements() != c.tokens * lhs.getShape().back())
    return std::nullopt;

  // Forward to the products through casts and reshapes that keep the class
  // dim last (so a chunk of rows is a chunk of tokens in every view).
  SmallVector<Value> views = {c.grad.getResult()};
  for (size_t i = 0; i < views.size(); ++i) {
    for (OpOperand &use : views[i].getUses()) {
      Operation *user = use.getOwner();
      if (isa<CastOp>(user) ||
          (isa<ReshapeOp>(user) &&
           cast<RankedTensorType>(user->getResult(0).getType())
                   .getShape()
                   .back() == c.classes)) {
        c.gradViews.push_back(user);
        views.push_back(user->getResult(0));
        continue;
      }
      auto mm = dyn_cast<MatmulOp>(user);
      if (!mm)
        return std::nullopt;
      unsigned grad = use.getOperandNumber();
      auto other =
          cast<RankedTensorType>(mm->getOperand(1 - grad).getType());
      // dh = g w: the rows of g are the rows of dh.
      bool rows = grad == 0 && !mm.getTransposeLhs() && other.getRank() == 2;
      // dw = a^T g or g^T a: the tokens are the reduction dim.
      bool reduce = mm.getTransposeLhs() && !mm.getTransposeRhs() &&
                    other.getRank() == 2 &&
                    other.getDimSize(0) == c.tokens &&
                    cast<RankedTensorType>(views[i].getType()).getRank() == 2;
      if (!rows && !reduce)
        return std::nullopt;
      c.readers.push_back({mm, grad, rows});
    }
  }
  if (c.readers.empty())
    return std::nullopt;
  // One block: the chunks go at the last reader, after everything they read.
  Block *block = loss->getBlock();
  for (Operation *op : {c.grad.getOperation(), c.logits.getOperation()})
    if (op->getBlock() != block)
      return std::nullopt;
  for (const Reader &r : c.readers)
    if (r.op->getBlock() != block)
      return std::nullopt;
  // Use lists have no order; the chunks emit the readers in program order.
  llvm::sort(c.readers, [](const Reader &a, const Reader &b) {
    return a.op->isBeforeInBlock(b.op);
  });
  return c;
}

/// The last reader: every value the chunks read exists there.
Operation *insertionPoint(const Classifier &c) {
  Operation *last = c.readers.front().op;
  for (const Reader &r : c.readers)
    if (last->isBeforeInBlock(r.op))
      last = r.op;
  return last;
}

bool definedBefore(Value v, Operation *at) {
  if (isa<BlockArgument>(v))
    return cast<BlockArgument>(v).getOwner() == at->getBlock();
  Operation *def = v.getDefiningOp();
  return def->getBlock() == at->getBlock() && def->isBeforeInBlock(at);
}

class ChunkClassifierPass
    : public mlir::llmc::impl::ChunkClassifierPassBase<ChunkClassifierPass> {
public:
  using mlir::llmc::impl::ChunkClassifierPassBase<
      ChunkClassifierPass>::ChunkClassifierPassBase;

  void runOnOperation() override {
    if (chunks < 1) {
      getOperation().emitError("llmc-chunk-classifier: chunks must be at "
                               "least 1, got ")
          << static_cast<int64_t>(chunks);
      return signalPassFailure();
    }
    if (chunks == 1)
      return;
    SmallVector<CrossEntropyOp> losses;
    getOperation().walk([&](CrossEntropyOp op) { losses.push_back(op); });
    for (CrossEntropyOp loss : losses) {
      std::optional<Classifier> c = match(loss);
      if (!c)
        continue;
      if (c->tokens % chunks != 0) {
        loss.emitError("llmc-chunk-classifier: ")
            << static_cast<int64_t>(chunks) << " chunks do not divide the " << c->tokens
            << " tokens of the classifier";
        return signalPassFailure();
      }
      if (failed(rewrite(*c)))
        return signalPassFailure();
    }
  }

private:
  LogicalResult rewrite(Classifier &c);
};

/// `v` before any reshape.
Value beforeReshapes(Value v) {
  while (auto r = v.getDefiningOp<ReshapeOp>())
    v = r.getInput();
  return v;
}

/// Rows [start, start + count) of a rank-2 value.
Value rowSlice(OpBuilder &b, Location loc, Value x, int64_t start,
               int64_t count) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> starts = {start, 0};
  SmallVector<int64_t> limits = {start + count, type.getDimSize(1)};
  SmallVector<int64_t> strides = {1, 1};
  return b.create<SliceOp>(loc, x, b.getDenseI64ArrayAttr(starts),
                           b.getDenseI64ArrayAttr(limits),
                           b.getDenseI64ArrayAttr(strides));
}

/// Elements [start, start + count) of a rank-1 value.
Value elementSlice(OpBuilder &b, Location loc, Value x, int64_t start,
                   int64_t count) {
  return b.create<SliceOp>(loc, x, b.getDenseI64ArrayAttr({start}),
                           b.getDenseI64ArrayAttr({start + count}),
                           b.getDenseI64ArrayAttr({1}));
}

LogicalResult ChunkClassifierPass::rewrite(Classifier &c) {
  Operation *at = insertionPoint(c);
  SmallVector<Value> reads = {c.logits.getLhs(), c.logits.getRhs(),
                              c.loss.getTargets(), c.grad.getGrad()};
  for (Reader &r : c.readers)
    reads.push_back(r.other());
  for (Value v : reads)
    if (!definedBefore(v, at))
      return success(); // not this shape of step: leave it whole

  Block *block = at->getBlock();
  Location errorLoc = c.loss.getLoc();
  OpBuilder b(at);
  Location loc = NameLoc::get(b.getStringAttr("chunked_classifier"),
                              c.loss.getLoc());
  vjp::GradBuilder gb(b, loc);
  int64_t k = chunks, n = c.tokens / k;
  Value lossValue = c.loss.getResult();
  auto lossType = cast<RankedTensorType>(lossValue.getType());
  bool mean = c.loss.getReduction() == LossReduction::mean;
  auto sum = LossReductionAttr::get(b.getContext(), LossReduction::sum);

  // The normalizer counts the whole batch's tokens, not a chunk's.
  Value targets = gb.reshape(c.loss.getTargets(), {c.tokens});
  Value scale = c.grad.getGrad();
  Value count;
  if (mean) {
    Type index = getElementTypeOrSelf(targets.getType());
    Value valid = gb.compare(ComparePredicate::ne, targets,
                             gb.scalar(index, c.loss.getIgnoreIndex()));
    count = gb.reduceSum(gb.indicator(valid, lossValue), {0}, false);
    scale = gb.div(scale, count);
  }

  auto hType = cast<RankedTensorType>(c.logits.getLhs().getType());
  int64_t width = hType.getShape().back();
  Value h = gb.reshape(c.logits.getLhs(), {c.tokens, width});
  SmallVector<Value> readerInputs; // per reader: the rank-2 other operand
  SmallVector<bool> readsH;        // ... which is h itself (dW = h^T g)
  for (Reader &r : c.readers) {
    readerInputs.push_back(r.other());
    readsH.push_back(!r.rows && r.other().getType() == h.getType() &&
                     beforeReshapes(r.other()) ==
                         beforeReshapes(c.logits.getLhs()));
  }
  Type logitsElement = getElementTypeOrSelf(c.logits.getType());
  Type gradElement = getElementTypeOrSelf(c.grad.getType());
  auto logitsChunk = RankedTensorType::get({n, c.classes}, logitsElement);
  auto gradChunk = RankedTensorType::get({n, c.classes}, gradElement);

  SmallVector<Value> losses;
  SmallVector<SmallVector<Value>> parts(c.readers.size());
  for (int64_t i = 0; i < k; ++i) {
    Value hc = rowSlice(b, loc, h, i * n, n);
    Value xc = b.create<MatmulOp>(loc, logitsChunk, hc, c.logits.getRhs(),
                                  c.logits.getTransposeLhsAttr(),
                                  c.logits.getTransposeRhsAttr());
    if (c.widen)
      xc = b.create<CastOp>(loc, gradChunk, xc);
    Value tc = elementSlice(b, loc, targets, i * n, n);
    auto lc = b.create<CrossEntropyOp>(loc, lossType, sum, xc, tc,
                                       c.loss.getIgnoreIndexAttr(),
                                       c.loss.getClassesAttr());
    losses.push_back(lc);
    Value gc = b.create<CrossEntropyGradOp>(loc, gradChunk, sum, xc, tc, scale,
                                            c.grad.getIgnoreIndexAttr(),
                                            c.grad.getClassesAttr());
    // The gradient in each type a reader reads it in, cast once.
    llvm::DenseMap<Type, Value> typed = {{gradElement, gc}};
    for (auto [ri, r] : llvm::enumerate(c.readers)) {
      Type want = getElementTypeOrSelf(r.op->getOperand(r.grad).getType());
      Value &g = typed[want];
      if (!g)
        g = b.create<CastOp>(loc, RankedTensorType::get({n, c.classes}, want),
                             gc);
      auto outType = cast<RankedTensorType>(r.op.getType());
      Value part;
      if (r.rows) {
        auto rowsType = RankedTensorType::get(
            {n, outType.getShape().back()}, outType.getElementType());
        part = b.create<MatmulOp>(loc, rowsType, g, readerInputs[ri],
                                  r.op.getTransposeLhsAttr(),
                                  r.op.getTransposeRhsAttr());
      } else {
        Value ac =
            readsH[ri] ? hc : rowSlice(b, loc, readerInputs[ri], i * n, n);
        part = b.create<MatmulOp>(loc, outType, r.grad == 0 ? g : ac,
                                  r.grad == 0 ? ac : g,
                                  r.op.getTransposeLhsAttr(),
                                  r.op.getTransposeRhsAttr());
      }
      parts[ri].push_back(part);
    }
  }

  Value total = losses.front();
  for (size_t i = 1; i < losses.size(); ++i)
    total = gb.add(total, losses[i]);
  if (mean)
    total = gb.div(total, count);
  for (auto [ri, r] : llvm::enumerate(c.readers)) {
    auto outType = cast<RankedTensorType>(r.op.getType());
    Value result;
    if (r.rows) {
      Value rows = b.create<ConcatOp>(loc, parts[ri], b.getI64IntegerAttr(0));
      result = gb.reshape(rows, outType.getShape());
    } else {
      // Partial sums in f32 (the product's own accumulation type), rounded
      // once to the product's type, as one product over all tokens does.
      Type f32 = b.getF32Type();
      bool narrow = outType.getElementType() != f32;
      auto wide = outType.clone(f32);
      auto widen = [&](Value v) -> Value {
        return narrow ? b.create<CastOp>(loc, wide, v).getResult() : v;
      };
      result = widen(parts[ri].front());
      for (size_t i = 1; i < parts[ri].size(); ++i)
        result = gb.add(result, widen(parts[ri][i]));
      if (narrow)
        result = b.create<CastOp>(loc, outType, result);
    }
    r.op.getResult().replaceAllUsesWith(result);
  }
  lossValue.replaceAllUsesWith(total);

  // What the chunks add to the step, for the pipeline's cost model
  // (compiler/Pipeline.cpp): the bytes the concat and the sum move, and the
  // launches beyond the whole classifier's. The row slices move nothing:
  // each is a contiguous window of its input, read in place
  // (compiler/codegen/SliceViews.h).
  auto bytesOf = [](Type t) {
    auto r = cast<RankedTensorType>(t);
    return r.getNumElements() *
           static_cast<int64_t>((r.getElementTypeBitWidth() + 7) / 8);
  };
  int64_t bytes = 0;
  int64_t launches = (k - 1) * (3 + int64_t(c.readers.size()));
  for (Reader &r : c.readers) {
    bytes += r.rows ? 2 * bytesOf(r.op.getType())
                    : (k + 1) * bytesOf(r.op.getType());
    launches += 1;
  }
  MLIRContext *ctx = b.getContext();
  auto i64 = [&](int64_t v) { return b.getI64IntegerAttr(v); };
  block->getParentOp()->setAttr(
      "llmc.chunked_classifier",
      DictionaryAttr::get(
          ctx, {b.getNamedAttr("chunks", i64(k)),
                b.getNamedAttr("tokens", i64(c.tokens)),
                b.getNamedAttr("classes", i64(c.classes)),
                b.getNamedAttr("extra_bytes", i64(bytes)),
                b.getNamedAttr("extra_launches", i64(launches))}));

  // The old classifier, readers first.
  for (Reader &r : c.readers)
    r.op.erase();
  // Views read by other views: erase until none is left unread.
  SmallVector<Operation *> dead(c.gradViews.begin(), c.gradViews.end());
  dead.push_back(c.grad);
  dead.push_back(c.loss);
  dead.append(c.forwardViews.rbegin(), c.forwardViews.rend());
  dead.push_back(c.logits);
  for (bool erased = true; erased;) {
    erased = false;
    for (Operation *&op : dead)
      if (op && op->use_empty()) {
        op->erase();
        op = nullptr;
        erased = true;
      }
  }
  // A reader of the loss before the last gradient reader (a loss scale, a
  // NaN check) now comes after the chunks that compute it.
  if (!sortTopologically(block))
    return emitError(errorLoc, "llmc-chunk-classifier: the chunked step has "
                               "a cycle");
  return success();
}

} // namespace
