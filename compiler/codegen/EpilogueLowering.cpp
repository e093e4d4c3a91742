//===- EpilogueLowering.cpp - A group with a cuBLASLt epilogue ------------===//
//
// A group that `llmc-fuse-epilogues` named in `llmc.epilogue`
// (passes/MatmulEpilogues.h) is one MatmulStep whose epilogue computes the
// group's other ops; the buffers it reads or writes besides A, B and D are
// LoweredOp::bias, ::auxIn and the group's second result (aux output or
// bias gradient), which PlanBuilder names in the step. The ops are checked
// against the name: a group that does not match is an error at the group,
// never a silently different computation.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/FunctionLowering.h"

#include "passes/MatmulEpilogues.h"

using namespace mlir;

namespace llmc::codegen {

namespace {

/// The matmul, then the ops `kind` takes, in group order, or an empty list.
SmallVector<Operation *> opsOf(mlir::llmc::KernelOp group) {
  SmallVector<Operation *> ops;
  for (Operation &op : group.getGroupOps())
    ops.push_back(&op);
  return ops;
}

/// As FunctionLowering.cpp names ops: `<mnemonic>_<n>`.
std::string opName(Operation &op, unsigned &index) {
  StringRef full = op.getName().getStringRef();
  return full.substr(full.find('.') + 1).str() + "_" + std::to_string(index++);
}

bool isTanh(mlir::llmc::GeluApproximation a) {
  return a == mlir::llmc::GeluApproximation::tanh;
}

/// A row sum (reduce_sum over every axis but the last) of `input`.
bool isRowSum(Operation *op, Value input) {
  auto r = dyn_cast<mlir::llmc::ReduceSumOp>(op);
  if (!r || r.getInput() != input || r.getKeepdims())
    return false;
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  if (static_cast<int64_t>(r.getAxes().size()) != rank - 1)
    return false;
  for (auto [i, axis] : llvm::enumerate(r.getAxes()))
    if (axis != static_cast<int64_t>(i))
      return false;
  return true;
}

} // namespace

FailureOr<LoweredOp> lowerEpilogueGroup(mlir::llmc::KernelOp group,
                                        const CodegenOptions &options,
                                        unsigned &index) {
  using mlir::llmc::epilogue::Kind;
  std::optional<Kind> kind = mlir::llmc::epilogue::of(group);
  auto bad = [&](const Twine &why) {
    return group.emitError("codegen: group with llmc.epilogue ")
           << group->getAttr(mlir::llmc::epilogue::kAttr) << ": " << why;
  };
  if (!kind)
    return bad("not an epilogue codegen knows (gelu, gelu_grad, "
               "bias_grad_lhs, bias_grad_rhs)");
  SmallVector<Operation *> ops = opsOf(group);
  auto matmul = dyn_cast<mlir::llmc::MatmulOp>(ops.front());
  if (!matmul)
    return bad("the group does not start with a matmul");
  Value product = matmul.getResult();
  ValueRange yielded = group.getYield()->getOperands();

  LoweredOp out;
  out.op = matmul;
  out.name = opName(*matmul, index);
  index += ops.size() - 1; // later names stay the unfused ones
  out.operands = {matmul.getLhs(), matmul.getRhs()};
  FailureOr<OpLowering> lowering = lowerOp(matmul, options, out.name);
  if (failed(lowering))
    return failure();
  out.lowering = std::move(*lowering);
  std::optional<MatmulStep> &mm = out.lowering.matmul;
  if (!mm || mm->batch != 1 || mm->typeD == DType::F32 || mm->n % 8 != 0)
    return bad("the matmul is not one bf16/f16 GEMM with n a multiple of 8");

  switch (*kind) {
  case Kind::Gelu: {
    // matmul [, add bias], gelu tanh; yields gelu [, the pre-activation].
    Value pre = product;
    size_t next = 1;
    if (ops.size() == 3) {
      auto add = dyn_cast<mlir::llmc::AddOp>(ops[1]);
      if (!add || (add.getLhs() == product) == (add.getRhs() == product))
        return bad("the op between the matmul and the gelu is not its bias "
                   "add");
      out.bias = add.getLhs() == product ? add.getRhs() : add.getLhs();
      if (cast<RankedTensorType>(out.bias.getType()).getShape().back() !=
          mm->n)
        return bad("the bias is not an [n] row vector");
      pre = add.getResult();
      next = 2;
    }
    auto gelu = ops.size() == next + 1
                    ? dyn_cast<mlir::llmc::GeluOp>(ops[next])
                    : nullptr;
    if (!gelu || gelu.getInput() != pre || !isTanh(gelu.getApproximation()) ||
        yielded.empty() || yielded[0] != gelu.getResult() ||
        yielded.size() > 2 || (yielded.size() == 2 && yielded[1] != pre))
      return bad("expected gelu tanh of the product (and bias), yielding "
                 "the gelu and optionally its input");
    mm->epilogue = MatmulEpilogue::Gelu;
    break;
  }
  case Kind::GeluGrad: {
    auto grad = ops.size() >= 2 ? dyn_cast<mlir::llmc::GeluGradOp>(ops[1])
                                : nullptr;
    if (!grad || grad.getGrad() != product || grad.getInput() == product ||
        !isTanh(grad.getApproximation()) || ops.size() > 3 ||
        (ops.size() == 3 && !isRowSum(ops[2], grad.getResult())) ||
        yielded.size() != ops.size() - 1 || yielded[0] != grad.getResult() ||
        (ops.size() == 3 && yielded[1] != ops[2]->getResult(0)))
      return bad("expected gelu_grad tanh %pre, <product> and optionally "
                 "its row sum, both yielded");
    out.auxIn = grad.getInput();
    mm->epilogue = MatmulEpilogue::GeluGrad;
    break;
  }
  case Kind::BiasGradLhs:
  case Kind::BiasGradRhs: {
    bool lhs = *kind == Kind::BiasGradLhs;
    if (ops.size() != 2 || !mm->transA || mm->transB ||
        yielded.size() != 2 || yielded[0] != product ||
        yielded[1] != ops[1]->getResult(0))
      return bad("expected a matmul {transpose_lhs} and a row sum, both "
                 "yielded");
    // The sum reads the operand or the tensor it is a [rows, n] view of.
    Value c = ops[1]->getNumOperands() == 1 ? ops[1]->getOperand(0) : Value();
    Value operand = lhs ? matmul.getLhs() : matmul.getRhs();
    auto view = operand.getDefiningOp<mlir::llmc::ReshapeOp>();
    if (!c || !isRowSum(ops[1], c) ||
        (c != operand && (!view || view.getInput() != c)))
      return bad(lhs ? "the row sum does not read the matmul's lhs"
                     : "the row sum does not read the matmul's rhs");
    mm->epilogue = lhs ? MatmulEpilogue::BiasGradA : MatmulEpilogue::BiasGradB;
    break;
  }
  }
  for (Value r : group.getResults())
    out.results.push_back(r);
  return out;
}

} // namespace llmc::codegen
