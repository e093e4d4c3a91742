//===- TrainingUtils.h - Helpers of the training-IR passes ------*- C++ -*-===//
//
// Reading and rewriting the model-IR contract (docs/model-ir.md,
// docs/training-ir.md) that llmc-append-loss, llmc-autodiff and
// llmc-append-optimizer share: argument roles, output names, and replacing a
// function's results.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_TRAININGUTILS_H
#define LLMC_PASSES_TRAININGUTILS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::llmc {

/// `llmc.param` of argument `i`, or "" for inputs.
StringRef paramName(func::FuncOp func, unsigned i);

/// True for float parameters without `llmc.frozen`: the ones that get a
/// gradient and an optimizer update.
bool isTrainable(func::FuncOp func, unsigned i);

/// `llmc.output` of result `i`, or "".
StringRef outputName(func::FuncOp func, unsigned i);

/// The function named `name`, or an error on the module naming `pass` and
/// what it needs.
FailureOr<func::FuncOp> lookupFunction(ModuleOp module, StringRef name,
                                       StringRef pass, StringRef hint);

/// Replaces the terminator's operands by `values` and the results' types
/// and attributes accordingly (`attrs` has one entry per value).
void setResults(func::FuncOp func, ValueRange values,
                ArrayRef<DictionaryAttr> attrs);

/// Appends an argument of `type` with `attrs`, returning it.
BlockArgument appendArgument(func::FuncOp func, Type type, DictionaryAttr attrs,
                             Location loc);

} // namespace mlir::llmc

#endif // LLMC_PASSES_TRAININGUTILS_H
