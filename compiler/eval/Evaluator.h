//===- Evaluator.h - The CPU reference evaluator ------------------*- C++
//-*-===//
//
// Executes a func.func of llmc ops on host tensors. It is the numerics oracle
// of llmc: every op computes in double and rounds its result to the declared
// element type, deterministically, one op at a time in program order.
// docs/reference-evaluator.md states the conventions (fully masked attention
// rows, integer arithmetic, rounding).
//
// Errors (an op without a kernel, a dynamic shape, an out-of-range index, an
// argument of the wrong type) are emitted as MLIR diagnostics at the
// offending op's location, and evaluate() returns failure.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_EVAL_EVALUATOR_H
#define LLMC_COMPILER_EVAL_EVALUATOR_H

#include "compiler/eval/RefTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LogicalResult.h"

#include <functional>
#include <vector>

namespace llmc {

/// Runs `func` on `args` (one per function argument, of the argument's
/// element kind and shape) and returns one tensor per function result.
mlir::FailureOr<std::vector<RefTensor>>
evaluate(mlir::func::FuncOp func, llvm::ArrayRef<RefTensor> args);

/// Called with each op the evaluator computed and its results, in program
/// order (the ops inside kernel groups one by one); returning true stops
/// the evaluation, which then returns no results (--detect-anomaly).
using EvalObserver = std::function<bool(mlir::Operation &op,
                                        const std::vector<RefTensor> &results)>;

/// evaluate(), showing each op's results to `observer` (may be null).
mlir::FailureOr<std::vector<RefTensor>>
evaluate(mlir::func::FuncOp func, llvm::ArrayRef<RefTensor> args,
         const EvalObserver &observer);

/// The element kind of an MLIR element type, if the evaluator supports it.
std::optional<ElementKind> kindOf(mlir::Type elementType);

/// True when the evaluator has a kernel for ops named `opName`
/// ("llmc.add").
bool hasKernel(llvm::StringRef opName);

} // namespace llmc

#endif // LLMC_COMPILER_EVAL_EVALUATOR_H
