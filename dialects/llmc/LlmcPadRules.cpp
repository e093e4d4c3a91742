//===- LlmcPadRules.cpp - How each op takes part in shape padding ---------===//
//
// The answers of PaddableOpInterface (LlmcInterfaces.td) in one place, as the
// gradient rules are in Llmc*Vjps.cpp and the precision classes in
// LlmcPrecisionPolicies.cpp. `llmc-pad-shapes` (docs/padding.md) pads a
// parameter's dim with zeros and asks every op that holds it which other
// dims are the same dim. Each rule keeps the interface's promise: with the
// tied operand dims zero-padded, the tied result dims are zero-padded and
// nothing else the op computes changes.
//
//===----------------------------------------------------------------------===//
#include "dialects/llmc/LlmcOps.h"

namespace mlir::llmc {

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

int64_t rankOf(Value v) { return cast<RankedTensorType>(v.getType()).getRank(); }

LogicalResult refuse(std::string &reason, const std::string &why) {
  reason = why;
  return failure();
}

/// What an elementwise op does to zeros: whether its padding stays zero.
enum class ZeroRule {
  Keeps,       // f(0) = 0 and f(0, 0) = 0 with every operand padded
  Multiplies,  // x * y: zero when any operand covering the entry is zero
  DividesZero, // x / y: zero when x is padded and y is not
  Breaks,      // f(0) != 0 (exp, cos, reciprocal, ...)
};

/// Elementwise ops with numpy broadcasting: the dim at the same position
/// from the right in every operand and result where it is not broadcast.
LogicalResult elementwiseTies(Operation *op, Value value, int64_t dim,
                              SmallVectorImpl<PadTie> &ties,
                              std::string &reason, ZeroRule rule,
                              StringRef formula = "") {
  if (rule == ZeroRule::Breaks)
    return refuse(reason, "its padding would not stay zero (" + formula.str() +
                              " of 0 is not 0)");
  int64_t fromEnd = rankOf(value) - dim;
  // Operands that hold the dim (padded with it) and those broadcast along
  // it (whose values would land in the padding).
  SmallVector<Value> holders, broadcast;
  for (Value v : op->getOperands()) {
    int64_t r = rankOf(v);
    if (fromEnd <= r && shapeOf(v)[r - fromEnd] != 1)
      holders.push_back(v);
    else
      broadcast.push_back(v);
  }
  if (!broadcast.empty()) {
    bool ok = rule == ZeroRule::Multiplies ||
              (rule == ZeroRule::DividesZero && holders.size() == 1 &&
               holders.front() == op->getOperand(0));
    if (!ok)
      return refuse(reason, "an operand broadcast along the padded dim "
                            "would fill its padding");
  } else if (rule == ZeroRule::DividesZero) {
    return refuse(reason, "0 / 0 in the padding");
  }
  llvm::append_range(holders, op->getResults());
  for (Value v : holders)
    if (v != value)
      ties.push_back({v, rankOf(v) - fromEnd});
  return success();
}

/// The operands and results of `op`, in that order.
SmallVector<Value> valuesOf(Operation *op) {
  SmallVector<Value> all(op->getOperands());
  llvm::append_range(all, op->getResults());
  return all;
}

/// Ops whose operands and results have one shape (unary, cast, gelu).
LogicalResult sameShapeTies(Operation *op, Value value, int64_t dim,
                            SmallVectorImpl<PadTie> &ties) {
  for (Value v : valuesOf(op))
    if (v != value)
      ties.push_back({v, dim});
  return success();
}

/// The dim of `to` that is `from`'s dim `dim` under a reshape: same size,
/// same number of elements before it and after it.
std::optional<int64_t> reshapedDim(ArrayRef<int64_t> from,
                                   ArrayRef<int64_t> to, int64_t dim) {
  int64_t before = 1;
  for (int64_t i = 0; i < dim; ++i)
    before *= from[i];
  int64_t seen = 1;
  for (int64_t j = 0; j < static_cast<int64_t>(to.size()); ++j) {
    if (seen == before && to[j] == from[dim])
      return j;
    seen *= to[j];
    if (seen > before)
      break;
  }
  return std::nullopt;
}

/// Norm-like ops over dims `axis ..< rank` of `input`, with `params` (the
/// weight and bias, null when absent) of the normalized dims' shape: dims
/// before the axis tie input and result; a single normalized dim ties the
/// input's, the result's and the params'. Over a padded normalized dim the
/// pass rewrites the norm to normalize the real columns only and leave
/// zeros in the padding (maskNormOverPadding, passes/PadNorms.cpp), which
/// keeps this interface's promise.
LogicalResult normTies(Operation *op, Value input, ArrayRef<Value> params,
                       int64_t axis, Value value, int64_t dim,
                       SmallVectorImpl<PadTie> &ties, std::string &reason,
                       StringRef what) {
  int64_t rank = rankOf(input);
  if (axis < 0)
    axis += rank;
  Value result = op->getResult(0);
  bool isParam = llvm::is_contained(params, value);
  if (!isParam && dim < axis) {
    ties.push_back({value == input ? result : input, dim});
    return success();
  }
  if (axis != rank - 1)
    return refuse(reason, what.str() + " over several dims with the padded "
                                       "one (only a single one is masked)");
  for (Value v : {input, result})
    if (v != value)
      ties.push_back({v, rank - 1});
  for (Value p : params)
    if (p && p != value)
      ties.push_back({p, 0});
  return success();
}

/// softmax-like ops over one axis: the other dims tie input and result.
LogicalResult softmaxTies(Operation *op, int64_t axis, Value value,
                          int64_t dim, SmallVectorImpl<PadTie> &ties,
                          std::string &reason, StringRef what) {
  int64_t rank = rankOf(value);
  if (dim == (axis + rank) % rank)
    return refuse(reason, what.str() + " normalizes over the padded dim "
                                       "(masking it is not built; "
                                       "cross_entropy masks its own)");
  return sameShapeTies(op, value, dim, ties);
}

/// Reductions over `axes`: a kept dim ties with the result's; over the
/// padded dim only a sum is exact.
LogicalResult reduceTies(Operation *op, ArrayRef<int64_t> axes, bool keepdims,
                         Value value, int64_t dim, SmallVectorImpl<PadTie> &ties,
                         std::string &reason, bool sums) {
  Value input = op->getOperand(0), result = op->getResult(0);
  int64_t rank = rankOf(input);
  auto reduced = [&](int64_t d) {
    return llvm::any_of(axes, [&](int64_t a) { return (a + rank) % rank == d; });
  };
  if (value == input) {
    if (reduced(dim)) {
      if (sums)
        return success(); // a sum of zeros: exact, nothing to tie
      return refuse(reason, "reduces over the padded dim, and only a sum "
                            "ignores zero padding");
    }
    int64_t out = dim;
    if (!keepdims)
      for (int64_t d = 0; d < dim; ++d)
        out -= reduced(d);
    ties.push_back({result, out});
    return success();
  }
  int64_t seen = -1;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced(d) && !keepdims)
      continue;
    if (++seen == dim) {
      if (reduced(d))
        return refuse(reason, "a reduced dim of size 1");
      ties.push_back({input, d});
      return success();
    }
  }
  return refuse(reason, "no such dim");
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

