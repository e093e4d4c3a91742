//===- MatmulEmitters.cpp - matmul as a cuBLASLt problem ------------------===//
//
// matmul is a library call, not a generated kernel: it lowers to a
// MatmulStep (runtime/Plan.h), row-major D = op(A) @ op(B) per batch, with
// m, n, k, the transposes and the batch strides taken from the op:
//
//   lhs [..., M, K] @ rhs [K, N]       the lhs batch folds into m (one GEMM)
//   lhs [b..., M, K] @ rhs [b..., K, N] batch = prod(b), dense strides
//   one side without batch dims         its stride is 0 (a shared weight)
//
// Batch dims that broadcast partially ([2, 1] against [1, 3]) have no single
// stride and are an error for now; the buffer names are the plan builder's.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Emitters.h"

#include "dialects/llmc/LlmcOps.h"

#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

LogicalResult emitMatmul(MatmulOp op, const EmitContext &, OpLowering &out) {
  Shape a = shapeOf(op.getLhs()), b = shapeOf(op.getRhs()),
        d = shapeOf(op.getResult());
  Type et = elementTypeOf(op.getLhs());
  if (!isFloatType(et))
    return op.emitError("codegen: matmul of ")
           << et << " is not supported (cuBLASLt takes float operands)";
  bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
  MatmulStep mm;
  mm.transA = ta;
  mm.transB = tb;
  mm.m = d[d.size() - 2];
  mm.n = d.back();
  mm.k = ta ? a[a.size() - 2] : a.back();
  mm.typeA = *dtypeOf(et);
  mm.typeB = *dtypeOf(elementTypeOf(op.getRhs()));
  mm.typeC = mm.typeD = *dtypeOf(elementTypeOf(op.getResult()));
  // --precision tf32 (llmc-lower-precision marks the module): every f32
  // GEMM of the step on TF32 tensor cores, as the evaluator models it.
  if (auto module = op->getParentOfType<ModuleOp>())
    if (auto p = module->getAttrOfType<StringAttr>("llmc.precision"))
      mm.tf32 = p.getValue() == "tf32" && mm.typeA == DType::F32 &&
                mm.typeB == DType::F32;

  Shape batchA(a.begin(), a.end() - 2), batchB(b.begin(), b.end() - 2),
      batchD(d.begin(), d.end() - 2);
  int64_t nA = numElements(batchA), nB = numElements(batchB),
          nD = numElements(batchD);
  if (nB == 1 && !ta) {
    // Rows of every lhs batch are consecutive: one [nD * M, K] GEMM.
    mm.m *= nD;
    mm.batch = 1;
  } else {
    mm.batch = nD;
    auto stride = [&](int64_t count, int64_t matrix) -> std::optional<int64_t> {
      if (count == 1)
        return 0;
      if (count == nD)
        return matrix;
      return std::nullopt;
    };
    auto sa = stride(nA, a[a.size() - 1] * a[a.size() - 2]);
    auto sb = stride(nB, b[b.size() - 1] * b[b.size() - 2]);
    if (!sa || !sb)
      return op.emitError("codegen: matmul batch dims ")
             << dimsString(batchA) << " and " << dimsString(batchB)
             << " broadcast partially; broadcast_to one operand first";
    mm.strideA = *sa;
    mm.strideB = *sb;
  }
  out.kind = OpLowering::Kind::Matmul;
  out.matmul = mm;
  return success();
}

} // namespace

void registerMatmulEmitters(EmitterTable &t) {
  addEmitter<MatmulOp>(t, emitMatmul);
}

} // namespace llmc::codegen
