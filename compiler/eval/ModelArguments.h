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

#include "compiler/eval/RefTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <optional>
#include <string>

namespace llmc {

/// Input tensors by `llmc.input` name.
using InputMap = std::map<std::string, RefTensor>;

/// `n` samples of N(0, 1) for the parameter `name` under `seed`. The stream
/// is splitmix64 seeded with seed ^ fnv1a64(name); each pair of 53-bit
/// uniforms (u1, u2) gives sqrt(-2 ln(1 - u1)) * (cos, sin)(2 pi u2)
/// (Box-Muller). Deterministic across platforms that have IEEE double and a
/// correctly rounded libm for log/sqrt/cos/sin within the usual ulp.
std::vector<double> normalSamples(uint64_t seed, const std::string &name,
                                  int64_t n);

/// Samples [begin, begin + count) of that stream (begin even) into `out`:
/// splitmix64's state after k draws is its seed plus k times its increment,
/// so any range is computed without the ones before it (parallel fills).
void normalSampleRange(uint64_t seed, const std::string &name, int64_t begin,
                       int64_t count, double *out);

/// The initial value of parameter argument `index`: its `llmc.init`
/// attribute, or its `llmc.init_rule` ("normal(STD)", "zeros", "ones").
std::optional<RefTensor> initialParameter(mlir::func::FuncOp func,
                                          unsigned index, uint64_t seed,
                                          std::string &error);

/// The `llmc.real_shape` of argument `index`: the model's own shape of a
/// parameter that llmc-pad-shapes padded (docs/padding.md).
std::optional<std::vector<int64_t>> realShapeOf(mlir::func::FuncOp func,
                                                unsigned index);

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
