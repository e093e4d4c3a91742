//===- BatchAuto.h - `--batch auto`: the batch that fits and runs fastest -*- C++ -*-===//
//
// `llmc compile|train --batch auto` (docs/memory.md): every candidate batch
// (powers of two, and the model's own batch) is compiled without kernels and
// its exact memory plan's total (DeviceMemory.h: arena, workspace, modules
// at one 64 KiB granule per kernel, graph, library) is held against the
// memory available: `--memory-budget`, else `--device-memory SIZE`, else
// GPU 0's free memory. Among those that fit, the one with the most modelled
// tokens/s wins. With `--tokens-per-step N` the candidates are the
// micro-batches B that divide N / T, each with k = N / (B T) micro-batches.
//
// The model is a roofline per step of the plan: each launch or cuBLASLt
// call takes max(FLOPs / GEMM ceiling, bytes of the buffers it names /
// DRAM bandwidth) + 2 us, at the H100's measured ceilings
// (ClassifierChunks.cpp's); a window is k accumulate sequences and one
// apply sequence. Kernels' FLOPs other than the cuBLASLt calls' are not
// recorded in the plan, so attention counts by its bytes only.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_BATCHAUTO_H
#define LLMC_COMPILER_BATCHAUTO_H

#include "compiler/Compile.h"
#include "compiler/ModelLoader.h"

#include <string>
#include <vector>

namespace llmc {

struct BatchAutoConfig {
  bool enabled = false;      // --batch auto
  uint64_t deviceMemory = 0; // --device-memory SIZE (0: not given)
};

/// `--batch auto` and `--device-memory SIZE`: consumes args[i] (and its
/// value) when it is one, setting `error` when malformed.
bool parseBatchAutoOption(const Args &args, size_t &i, BatchAutoConfig &c,
                          std::string &error);
extern const char *const kBatchAutoHelp;

struct BatchCandidate {
  int64_t batch = 0, microBatches = 1;
  uint64_t peakBytes = 0; // the plan's device memory total
  double windowMs = 0;    // modelled time of one optimizer step
  double tokensPerSecond = 0;
  bool fits = false;
};

struct BatchChoice {
  std::vector<BatchCandidate> candidates; // by batch
  size_t chosen = 0;
  uint64_t available = 0;
  std::string availableFrom; // what gave `available`
};

/// Compiles the candidates of `model` and chooses; errors (none fits, a
/// static batch, no memory to hold them against) are diagnostics or
/// `error`, and the result is failure.
mlir::FailureOr<BatchChoice> chooseBatch(const std::string &model,
                                         const ModelOptions &options,
                                         const CompileConfig &config,
                                         int64_t tokensPerStep,
                                         const BatchAutoConfig &autoConfig,
                                         std::string &error);

/// The report's lines: the choice, then one per candidate.
std::vector<std::string> batchChoiceLines(const BatchChoice &choice);

} // namespace llmc

#endif // LLMC_COMPILER_BATCHAUTO_H
