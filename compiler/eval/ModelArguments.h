//===- ModelArguments.h - Argument tensors of a model function ----*- C++
//-*-===//
//
// Builds the arguments of a model's @forward (docs/model-ir.md) for the
// reference evaluator: parameters from their `llmc.init` value or their
// `llmc.init_rule`, data inputs from a batch file (`--inputs`: JSON nested
// lists keyed by input name, or .safetensors). Errors are strings that name
// the argument, for the CLI to print.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_EVAL_MODELARGUMENTS_H
#define LLMC_COMPILER_EVAL_MODELARGUMENTS_H

#include "compiler/common/ParameterInit.h"
#include "compiler/eval/RefTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <optional>
#include <string>

namespace llmc {

/// Input tensors by `llmc.input` name.
using InputMap = std::map<std::string, RefTensor>;

/// The initial value of parameter argument `index`: its `llmc.init`
/// attribute, or its `llmc.init_rule` ("normal(STD)", "zeros", "ones"),
/// drawn as ParameterInit.h says (realShapeOf, normalSamples are there).
std::optional<RefTensor> initialParameter(mlir::func::FuncOp func,
                                          unsigned index, uint64_t seed,
                                          std::string &error);

/// Every argument of `func`: parameters from their init, inputs from
/// `inputs` (each checked against the argument's type; an input the
/// function does not have is an error too).
std::optional<std::vector<RefTensor>> buildArguments(mlir::func::FuncOp func,
                                                     const InputMap &inputs,
                                                     uint64_t seed,
                                                     std::string &error);

/// The kinds and shapes the data inputs of `func` expect, by input name;
/// an input of a type the evaluator cannot hold (dynamic shape, unsupported
/// element type) is an error.
std::optional<std::map<std::string, RefTensor>>
expectedInputs(mlir::func::FuncOp func, std::string &error);

/// Reads a batch file: `.safetensors`, or JSON `{"name": nested lists}`.
/// `expected` (from expectedInputs) gives each input's element kind, which
/// JSON numbers need; values are converted to it. Shapes are not checked
/// here but by buildArguments.
std::optional<InputMap>
readInputFile(const std::string &path,
              const std::map<std::string, RefTensor> &expected,
              std::string &error);

} // namespace llmc

#endif // LLMC_COMPILER_EVAL_MODELARGUMENTS_H
