//===- TrainStepFixture.h - Tiny training steps for evaluator tests -----===//
//
// The step and random arguments that the fusion and rematerialization tests
// evaluate: both compare two forms of the same @train_step on the reference
// evaluator, so both need it built the same way and fed the same ranges.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TEST_UNIT_TRAINSTEPFIXTURE_H
#define LLMC_TEST_UNIT_TRAINSTEPFIXTURE_H

#include "compiler/eval/RefTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llmc::test {

/// gpt2-tiny's @train_step after the training pipeline of `llmc compile
/// --precision PRECISION` (before kernel formation); null if it fails.
mlir::OwningOpRef<mlir::ModuleOp> gpt2TinyStep(mlir::MLIRContext &context,
                                               const std::string &precision);

/// `llmc recipe llama --size tiny` at batch 2, seq 16 (2 layers, d 64: RMS
/// norms, RoPE, SwiGLU, GQA), imported and put through the same training
/// pipeline; null if it fails.
mlir::OwningOpRef<mlir::ModuleOp> llamaTinyStep(mlir::MLIRContext &context,
                                                const std::string &precision);

/// Random arguments in the ranges the step expects: token ids below the
/// vocabulary, step 1, a small positive lr and AdamW v, zero m.
std::vector<RefTensor> stepArguments(mlir::func::FuncOp func, uint64_t seed);

/// Same shape, same integers, and every float the same bits (NaN equal to
/// NaN, -0 not equal to +0).
bool bitwiseEqual(const RefTensor &a, const RefTensor &b);

} // namespace llmc::test

#endif // LLMC_TEST_UNIT_TRAINSTEPFIXTURE_H
