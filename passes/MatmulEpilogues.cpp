//===- MatmulEpilogues.cpp - GELU and bias gradients into a matmul's group ===//
//
// The rewrites of llmc-fuse-epilogues beyond the bias add (MatmulEpilogues.h;
// the conditions are in Passes.td, each with a negative case in
// test/lit/passes/matmul-epilogues.mlir). Each builds one new group at
// the matmul's place from the matmul's ops and the ops it takes, yields
// what outside reads, and names its cuBLASLt epilogue in `llmc.epilogue`.
//
// Only bf16/f16 products: these are the types the bf16 step needs and the
// GPU test measures (test/gpu/codegen/EpilogueGpuTest.cpp); f32 groups
// keep their separate kernels.
//
//===----------------------------------------------------------------------===//
#include "passes/MatmulEpilogues.h"

#include "passes/EpilogueUtils.h"

using namespace mlir;
using namespace mlir::llmc;

namespace mlir::llmc::epilogue {

llvm::StringRef name(Kind kind) {
  switch (kind) {
  case Kind::Gelu:
    return "gelu";
  case Kind::GeluGrad:
    return "gelu_grad";
  case Kind::BiasGradLhs:
    return "bias_grad_lhs";
  case Kind::BiasGradRhs:
    return "bias_grad_rhs";
  }
  return "";
}

std::optional<Kind> parse(llvm::StringRef text) {
  for (Kind k : {Kind::Gelu, Kind::GeluGrad, Kind::BiasGradLhs, Kind::BiasGradRhs})
    if (text == name(k))
      return k;
  return std::nullopt;
}

std::optional<Kind> of(KernelOp group) {
  auto attr = group->getAttrOfType<StringAttr>(kAttr);
  return attr ? parse(attr.getValue()) : std::nullopt;
}

namespace {

/// bf16 or f16, static, rank >= 2, last dim a multiple of 8: cuBLASLt's
/// aux matrix (the GELU input) has ld = n and ld must divide by 8.
bool epilogueType(Type t) {
  auto type = dyn_cast<RankedTensorType>(t);
  return type && type.hasStaticShape() && type.getRank() >= 2 &&
         isa<BFloat16Type, Float16Type>(type.getElementType()) &&
         type.getShape().back() % 8 == 0;
}

/// A matmul group that can take an epilogue: in `block`, one result, none
/// yet, and its matmul is one GEMM.
MatmulOp hostMatmul(KernelOp host, Block *block) {
  if (!host || host->getBlock() != block || host->getNumResults() != 1 ||
      host->hasAttr(kAttr))
    return nullptr;
  auto ops = host.getGroupOps();
  auto matmul = dyn_cast<MatmulOp>(*ops.begin());
  if (!matmul || !isSingleGemm(matmul))
    return nullptr;
  return matmul;
}

/// reduce_sum of `group`'s only op over every axis but the last, when that
/// is all the group does: a bias gradient over all rows.
ReduceSumOp rowSum(KernelOp group) {
  auto r = dyn_cast_or_null<ReduceSumOp>(soleOp(group));
  if (!r || group.getYield()->getOperands() != r->getResults() ||
      r.getKeepdims())
    return nullptr;
  auto in = dyn_cast<RankedTensorType>(r.getInput().getType());
  auto out = dyn_cast<RankedTensorType>(r.getType());
  if (!in || !out || out.getRank() != 1 || in.getRank() < 2 ||
      static_cast<int64_t>(r.getAxes().size()) != in.getRank() - 1)
    return nullptr;
  for (auto [i, axis] : llvm::enumerate(r.getAxes()))
    if (axis != static_cast<int64_t>(i))
      return nullptr;
  return r;
}

/// One group at `host`'s place holding host's ops and then `ops`, yielding
/// `yielded`; the old groups' results that `replaced` lists become the new
/// group's results of the same index, and `dead` groups go away.
KernelOp regroup(KernelOp host, ArrayRef<Operation *> ops,
                 ArrayRef<Value> yielded, ArrayRef<Value> replaced,
                 ArrayRef<KernelOp> dead, Kind kind) {
  OpBuilder builder(host);
  SmallVector<Type> types;
  for (Value v : yielded)
    types.push_back(v.getType());
  SmallVector<Location> locs{host.getLoc()};
  for (KernelOp g : dead)
    locs.push_back(g.getLoc());
  auto fused = builder.create<KernelOp>(
      FusedLoc::get(host.getContext(), locs), types, /*in_place=*/nullptr);
  fused.getBody().takeBody(host.getBody());
  Operation *yield = fused.getYield();
  for (Operation *op : ops)
    op->moveBefore(yield);
  yield->setOperands(yielded);
  for (auto [k, v] : llvm::enumerate(replaced))
    if (v) // null: the caller rewires that result
      Value(v).replaceAllUsesWith(fused.getResult(k));
  fused->setAttr(kAttr, builder.getStringAttr(name(kind)));
  for (KernelOp g : dead)
    g.erase();
  host.erase();
  return fused;
}

template <typename T> SmallVector<KernelOp> groupsWith(func::FuncOp func) {
  SmallVector<KernelOp> out;
  func.walk([&](KernelOp g) {
    if (auto op = dyn_cast_or_null<T>(soleOp(g));
        op && g.getYield()->getOperands() == op->getResults())
      out.push_back(g);
  });
  return out;
}

} // namespace

void fuseGelu(func::FuncOp func) {
  for (KernelOp g : groupsWith<GeluOp>(func)) {
    auto gelu = cast<GeluOp>(soleOp(g));
    Value pre = gelu.getInput();
    // HF's Conv1D reads the product through a view (gelu(reshape(x W + b))):
    // gelu is elementwise, so it takes the product's shape in the group and
    // a reshape after the group gives its readers theirs back.
    auto view = pre.getDefiningOp<ReshapeOp>();
    if (view && view->getBlock() != g->getBlock())
      continue;
    Value product = view ? view.getInput() : pre;
    auto host = product.getDefiningOp<KernelOp>();
    if (gelu.getApproximation() != GeluApproximation::tanh ||
        !epilogueType(product.getType()) || !hostMatmul(host, g->getBlock()))
      continue;
    // The host is a matmul, or a matmul and its bias add (the first rewrite).
    auto kind = fusion::classify(host);
    if (kind != fusion::GroupKind::Single &&
        kind != fusion::GroupKind::MatmulBias)
      continue;
    Value inner = host.getYield()->getOperand(0);
    gelu->setOperand(0, inner);
    gelu->getResult(0).setType(inner.getType());
    bool throughView = static_cast<bool>(view);
    if (throughView && view->use_empty())
      view->erase();
    // The pre-activation is the aux output when anything else reads it
    // (gelu_grad in training); otherwise nothing but the gelu is written.
    SmallVector<Value> yielded{gelu.getResult()};
    SmallVector<Value> replaced{throughView ? Value() : g.getResult(0)};
    if (!product.use_empty()) {
      yielded.push_back(inner);
      replaced.push_back(product);
    }
    KernelOp fused = regroup(
        host, {gelu}, yielded, replaced,
        throughView ? ArrayRef<KernelOp>() : ArrayRef<KernelOp>(g), Kind::Gelu);
    if (!throughView)
      continue;
    OpBuilder builder(fused->getContext());
    builder.setInsertionPointAfter(fused);
    auto back = builder.create<ReshapeOp>(
        g.getLoc(), g.getResult(0).getType(), fused.getResult(0));
    g.getResult(0).replaceAllUsesWith(back.getResult());
    g.erase();
  }
}

void fuseGeluGrad(func::FuncOp func, bool withBiasGrad) {
  for (KernelOp g : groupsWith<GeluGradOp>(func)) {
    auto grad = cast<GeluGradOp>(soleOp(g));
    Value pre = grad.getInput(), dh = grad.getGrad();
    // HF's Conv1D: gelu_grad(view(aux), view(x W^T)) ([rows, n] viewed as
    // [B, T, n]). As in fuseGelu, the gelu_grad joins the group in the
    // product's shape and a reshape after the group gives its readers
    // theirs; the aux is read through the inverse view.
    auto view = dh.getDefiningOp<ReshapeOp>();
    if (view && (view->getBlock() != g->getBlock() || !dh.hasOneUse()))
      continue;
    Value product = view ? view.getInput() : dh;
    auto host = product.getDefiningOp<KernelOp>();
    if (grad.getApproximation() != GeluApproximation::tanh ||
        !epilogueType(product.getType()) || !product.hasOneUse() ||
        !dh.hasOneUse() || pre == dh || !hostMatmul(host, g->getBlock()) ||
        fusion::classify(host) != fusion::GroupKind::Single ||
        !definedBefore(pre, host))
      continue;
    // The bias gradient: a row sum of the gelu_grad result, of its type
    // (not through a view: DGELU_BGRAD is off in the pipeline anyway).
    KernelOp sumGroup;
    ReduceSumOp sum;
    for (Operation *user : g.getResult(0).getUsers()) {
      auto r = dyn_cast<ReduceSumOp>(user);
      auto rg = r ? dyn_cast<KernelOp>(r->getParentOp()) : nullptr;
      if (withBiasGrad && !view && rg && rowSum(rg) == r &&
          rg->getBlock() == g->getBlock() &&
          getElementTypeOrSelf(r.getType()) ==
              getElementTypeOrSelf(dh.getType())) {
        sumGroup = rg;
        sum = r;
        break;
      }
    }
    Value inner = host.getYield()->getOperand(0);
    if (view) {
      // The aux in the product's shape: the tensor `pre` views, or a view
      // of `pre` (a reshape is free: it aliases its input's buffer).
      auto preView = pre.getDefiningOp<ReshapeOp>();
      if (preView && preView.getInput().getType() == inner.getType()) {
        pre = preView.getInput();
      } else {
        OpBuilder builder(host);
        pre = builder.create<ReshapeOp>(grad.getLoc(), inner.getType(), pre);
      }
      grad->setOperand(0, pre);
      grad->getResult(0).setType(inner.getType());
      if (preView && preView->use_empty())
        preView->erase();
    }
    grad->setOperand(1, inner);
    if (view && view->use_empty())
      view->erase();
    SmallVector<Operation *> ops{grad};
    SmallVector<Value> yielded{grad.getResult()};
    SmallVector<Value> replaced{view ? Value() : g.getResult(0)};
    SmallVector<KernelOp> dead;
    if (!view)
      dead.push_back(g);
    if (sum) {
      sum->setOperand(0, grad.getResult());
      ops.push_back(sum);
      yielded.push_back(sum.getResult());
      replaced.push_back(sumGroup.getResult(0));
      dead.push_back(sumGroup);
    }
    KernelOp fused = regroup(host, ops, yielded, replaced, dead, Kind::GeluGrad);
    if (!view)
      continue;
    OpBuilder builder(fused->getContext());
    builder.setInsertionPointAfter(fused);
    auto back = builder.create<ReshapeOp>(
        g.getLoc(), g.getResult(0).getType(), fused.getResult(0));
    g.getResult(0).replaceAllUsesWith(back.getResult());
    g.erase();
  }
}

void fuseBiasGrad(func::FuncOp func, bool withRhs) {
  for (KernelOp rg : groupsWith<ReduceSumOp>(func)) {
    ReduceSumOp sum = rowSum(rg);
    if (!sum)
      continue;
    Value c = sum.getInput();
    auto cType = cast<RankedTensorType>(c.getType());
    if (!epilogueType(cType) ||
        getElementTypeOrSelf(sum.getType()) != cType.getElementType())
      continue;
    // c, or its [rows, n] reshape, as an operand of a weight gradient
    // (c^T x or x^T c): either sums c over the GEMM's k, the rows.
    SmallVector<Value> views{c};
    for (Operation *user : c.getUsers())
      if (auto reshape = dyn_cast<ReshapeOp>(user);
          reshape && reshape->getBlock() == rg->getBlock() &&
          reshape.getType().getRank() == 2 &&
          reshape.getType().getShape().back() == cType.getShape().back())
        views.push_back(reshape.getResult());
    KernelOp host;
    Kind kind = Kind::BiasGradLhs;
    for (Value view : views) {
      for (Operation *user : view.getUsers()) {
        auto m = dyn_cast<MatmulOp>(user);
        auto h = m ? dyn_cast<KernelOp>(m->getParentOp()) : nullptr;
        // Both layouts are the wgrad GEMM (lhs transposed, rhs not): c as
        // the lhs is dW = c^T x ([in, out] weights transposed, BGRADB); c
        // as the rhs is dW = x^T c (HF Conv1D's [in, out] weights, BGRADA).
        if (!h || hostMatmul(h, rg->getBlock()) != m ||
            fusion::classify(h) != fusion::GroupKind::Single ||
            (m.getLhs() != view && (!withRhs || m.getRhs() != view)) ||
            !m.getTransposeLhs() || m.getTransposeRhs() ||
            cast<RankedTensorType>(view.getType()).getRank() != 2 ||
            getElementTypeOrSelf(m.getType()) != cType.getElementType())
          continue;
        // The sum moves to the matmul: everything that reads it must come
        // after (the optimizer does).
        bool later = llvm::all_of(rg.getResult(0).getUsers(), [&](Operation *u) {
          Operation *top = rg->getBlock()->findAncestorOpInBlock(*u);
          return top && h->isBeforeInBlock(top);
        });
        if (later) {
          host = h;
          kind = m.getLhs() == view ? Kind::BiasGradLhs : Kind::BiasGradRhs;
          break;
        }
      }
      if (host)
        break;
    }
    if (!host)
      continue;
    auto matmul = cast<MatmulOp>(soleOp(host));
    regroup(host, {sum}, {matmul.getResult(), sum.getResult()},
            {host.getResult(0), rg.getResult(0)}, {rg}, kind);
  }
}

} // namespace mlir::llmc::epilogue