#define LLMC_ELEMENTWISE_PAD_RULE(Op, rule, formula)                           \
  LogicalResult Op::getPadTies(Value value, int64_t dim,                       \
                               SmallVectorImpl<PadTie> &ties,                  \
                               std::string &reason) {                          \
    return elementwiseTies(*this, value, dim, ties, reason, rule, formula);    \
  }

LLMC_ELEMENTWISE_PAD_RULE(NegOp, ZeroRule::Keeps, "-x")
LLMC_ELEMENTWISE_PAD_RULE(AbsOp, ZeroRule::Keeps, "|x|")
LLMC_ELEMENTWISE_PAD_RULE(SqrtOp, ZeroRule::Keeps, "sqrt")
LLMC_ELEMENTWISE_PAD_RULE(TanhOp, ZeroRule::Keeps, "tanh")
LLMC_ELEMENTWISE_PAD_RULE(ErfOp, ZeroRule::Keeps, "erf")
LLMC_ELEMENTWISE_PAD_RULE(ReluOp, ZeroRule::Keeps, "relu")
LLMC_ELEMENTWISE_PAD_RULE(SinOp, ZeroRule::Keeps, "sin")
LLMC_ELEMENTWISE_PAD_RULE(ExpOp, ZeroRule::Breaks, "exp")
LLMC_ELEMENTWISE_PAD_RULE(LogOp, ZeroRule::Breaks, "log")
LLMC_ELEMENTWISE_PAD_RULE(RsqrtOp, ZeroRule::Breaks, "rsqrt")
LLMC_ELEMENTWISE_PAD_RULE(ReciprocalOp, ZeroRule::Breaks, "1 / x")
LLMC_ELEMENTWISE_PAD_RULE(SigmoidOp, ZeroRule::Breaks, "sigmoid")
LLMC_ELEMENTWISE_PAD_RULE(CosOp, ZeroRule::Breaks, "cos")
LLMC_ELEMENTWISE_PAD_RULE(AddOp, ZeroRule::Keeps, "x + y")
LLMC_ELEMENTWISE_PAD_RULE(SubOp, ZeroRule::Keeps, "x - y")
LLMC_ELEMENTWISE_PAD_RULE(MaxOp, ZeroRule::Keeps, "max")
LLMC_ELEMENTWISE_PAD_RULE(MinOp, ZeroRule::Keeps, "min")
LLMC_ELEMENTWISE_PAD_RULE(MulOp, ZeroRule::Multiplies, "x * y")
LLMC_ELEMENTWISE_PAD_RULE(DivOp, ZeroRule::DividesZero, "x / y")
LLMC_ELEMENTWISE_PAD_RULE(PowOp, ZeroRule::Breaks, "x ^ y")

