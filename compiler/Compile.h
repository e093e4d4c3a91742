//===- Compile.h - From a loaded model to a runnable plan -------*- C++ -*-===//
//
// What `llmc compile` does and `llmc train --device cuda` does in memory:
// the training pipeline (Pipeline.h), lowering of @train_step to kernels and
// cuBLASLt calls, the memory-planned plan (codegen/PlanBuilder.h) and NVRTC
// compilation of every kernel in parallel through the on-disk cache. The
// result is the plan that a bundle holds, plus the numbers the command
// reports.
//
// An eval plan (CompileConfig::eval, `llmc compile --eval`) takes the same
// path from the eval pipeline's @forward instead: forward and loss, no
// autodiff, no optimizer, the same input buffers and `loss` slot.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_COMPILE_H
#define LLMC_COMPILER_COMPILE_H

#include "compiler/FusionExplain.h"
#include "compiler/Train.h"
#include "compiler/codegen/PlanBuilder.h"
#include "runtime/DeviceMemory.h"

namespace llmc {

struct CompileConfig {
  std::string name;  // plan name (the model's file stem)
  std::string arch;  // "" = the GPU's when there is one, else sm_90
  uint64_t seed = 0; // parameter init (llmc.init_rule normal draws)
  bool compileKernels = true;
  std::string cacheDir; // "" = KernelCache::defaultDir()
  /// Whole compiles through the compile cache (CompileCache.h) in cacheDir;
  /// false: only kernels are cached (`--no-compile-cache`).
  bool compileCache = true;
  OptimizerConfig optimizer;
  PrecisionConfig precision;
  /// Activation checkpointing (`--memory-budget`, `--recompute`); training
  /// plans only.
  RecomputeConfig recompute;
  /// Forward and loss only: @forward through the eval pipeline; the plan
  /// has a `loss` slot and no `lr`, gradients or optimizer state.
  bool eval = false;
  /// Which fusions run (docs/fusion.md; `--no-fuse`).
  FusionConfig fusion;
  /// Fill CompiledModel::explanation (`--explain`, `--explain-json`).
  bool explain = false;
  /// Test only: llmc-inject-nan's op (docs/trainer.md).
  std::string injectNanOp;
};

struct CompileReport {
  bool eval = false; // an eval plan: FLOPs of the forward only, no updates
  std::string arch, nvrtcVersion;
  std::string precision = "fp32";
  size_t kernels = 0, matmuls = 0, memsets = 0, cacheHits = 0;
  size_t launches = 0; // per step: kernel launches + cuBLASLt calls
  size_t inPlaceUpdates = 0, copiedUpdates = 0;
  uint64_t arenaBytes = 0, persistentBytes = 0, unplannedBytes = 0;
  /// The arena plus the runtime's fixed costs, by name (DeviceMemory.h):
  /// what loading the plan and its first step take on the GPU.
  DeviceMemoryPlan memory;
  int64_t params = 0;     // elements of every llmc.param argument
  int64_t tokens = 0;     // elements of the token-id input (0: none)
  int64_t vocab = 0;      // classes of the cross-entropy loss (0: none)
  double modelFlops = 0;  // 6 (eval: 2) * params * tokens + attention
  double matmulFlops = 0; // 2 m n k batch over the plan's cuBLASLt calls
  double pipelineSeconds = 0, codegenSeconds = 0, nvrtcSeconds = 0;
  /// Set by the caller: reading the model, and writing the bundle.
  double importSeconds = 0, writeSeconds = 0;
  // llmc-pad-shapes' decisions: "from -> to, +FLOPs: why (params)".
  std::vector<std::string> padding;
  // llmc-rematerialize's decisions (recomputeLines without the values).
  std::vector<std::string> recompute;
  // llmc-chunk-classifier's decision (ClassifierChunks.h), when the step
  // has a classifier.
  std::vector<std::string> classifier;
  // --attention-backend's decision (AttentionBackend.h), with auto's times.
  std::vector<std::string> attention;
};

struct CompiledModel {
  codegen::PlannedFunction planned;
  CompileReport report;
  FusionExplanation explanation; // with CompileConfig::explain
};

/// Runs the pipeline on a module that has @forward (a module that already
/// has @train_step is lowered as it is), then lowers, plans and compiles
/// @train_step; with config.eval, the eval pipeline and @forward. Errors are
/// emitted as diagnostics (at the op that caused them when there is one) and
/// the result is failure.
mlir::FailureOr<CompiledModel> compileModule(mlir::ModuleOp module,
                                             const CompileConfig &config);

/// The classes of the first cross-entropy loss in `func` (0: none): the
/// vocabulary that token ids and targets must stay below, checked when the
/// data is opened on every device (DataLoader::open).
int64_t crossEntropyClasses(mlir::func::FuncOp func);

/// One line per dim llmc-pad-shapes padded or left alone for a reason
/// (the module's llmc.padding): "from -> to, +FLOPs: why (params)".
std::vector<std::string> paddingLines(mlir::ModuleOp module);

/// llmc-rematerialize's decisions (the module's llmc.recompute): per
/// function, what is recomputed by class and the planned peak before and
/// after; with `values`, one line per recomputed value (--explain).
std::vector<std::string> recomputeLines(mlir::ModuleOp module, bool values);

/// The report `llmc compile` prints, one fact per line.
std::string formatReport(const CompileReport &report);

/// `sm_XY` or `sm_XYa`; anything else gets an error naming what is expected.
bool isValidArch(const std::string &arch, std::string &error);

/// The optimizer options shared by `llmc compile` and `llmc train`; consumes
/// args[i] (and its value) when it is one, setting `error` when malformed.
bool parseOptimizerOption(const Args &args, size_t &i, OptimizerConfig &opt,
                          std::string &error);
extern const char *const kOptimizerOptionsHelp;

/// `--precision fp32|bf16` (and the test-only `--precision-mutation`),
/// shared by compile, train and verify.
bool parsePrecisionOption(const Args &args, size_t &i, PrecisionConfig &p,
                          std::string &error);
extern const char *const kPrecisionOptionsHelp;

/// `--memory-budget SIZE` and `--recompute all` (RecomputeOptions.cpp),
/// shared by compile, train and verify.
bool parseRecomputeOption(const Args &args, size_t &i, RecomputeConfig &r,
                          std::string &error);
extern const char *const kRecomputeOptionsHelp;

/// The JIT's `memory_budget`: "" (none), "all" (every saved activation),
/// or what --memory-budget takes (only a fraction asks for the GPU).
bool recomputeFromText(const std::string &text, RecomputeConfig &r,
                       std::string &error);

/// A size for --memory-budget: bytes, KiB/MiB/GiB/TiB, KB/MB/GB/TB, or a
/// fraction below 1 of `totalMemory` (0: no GPU, which makes a fraction an
/// error). False with `error` set when malformed.
bool parseMemorySize(const std::string &text, uint64_t totalMemory,
                     uint64_t &bytes, std::string &error);

/// `--no-fuse=LIST` or `--no-fuse LIST` (parseNoFuse's list), shared by
/// compile and codegen.
bool parseNoFuseOption(const Args &args, size_t &i, FusionConfig &fusion,
                       std::string &error);

} // namespace llmc

#endif // LLMC_COMPILER_COMPILE_H
