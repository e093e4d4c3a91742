//===- GpuHarness.h - GPU run vs the reference ------------------*- C++ -*-===//
//
// Lowers a func.func with the code generator, runs the unplanned plan on the
// GPU through the runtime's executor and the same function in the CPU
// reference evaluator, on the same random arguments, and compares every
// result: relative L2 error for floats (NaNs must coincide), exact equality
// for integers and i1.
//
// Arguments are random and fresh each run: floats N(0, 1) times
// `floatScale`, integers uniform in [lo, hi) from the argument's
// `gpu_test.range = array<i64: lo, hi>` attribute (default [0, 8)), i1
// fair coins. Float arguments may override that with `gpu_test.scale = S`
// (N(0, S)), `gpu_test.abs` (absolute values) or `gpu_test.zeros` (an
// optimizer's first-step state). The seed is printed; LLMC_TEST_SEED=N
// repeats a run.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TEST_GPU_CODEGEN_GPUHARNESS_H
#define LLMC_TEST_GPU_CODEGEN_GPUHARNESS_H

#include "compiler/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include "compiler/Pipeline.h"
#include "runtime/Executor.h"

#include <string>

/// Skips the current test with "no CUDA GPU: <why>" when there is none.
#define LLMC_REQUIRE_GPU()                                                     \
  do {                                                                         \
    std::string llmcWhy_;                                                      \
    if (!::llmc::gpuAvailable(llmcWhy_))                                       \
      GTEST_SKIP() << "no CUDA GPU: " << llmcWhy_;                             \
  } while (0)

namespace llmc::test {

struct Tolerance {
  double f32 = 1e-5;
  double low = 1e-2; // bf16 and f16 results
};

/// Parses `mlir`, runs its @forward on the GPU and in the reference and
/// checks every result (gtest EXPECTs). `floatScale` scales float inputs.
void checkAgainstReference(const std::string &mlir, Tolerance tol = {},
                           double floatScale = 1.0);

/// The same for a function that is already parsed (a @train_step that the
/// test built with passes).
void checkFunctionAgainstReference(mlir::func::FuncOp func, Tolerance tol = {},
                                   double floatScale = 1.0);

/// Needs a GPU. The diagnostic for a step whose results are wrong (a NaN
/// the reference does not have): runs `func`'s plan once, unplanned (every
/// value keeps its own buffer), and the reference op by op, and compares
/// every value a launch wrote with the reference's, in program order. Each
/// line is `[ value k ] <op> (origin) result #j: ...`; the first one that
/// fails is printed again as `[ first divergence ]` at the end.
void checkEveryValueAgainstReference(mlir::func::FuncOp func,
                                     Tolerance tol = {},
                                     double floatScale = 1.0);

/// Needs a GPU: the best of `replays` CUDA-graph replays of @forward in
/// milliseconds, on random arguments (no reference run), with `fusion`;
/// negative and a gtest failure when something fails.
double bestReplayMs(const std::string &mlir, int replays = 10,
                    const FusionConfig &fusion = {});

/// Per launch step of @forward's plan: its label and its time in ms, as the
/// differences of the best replays of the plan cut after each step (the
/// runtime times whole runs only). Empty and a gtest failure on errors.
std::vector<std::pair<std::string, double>>
stepReplayMs(const std::string &mlir, int replays = 10,
             const FusionConfig &fusion = {});

/// Needs a GPU: the device's copy bandwidth in GB/s (bytes read plus
/// written, Executor::measureCopyBandwidth), measured once per process; 0
/// after a failure.
double measuredCopyGBs();

/// Needs a GPU: runs `function` of `mlir` twice on the same random
/// arguments, with every fusion (docs/fusion.md) and with none, and expects
/// fewer launches fused and every result bitwise equal (fused kernels round
/// where the one-op kernels do), or within `tol` where `bitwise` is false.
void checkFusedMatchesUnfused(const std::string &mlir,
                              const std::string &function = "forward",
                              double floatScale = 1.0, bool bitwise = true,
                              Tolerance tol = {});

/// The same with two given fusion configurations: `with` must take fewer
/// launches than `without` (as many where `fewerLaunches` is false: work
/// that moves out of a launch `--explain` counts without removing one, as a
/// bias sum out of a cuBLASLt BGRADA epilogue), and the results must match
/// as above.
void checkFusionConfigsMatch(const std::string &mlir,
                             const std::string &function,
                             const FusionConfig &with,
                             const FusionConfig &without,
                             double floatScale = 1.0, bool bitwise = true,
                             Tolerance tol = {}, bool fewerLaunches = true);

/// Needs a GPU: runs `function` of `mlir` twice on the same random
/// arguments, with `fusion`, the environment variable `var` set to `a` and
/// then to `b` (unset for a null), and expects every result bitwise equal:
/// for the code generator's measurement switches (LLMC_CE_ROW_CACHE), which
/// choose between kernels that must round alike.
void checkEnvVariantsBitwiseEqual(const std::string &mlir, const char *var,
                                  const char *a, const char *b,
                                  const FusionConfig &fusion = {},
                                  const std::string &function = "forward");

/// Needs no GPU: lowers @forward and compiles every kernel with NVRTC for
/// sm_90; also runs the reference on random arguments, so that the IR is
/// checked to be valid for both.
void checkCompiles(const std::string &mlir);
void checkFunctionCompiles(mlir::func::FuncOp func);

/// The text of the test model `file`: $LLMC_TEST_MODELS/<file>, else the
/// source tree's test/models/<file>; "" when it cannot be read.
std::string readTestModel(const std::string &file);

/// Marks the arguments of a @train_step (gpt2-tiny's) for the harness:
/// token ids `idx` and `targets` in [0, 512), the state `step` 1, AdamW's
/// m = 0 and v = |N(0, 0.01)|, the learning rate |N(0, 0.01)|, about 1e-2
/// (CodegenGradGpuTest.cpp's gpt2TinyTrainStep says why v is not 0).
void markTrainStepArguments(mlir::func::FuncOp trainStep);

} // namespace llmc::test

#endif // LLMC_TEST_GPU_CODEGEN_GPUHARNESS_H
