//===- LlmcFolders.cpp - Folds of the llmc ops ----------------------------===//
//
// Identities (x + 0 = x, reshape to the same type = x, identity transpose),
// composition (reshape(reshape(x)) = reshape(x), transpose(transpose(x)) =
// transpose(x) with the composed permutation) and constant folding of the
// small integer tensors that shape arithmetic produces. Float constants are
// folded only through identities: their arithmetic belongs to the reference
// evaluator, which computes in f64.
//
//===----------------------------------------------------------------------===//
#include "dialects/llmc/InferUtils.h"
#include "dialects/llmc/LlmcOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

#include <functional>

using namespace mlir;
using namespace mlir::llmc;

/// Constant folding is for shape arithmetic; larger tensors stay ops.
static constexpr int64_t kMaxFoldElements = 1 << 14;

static DenseIntElementsAttr foldableInts(Attribute attr) {
  auto ints = dyn_cast_or_null<DenseIntElementsAttr>(attr);
  if (!ints || !ints.getType().hasStaticShape() ||
      ints.getNumElements() > kMaxFoldElements)
    return {};
  return ints;
}

/// Index of `resultIndex` (linear, row-major in `resultShape`) inside an
/// operand of shape `shape` that numpy-broadcasts to `resultShape`.
static int64_t broadcastSourceIndex(int64_t resultIndex,
                                    ArrayRef<int64_t> resultShape,
                                    ArrayRef<int64_t> shape) {
  int64_t src = 0, stride = 1;
  size_t offset = resultShape.size() - shape.size();
  for (int64_t d = resultShape.size() - 1; d >= 0; --d) {
    int64_t coord = resultIndex % resultShape[d];
    resultIndex /= resultShape[d];
    if (d < static_cast<int64_t>(offset))
      continue;
    int64_t size = shape[d - offset];
    if (size != 1)
      src += coord * stride;
    stride *= size;
  }
  return src;
}

/// Folds `fn` over two integer constants with broadcasting; the result has
/// element type `resultType`'s (i1 for comparisons).
static Attribute
foldIntBinary(Attribute lhsAttr, Attribute rhsAttr, RankedTensorType resultType,
              const std::function<std::optional<APInt>(const APInt &,
                                                       const APInt &)> &fn) {
  auto lhs = foldableInts(lhsAttr), rhs = foldableInts(rhsAttr);
  auto count = staticElementCount(resultType.getShape()); // checked
  if (!lhs || !rhs || !count || *count > kMaxFoldElements)
    return {};
  auto lv = llvm::to_vector(lhs.getValues<APInt>());
  auto rv = llvm::to_vector(rhs.getValues<APInt>());
  SmallVector<APInt> out;
  for (int64_t i = 0, e = resultType.getNumElements(); i < e; ++i) {
    auto r = fn(lv[broadcastSourceIndex(i, resultType.getShape(),
                                        lhs.getType().getShape())],
                rv[broadcastSourceIndex(i, resultType.getShape(),
                                        rhs.getType().getShape())]);
    if (!r)
      return {};
    out.push_back(*r);
  }
  return DenseElementsAttr::get(resultType, out);
}

/// True when `attr` is a splat equal to `value` (an integer or float).
static bool isSplatOf(Attribute attr, double value) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  if (!splat)
    return false;
  Type t = splat.getElementType();
  if (isa<FloatType>(t))
    return splat.getSplatValue<APFloat>().convertToDouble() == value;
  if (t.isInteger(32) || t.isInteger(64))
    return static_cast<double>(splat.getSplatValue<APInt>().getSExtValue()) ==
           value;
  return false;
}

//===----------------------------------------------------------------------===//
// Constant, cast
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  // cast(x : T -> T) = x
  if (getInput().getType() == getType())
    return getInput();
  // Integer constant to another integer width (shape arithmetic mixes i32
  // and i64).
  auto ints = foldableInts(adaptor.getInput());
  auto outElement = dyn_cast<IntegerType>(getType().getElementType());
  if (!ints || !outElement || !getType().hasStaticShape())
    return {};
  SmallVector<APInt> out;
  for (const APInt &v : ints.getValues<APInt>())
    out.push_back(outElement.getWidth() == 1
                      ? APInt(1, !v.isZero())
                      : v.sextOrTrunc(outElement.getWidth()));
  return DenseElementsAttr::get(getType(), out);
}

//===----------------------------------------------------------------------===//
// Binary arithmetic
//===----------------------------------------------------------------------===//

/// x op c = x when c is the op's identity and broadcasting does not change
/// x's type.
static OpFoldResult foldIdentity(Value lhs, Attribute rhs, Type resultType,
                                 double identity) {
  if (lhs.getType() == resultType && isSplatOf(rhs, identity))
    return lhs;
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor a) {
  if (auto r = foldIdentity(getLhs(), a.getRhs(), getType(), 0.0))
    return r;
  return foldIntBinary(a.getLhs(), a.getRhs(), getType(),
                       [](const APInt &x, const APInt &y) { return x + y; });
}

OpFoldResult SubOp::fold(FoldAdaptor a) {
  if (auto r = foldIdentity(getLhs(), a.getRhs(), getType(), 0.0))
    return r;
  return foldIntBinary(a.getLhs(), a.getRhs(), getType(),
                       [](const APInt &x, const APInt &y) { return x - y; });
}

