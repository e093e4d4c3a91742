//===- Train.h - What `llmc train` runs, on any device ------------*- C++ -*-===//
//
// `llmc train` parses its command line into a TrainConfig and hands it to
// the device's trainer: runTrainCpu (the reference evaluator, CpuTrainer.h)
// or runTrainCuda (a compiled bundle on the GPU). Both print the same
// per-step line, so runs on the two devices compare line by line.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_TRAIN_H
#define LLMC_COMPILER_TRAIN_H

#include "compiler/ModelLoader.h"
#include "runtime/Trainer.h"

#include <cstdint>
#include <memory>
#include <string>

namespace llmc {

class MaskedDiffusionEngine;

struct OptimizerConfig {
  std::string kind = "adamw"; // adamw | sgd
  double beta1 = 0.9, beta2 = 0.95, epsilon = 1e-8, weightDecay = 0.1;
  double momentum = 0.0;
  double clipNorm = 1.0;   // 0: no clipping
  int64_t decayMinRank = 2; // nanoGPT/llm.c: decay matrices and embeddings
  // One multi-tensor AdamW kernel for all parameters (llmc-batch-adamw);
  // false keeps one adamw_update kernel per parameter (tests compare both).
  bool multiTensor = true;
  // Gradient accumulation (docs/memory.md): llmc-accumulate-gradients splits
  // the step into @accumulate_step (per micro-batch) and an apply step.
  bool accumulate = false;
};

/// The forward-graph rewrites before autodiff: nice-number padding
/// (docs/padding.md, llmc-pad-shapes) and mixed precision
/// (docs/precision.md, llmc-lower-precision).
struct PrecisionConfig {
  std::string precision = "fp32"; // fp32 | bf16 | fp16 | tf32
  // fp16's dynamic loss scaling (GradScaler's init_scale, growth_interval;
  // its factors 2 and 0.5 are the passes' defaults).
  double lossScaleInit = 65536.0;
  int64_t lossScaleGrowthInterval = 2000;
  std::string mutation;           // test only: a planted policy mistake
  bool pad = true;                // --no-pad turns it off
  bool padAlways = false;         // --pad-always (tests): pad what ops allow
  std::string padDims;            // --pad-dims FROM:TO,...: forced sizes
  std::string padArch = "sm_90";  // the cost table: the target GPU's
  // Where attention runs (docs/codegen.md "cuDNN attention"): auto (cuDNN
  // where it is measured faster on this GPU), generated, or cudnn.
  std::string attentionBackend = "auto";
  // cuDNN's attention backward: deterministic (dQ from dS in a workspace,
  // the same bits every replay) or atomic (dQ accumulated with float
  // atomics: ~0.6 ms a GPT-2 124M step and 385 MiB less on the H100,
  // BENCHMARKS.md session 8). `--attention-backward deterministic|atomic`.
  bool deterministicAttention = true;
};

/// Activation checkpointing (llmc-rematerialize, docs/memory.md): forward
/// values the backward recomputes instead of keeping.
struct RecomputeConfig {
  /// The device memory the step may plan, in bytes (`--memory-budget`;
  /// 0: none). The smallest prefix of the candidate order that fits.
  uint64_t budget = 0;
  /// Levels forced without planning (`--recompute all`: every candidate;
  /// -1: as the budget needs).
  int64_t levels = -1;
  /// The classifier's chunks of tokens (`--classifier-chunks`,
  /// llmc-chunk-classifier): 0 lets the memory plan choose
  /// (ClassifierChunks.h), 1 keeps it whole.
  int64_t classifierChunks = 0;
  bool active() const { return budget != 0 || levels >= 0; }
};

struct TrainConfig {
  std::string model;       // .onnx | .json | .mlir | .llmc (bundle, GPU only)
  ModelOptions modelOptions;
  std::string device = "cpu"; // cpu | cuda
  std::string data, val;   // llm.c .bin token shards (docs/token-format.md)
  int64_t steps = 10;
  double lr = 1e-3;
  int64_t warmup = 0;      // linear warmup steps
  LrSchedule::Decay decay = LrSchedule::Decay::Constant;
  int64_t decaySteps = 0;  // 0: --steps
  double minLr = 0;        // the floor of the decay
  int64_t valEvery = 0;    // 0: no validation
  int64_t valBatches = 4;
  uint64_t seed = 0;       // parameter init (normal(std) rules)
  OptimizerConfig optimizer;
  PrecisionConfig precision;
  RecomputeConfig recompute;
  bool profile = false;    // cuda: time each kernel of the last step
  std::string trace;       // cuda: that step as a Chrome trace (implies profile)
  bool breakdown = false;  // cuda: that step's time by phase
  // The loop (runtime/Trainer.h): checkpoints, NaN policy, log.
  int64_t saveEvery = 0, keep = 0;
  std::string checkpointDir, resume, logJson;
  NanPolicy onNan = NanPolicy::Stop;
  int64_t nanPatience = 3;
  bool detectAnomaly = false; // --detect-anomaly
  int progress = -1;         // -1: on a terminal
  // Test only: NaN into the output of op `injectNanOp` at step
  // injectNanStep (1-based), through llmc-inject-nan.
  std::string injectNanOp;
  int64_t injectNanStep = 0;
  // Test only: every read of the training data sleeps this long first (a
  // slow disk), to show that the read-ahead hides it.
  double slowReaderMs = 0;
  double peakTflops = 989;   // MFU's denominator
  // --tokens-per-step: tokens of one optimizer step (0: one batch); a
  // multiple of the micro-batch's B * T (docs/memory.md).
  int64_t tokensPerStep = 0;
  // --batch auto, --device-memory SIZE (compiler/BatchAuto.h).
  bool batchAuto = false;
  uint64_t deviceMemory = 0;
  // --data-mode masked-diffusion: each batch's mask and p_mask are drawn
  // (runtime/MaskedDiffusion.h) with t ~ U(maskEps, 1) per sequence.
  bool maskedDiffusion = false;
  double maskEps = 1e-3;
};

/// The learning-rate schedule cfg asks for.
LrSchedule scheduleOf(const TrainConfig &cfg);
/// The loop's options from cfg.
TrainOptions loopOptions(const TrainConfig &cfg);

/// The engine `llmc train` runs for cfg's data mode: `engine` itself for
/// next-token training (which must have no float data input), else a
/// MaskedDiffusionEngine around it, put in `masked`.
Status withDataMode(const TrainConfig &cfg, StepEngine &engine,
                    std::unique_ptr<MaskedDiffusionEngine> &masked);

/// The learning rate of step `step` (0-based): scheduleOf(cfg).at(step).
double learningRateAt(const TrainConfig &cfg, int64_t step);

/// The micro-batches of one optimizer step: tokensPerStep / microTokens,
/// or 0 with `error` naming the multiple to use instead.
int64_t microBatchesFor(int64_t tokensPerStep, int64_t microTokens,
                        std::string &error);

/// Each runs runTrainLoop (one line per step, runtime/TrainLog.h) and
/// returns the process exit code.
int runTrainCpu(const TrainConfig &cfg);
int runTrainCuda(const TrainConfig &cfg);

} // namespace llmc

#endif // LLMC_COMPILER_TRAIN_H