#undef LLMC_ELEMENTWISE_PAD_RULE

LogicalResult CastOp::getPadTies(Value value, int64_t dim,
                                 SmallVectorImpl<PadTie> &ties, std::string &) {
  return sameShapeTies(*this, value, dim, ties);
}

LogicalResult GeluOp::getPadTies(Value value, int64_t dim,
                                 SmallVectorImpl<PadTie> &ties, std::string &) {
  return sameShapeTies(*this, value, dim, ties); // gelu(0) = 0
}

LogicalResult SiluOp::getPadTies(Value value, int64_t dim,
                                 SmallVectorImpl<PadTie> &ties, std::string &) {
  return sameShapeTies(*this, value, dim, ties); // silu(0) = 0
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::getPadTies(Value value, int64_t dim,
                                    SmallVectorImpl<PadTie> &ties,
                                    std::string &reason) {
  bool forward = value == getInput();
  Value other = forward ? getResult() : getInput();
  auto mapped = reshapedDim(shapeOf(value), shapeOf(other), dim);
  if (!mapped)
    return refuse(reason, "a reshape splits or merges the padded dim");
  ties.push_back({other, *mapped});
  return success();
}

LogicalResult TransposeOp::getPadTies(Value value, int64_t dim,
                                      SmallVectorImpl<PadTie> &ties,
                                      std::string &) {
  ArrayRef<int64_t> perm = getPermutation();
  if (value == getResult()) {
    ties.push_back({getInput(), perm[dim]});
    return success();
  }
  for (int64_t i = 0; i < static_cast<int64_t>(perm.size()); ++i)
    if (perm[i] == dim)
      ties.push_back({getResult(), i});
  return success();
}

LogicalResult BroadcastToOp::getPadTies(Value value, int64_t dim,
                                        SmallVectorImpl<PadTie> &ties,
                                        std::string &reason) {
  int64_t shift = rankOf(getResult()) - rankOf(getInput());
  if (value == getInput()) {
    ties.push_back({getResult(), dim + shift});
    return success();
  }
  int64_t in = dim - shift;
  if (in < 0 || shapeOf(getInput())[in] == 1)
    return refuse(reason, "broadcasts a value along the padded dim (its "
                          "padding would not be zero)");
  ties.push_back({getInput(), in});
  return success();
}

LogicalResult GatherOp::getPadTies(Value value, int64_t dim,
                                   SmallVectorImpl<PadTie> &ties,
                                   std::string &reason) {
  int64_t axis = getAxis(), indices = rankOf(getIndices());
  if (value == getData()) {
    if (dim == axis)
      return success(); // read at the indices only: `bound` keeps them real
    ties.push_back({getResult(), dim < axis ? dim : dim - 1 + indices});
    return success();
  }
  if (value == getResult()) {
    if (dim >= axis && dim < axis + indices)
      return refuse(reason, "fixed by the input (the indices' shape)");
    ties.push_back({getData(), dim < axis ? dim : dim + 1 - indices});
    return success();
  }
  return refuse(reason, "fixed by the input (the indices' shape)");
}

void GatherOp::notePadding(Value operand, int64_t dim, int64_t realSize) {
  if (operand == getData() && dim == getAxis() && !getBound())
    setBoundAttr(IntegerAttr::get(IntegerType::get(getContext(), 64),
                                  realSize));
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult ReduceSumOp::getPadTies(Value value, int64_t dim,
                                      SmallVectorImpl<PadTie> &ties,
                                      std::string &reason) {
  return reduceTies(*this, getAxes(), getKeepdims(), value, dim, ties, reason,
                    /*sums=*/true);
}

LogicalResult ReduceMeanOp::getPadTies(Value value, int64_t dim,
                                       SmallVectorImpl<PadTie> &ties,
                                       std::string &reason) {
  return reduceTies(*this, getAxes(), getKeepdims(), value, dim, ties, reason,
                    /*sums=*/false);
}

LogicalResult ReduceMaxOp::getPadTies(Value value, int64_t dim,
                                      SmallVectorImpl<PadTie> &ties,
                                      std::string &reason) {
  return reduceTies(*this, getAxes(), getKeepdims(), value, dim, ties, reason,
                    /*sums=*/false);
}

//===----------------------------------------------------------------------===//
// Matmul, norms, softmax, loss
//===----------------------------------------------------------------------===//

/// [..., M, K] x [..., K, N] -> [..., M, N]: M ties lhs and result, N rhs
/// and result, and K the two operands (a contraction over zeros is exact).
LogicalResult MatmulOp::getPadTies(Value value, int64_t dim,
                                   SmallVectorImpl<PadTie> &ties,
                                   std::string &reason) {
  int64_t rl = rankOf(getLhs()), rr = rankOf(getRhs()),
          ro = rankOf(getResult());
  int64_t lhsM = getTransposeLhs() ? rl - 1 : rl - 2;
  int64_t lhsK = getTransposeLhs() ? rl - 2 : rl - 1;
  int64_t rhsK = getTransposeRhs() ? rr - 1 : rr - 2;
  int64_t rhsN = getTransposeRhs() ? rr - 2 : rr - 1;
  enum { M, N, K, Batch } role = Batch;
  if (value == getResult())
    role = dim == ro - 2 ? M : dim == ro - 1 ? N : Batch;
  else if (value == getLhs() && value != getRhs())
    role = dim == lhsM ? M : dim == lhsK ? K : Batch;
  else if (value == getRhs() && value != getLhs())
    role = dim == rhsN ? N : dim == rhsK ? K : Batch;
  else
    return refuse(reason, "a matmul of a value with itself");
  switch (role) {
  case M:
    ties.push_back({value == getLhs() ? getResult() : getLhs(),
                    value == getLhs() ? ro - 2 : lhsM});
    return success();
  case N:
    ties.push_back({value == getRhs() ? getResult() : getRhs(),
                    value == getRhs() ? ro - 1 : rhsN});
    return success();
  case K:
    ties.push_back(value == getLhs() ? PadTie{getRhs(), rhsK}
                                     : PadTie{getLhs(), lhsK});
    return success();
  case Batch:
    break;
  }
  return refuse(reason, "a batch dim of a matmul (not built)");
}

LogicalResult LayerNormOp::getPadTies(Value value, int64_t dim,
                                      SmallVectorImpl<PadTie> &ties,
                                      std::string &reason) {
  return normTies(*this, getInput(), {getWeight(), getBias()}, getAxis(),
                  value, dim, ties, reason, "layer_norm normalizes");
}

LogicalResult RmsNormOp::getPadTies(Value value, int64_t dim,
                                    SmallVectorImpl<PadTie> &ties,
                                    std::string &reason) {
  return normTies(*this, getInput(), {getWeight()}, getAxis(), value, dim,
                  ties, reason, "rms_norm normalizes");
}

LogicalResult SoftmaxOp::getPadTies(Value value, int64_t dim,
                                    SmallVectorImpl<PadTie> &ties,
                                    std::string &reason) {
  return softmaxTies(*this, getAxis(), value, dim, ties, reason, "softmax");
}

LogicalResult LogSoftmaxOp::getPadTies(Value value, int64_t dim,
                                       SmallVectorImpl<PadTie> &ties,
                                       std::string &reason) {
  return softmaxTies(*this, getAxis(), value, dim, ties, reason,
                     "log_softmax");
}

/// The class dim is masked by `classes`; the position dims are the
/// targets', which the input fixes.
LogicalResult CrossEntropyOp::getPadTies(Value value, int64_t dim,
                                         SmallVectorImpl<PadTie> &ties,
                                         std::string &reason) {
  if (value == getLogits() && dim == rankOf(value) - 1)
    return success();
  return refuse(reason, "fixed by the input (the targets' shape)");
}

void CrossEntropyOp::notePadding(Value operand, int64_t dim,
                                 int64_t realSize) {
  if (operand == getLogits() && dim == rankOf(operand) - 1 && !getClasses())
    setClassesAttr(IntegerAttr::get(IntegerType::get(getContext(), 64),
                                    realSize));
}

} // namespace mlir::llmc