OpFoldResult MulOp::fold(FoldAdaptor a) {
  if (auto r = foldIdentity(getLhs(), a.getRhs(), getType(), 1.0))
    return r;
  return foldIntBinary(a.getLhs(), a.getRhs(), getType(),
                       [](const APInt &x, const APInt &y) { return x * y; });
}

OpFoldResult DivOp::fold(FoldAdaptor a) {
  if (auto r = foldIdentity(getLhs(), a.getRhs(), getType(), 1.0))
    return r;
  return foldIntBinary(a.getLhs(), a.getRhs(), getType(),
                       [](const APInt &x,
                          const APInt &y) -> std::optional<APInt> {
                         if (y.isZero())
                           return std::nullopt; // leave the error to runtime
                         return x.sdiv(y);
                       });
}

OpFoldResult PowOp::fold(FoldAdaptor a) {
  return foldIdentity(getLhs(), a.getRhs(), getType(), 1.0);
}

OpFoldResult MaxOp::fold(FoldAdaptor a) {
  if (getLhs() == getRhs())
    return getLhs();
  return foldIntBinary(a.getLhs(), a.getRhs(), getType(),
                       [](const APInt &x, const APInt &y) {
                         return x.sge(y) ? x : y;
                       });
}

OpFoldResult MinOp::fold(FoldAdaptor a) {
  if (getLhs() == getRhs())
    return getLhs();
  return foldIntBinary(a.getLhs(), a.getRhs(), getType(),
                       [](const APInt &x, const APInt &y) {
                         return x.sle(y) ? x : y;
                       });
}

OpFoldResult CompareOp::fold(FoldAdaptor a) {
  ComparePredicate pred = getPredicate();
  return foldIntBinary(a.getLhs(), a.getRhs(), getType(),
                       [pred](const APInt &x, const APInt &y) {
                         bool r = false;
                         switch (pred) {
                         case ComparePredicate::eq: r = x.eq(y); break;
                         case ComparePredicate::ne: r = x.ne(y); break;
                         case ComparePredicate::lt: r = x.slt(y); break;
                         case ComparePredicate::le: r = x.sle(y); break;
                         case ComparePredicate::gt: r = x.sgt(y); break;
                         case ComparePredicate::ge: r = x.sge(y); break;
                         }
                         return APInt(1, r);
                       });
}

OpFoldResult WhereOp::fold(FoldAdaptor a) {
  // where(true, x, y) = x and where(false, x, y) = y when no broadcast
  // changes the chosen operand's type.
  auto cond = dyn_cast_or_null<SplatElementsAttr>(a.getCondition());
  if (cond) {
    Value chosen = cond.getSplatValue<bool>() ? getOnTrue() : getOnFalse();
    if (chosen.getType() == getType())
      return chosen;
  }
  if (getOnTrue() == getOnFalse() && getOnTrue().getType() == getType())
    return getOnTrue();
  return {};
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

OpFoldResult ReshapeOp::fold(FoldAdaptor a) {
  // reshape(x : T -> T) = x
  if (getInput().getType() == getType())
    return getInput();
  // reshape(reshape(x)) = reshape(x)
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(a.getInput()))
    if (getType().hasStaticShape())
      return dense.reshape(getType());
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  // transpose(x, identity) = x
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getInput();
  // transpose(transpose(x, p), q) = transpose(x, p∘q): result dim i reads
  // inner result dim q[i], which reads x dim p[q[i]].
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> innerPerm = inner.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t q : perm)
      composed.push_back(innerPerm[q]);
    setPermutation(composed);
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor a) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto splat = dyn_cast_or_null<SplatElementsAttr>(a.getInput()))
    if (getType().hasStaticShape())
      return splat.resizeSplat(getType());
  return {};
}

OpFoldResult SliceOp::fold(FoldAdaptor a) {
  if (getInput().getType() == getType() &&
      llvm::all_of(getStarts(), [](int64_t s) { return s == 0; }) &&
      llvm::all_of(getStrides(), [](int64_t s) { return s == 1; }))
    return getInput();
  auto ints = foldableInts(a.getInput());
  if (!ints || !getType().hasStaticShape())
    return {};
  if (ints.isSplat())
    return ints.resizeSplat(getType());
  auto values = llvm::to_vector(ints.getValues<APInt>());
  ArrayRef<int64_t> inShape = ints.getType().getShape();
  ArrayRef<int64_t> outShape = getType().getShape();
  SmallVector<APInt> out;
  for (int64_t i = 0, e = getType().getNumElements(); i < e; ++i) {
    int64_t rem = i, src = 0, stride = 1;
    for (int64_t d = outShape.size() - 1; d >= 0; --d) {
      int64_t coord = rem % outShape[d];
      rem /= outShape[d];
      src += (getStarts()[d] + coord * getStrides()[d]) * stride;
      stride *= inShape[d];
    }
    out.push_back(values[src]);
  }
  return DenseElementsAttr::get(getType(), out);
}

OpFoldResult ConcatOp::fold(FoldAdaptor a) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  // Concatenation of 1-D integer constants: ONNX shape vectors.
  if (getType().getRank() != 1 || !getType().hasStaticShape())
    return {};
  SmallVector<APInt> out;
  for (Attribute attr : a.getInputs()) {
    auto ints = foldableInts(attr);
    if (!ints)
      return {};
    llvm::append_range(out, ints.getValues<APInt>());
  }
  return DenseElementsAttr::get(getType(), out);
}
