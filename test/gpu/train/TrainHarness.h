//===- TrainHarness.h - Compiled steps on the GPU vs reference --*- C++ -*-===//
//
// Loads a fixture model, runs the training pipeline and the compiler on it
// (compiler/Compile.h) and gives the pieces the GPU tests compare: the
// @train_step the reference evaluator runs, the plan the executor runs, and
// the arguments both get (parameters from the same llmc.init_rule draws,
// random token ids below the vocabulary, a learning rate, zero state). An
// eval fixture compiles @forward through the eval pipeline instead.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TEST_GPU_TRAIN_TRAINHARNESS_H
#define LLMC_TEST_GPU_TRAIN_TRAINHARNESS_H

#include "compiler/Compile.h"
#include "compiler/eval/RefTensor.h"
#include "runtime/CudaApi.h"
#include "runtime/Executor.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

/// Skips the current test with "no CUDA GPU: <why>" when there is none.
#define LLMC_REQUIRE_GPU()                                                     \
  do {                                                                         \
    std::string llmcWhy_;                                                      \
    if (!::llmc::gpuAvailable(llmcWhy_))                                       \
      GTEST_SKIP() << "no CUDA GPU: " << llmcWhy_;                             \
  } while (0)

/// Skips the current test unless $LLMC_BENCH_ONNX names a model (GPT-2
/// 124M from bench/make_gpt2_onnx.py); sets the std::string `model` to it.
#define LLMC_REQUIRE_BENCH_ONNX(model)                                         \
  do {                                                                         \
    const char *llmcBench_ = std::getenv("LLMC_BENCH_ONNX");                   \
    if (!llmcBench_ || !*llmcBench_)                                           \
      GTEST_SKIP() << "set LLMC_BENCH_ONNX to an ONNX model "                  \
                      "(bench/make_gpt2_onnx.py makes one)";                   \
    model = llmcBench_;                                                        \
  } while (0)

namespace llmc::test {

/// $LLMC_TEST_MODELS/<file>, else the source tree's test/models/<file>.
std::string modelPath(const std::string &file);

/// Device 0's primary context, retained and current, for tests that
/// measure the device around an executor (release it when done).
struct PrimaryContext {
  const cuda::DriverApi *cu = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;
};
::testing::AssertionResult retainPrimaryContext(PrimaryContext &out);

struct Fixture {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  CompiledModel compiled;
  bool eval = false;
  mlir::func::FuncOp train();
  /// The compiled function: @train_step, or @forward of an eval fixture.
  mlir::func::FuncOp step();
};

/// Loads `file` and compiles its training step (`eval`: its eval plan) for
/// this machine's GPU (or sm_90). On failure returns false with the
/// diagnostics in `error`.
bool compileFixture(const std::string &file, const OptimizerConfig &optimizer,
                    Fixture &out, std::string &error, bool eval = false);

/// Every argument of the compiled function: parameters as the plan
/// initialized them, token inputs uniform in [0, vocab), `lr`, zero state.
std::vector<RefTensor> stepArguments(Fixture &f, uint64_t seed, double lr);

/// Writes the data inputs and lr of `args` into the executor's arena.
Status writeInputs(Executor &exec, Fixture &f,
                   const std::vector<RefTensor> &args);

/// Reads every result of the compiled function from where the plan keeps it
/// after a step.
Status readResults(Executor &exec, Fixture &f, std::vector<RefTensor> &out);

/// Relative L2 error of floats (integers: 0 when equal, else infinity).
double relativeError(const RefTensor &gpu, const RefTensor &ref);

/// AdamW's first step from zero moments: the reference gradient is
/// m' / (1 - beta1). Where |g| < 1e-4 max|g| (an exactly zero gradient such
/// as the key bias's, softmax being shift invariant) the step is rounding
/// noise divided by epsilon in either computation, so those elements are only
/// checked to move by at most lr (1 + wd |p|); the others give `error`, the
/// relative L2 error of the updated parameter.
struct AdamWParamCheck {
  double error = 0;
  int64_t noiseElements = 0;
  bool noiseWithinLr = true;
};
AdamWParamCheck checkAdamWParam(const RefTensor &gpu, const RefTensor &ref,
                                const RefTensor &before, const RefTensor &mRef,
                                const OptimizerConfig &opt, double lr);

/// "loss", "w" (llmc.next of a param), "adamw.m:w", ...: a result's name.
std::string resultName(Fixture &f, unsigned i);

} // namespace llmc::test

#endif // LLMC_TEST_GPU_TRAIN_TRAINHARNESS_H
