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

#include <cstdint>
#include <string>

namespace llmc {

struct OptimizerConfig {
  std::string kind = "adamw"; // adamw | sgd
  double beta1 = 0.9, beta2 = 0.95, epsilon = 1e-8, weightDecay = 0.1;
  double momentum = 0.0;
  double clipNorm = 1.0;   // 0: no clipping
  int64_t decayMinRank = 2; // nanoGPT/llm.c: decay matrices and embeddings
  // One multi-tensor AdamW kernel for all parameters (llmc-batch-adamw);
  // false keeps one adamw_update kernel per parameter (tests compare both).
  bool multiTensor = true;
};

/// The forward-graph rewrites before autodiff: nice-number padding
/// (docs/padding.md, llmc-pad-shapes) and mixed precision
/// (docs/precision.md, llmc-lower-precision).
struct PrecisionConfig {
  std::string precision = "fp32"; // fp32 | bf16
  std::string mutation;           // test only: a planted policy mistake
  bool pad = true;                // --no-pad turns it off
  bool padAlways = false;         // --pad-always (tests): pad what ops allow
  std::string padArch = "sm_90";  // the cost table: the target GPU's
};

struct TrainConfig {
  std::string model;       // .onnx | .json | .mlir | .llmc (bundle, GPU only)
  ModelOptions modelOptions;
  std::string device = "cpu"; // cpu | cuda
  std::string data, val;   // llm.c .bin token shards (docs/token-format.md)
  int64_t steps = 10;
  double lr = 1e-3;
  int64_t warmup = 0;      // linear warmup steps, then constant lr
  int64_t valEvery = 0;    // 0: no validation
  int64_t valBatches = 4;
  uint64_t seed = 0;       // parameter init (normal(std) rules)
  OptimizerConfig optimizer;
  PrecisionConfig precision;
  bool profile = false;    // cuda: time each kernel of the last step
};

/// The learning rate of step `step` (0-based): linear warmup to cfg.lr.
double learningRateAt(const TrainConfig &cfg, int64_t step);

/// Each prints one line per step ("step N | loss L | lr X | ms | tok/s") and
/// returns the process exit code.
int runTrainCpu(const TrainConfig &cfg);
int runTrainCuda(const TrainConfig &cfg);

} // namespace llmc

#endif // LLMC_COMPILER_TRAIN_H
