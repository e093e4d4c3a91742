//===- CudaTrainer.h - A compiled training step on one GPU ------*- C++ -*-===//
//
// What `llmc train --device cuda` runs (runTrainCuda, TrainCuda.cpp): a plan
// from a .llmc bundle, or compiled in memory from a model file, loaded into
// an Executor; each step writes the batch and the scalars into the arena and
// replays the CUDA graph.
//
// The plan's contract (docs/codegen.md, "What the trainer expects"): the
// first two integer rank-2 `input` buffers, in argument order, are the token
// ids and the targets, both [B, T]; scalar slots `lr` (f32, written before
// every step), `step` (i64: the number of steps already taken; the step
// increments it on the device) and `loss` (f32, read after the step).
//
// An eval plan (PlanKind::Eval, `llmc compile --eval`) has the same inputs
// and `loss` but no `lr` or `step`: a run computes the loss and changes no
// parameter.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CUDATRAINER_H
#define LLMC_COMPILER_CUDATRAINER_H

#include "compiler/Train.h"
#include "runtime/DataLoader.h"
#include "runtime/Executor.h"
#include "runtime/PlanStepEngine.h"

#include <memory>
#include <string>
#include <vector>

namespace llmc {

class CudaTrainer {
public:
  /// Loads or compiles cfg.model and creates the executor on GPU 0. Errors
  /// (also the compiler's diagnostics) are in the Status message;
  /// diagnostics name `command` (`llmc train: ...`, `llmc verify: ...`).
  /// A model file is compiled as `kind` says; a bundle must hold that kind.
  static Status open(const TrainConfig &cfg, std::unique_ptr<CudaTrainer> &out,
                     const char *command = "train",
                     PlanKind kind = PlanKind::Train);
  /// Wraps an already built plan (tests).
  static Status fromPlan(Plan plan, const std::string &source,
                         std::unique_ptr<CudaTrainer> &out,
                         PlanKind kind = PlanKind::Train);

  int64_t batch() const { return batch_; }
  int64_t seq() const { return seq_; }
  /// The vocabulary that token ids and targets must stay below (the plan's);
  /// 0 when unknown (bundles written before plans recorded it).
  int64_t vocab() const { return vocab_; }
  Executor &executor() { return *executor_; }

  /// One training step: writes the batch, lr and the step counter, replays
  /// the graph (or runs the steps one by one when `plain`), reads the loss.
  Status step(int64_t index, const std::vector<int64_t> &tokens,
              const std::vector<int64_t> &targets, double lr, double &loss,
              bool plain = false, std::vector<float> *stepMs = nullptr);

  /// Writes `values` into the input buffer `name`, converted to its dtype:
  /// any input, not only the token ids and targets (BERT's attention mask;
  /// `llmc verify --device cuda`). Doubles hold token ids exactly.
  Status writeInput(const std::string &name, const std::vector<double> &values);

  /// A step on inputs already written: lr, the step counter, the replay (or
  /// the steps one by one when `plain`), the loss. An eval plan ignores
  /// `index` and `lr`.
  /// With `stepMs` (--profile) the steps run one by one between events and
  /// stepMs[i] is the GPU time of plan step i.
  Status run(int64_t index, double lr, double &loss, bool plain = false,
             std::vector<float> *stepMs = nullptr);

  /// Parameters and optimizer state, copied to the host and back: a step
  /// with lr = 0 (validation, verify's gradient step) leaves the parameters
  /// but not the AdamW moments as they were.
  using Snapshot = std::vector<std::pair<std::string, std::vector<uint8_t>>>;
  Status saveState(Snapshot &out);
  Status restoreState(const Snapshot &saved);

  /// The mean loss over `batches` batches from `loader` (reset first) at the
  /// current parameters: @train_step replayed with lr = 0, parameters and
  /// optimizer state saved to the host before and written back after, so
  /// that training continues exactly as without the validation.
  Status validate(DataLoader &loader, int64_t batches, int64_t stepsTaken,
                  double &loss);

  PlanKind kind() const { return kind_; }

private:
  Status bind(PlanKind kind);
  Status writeTokens(const std::string &buffer,
                     const std::vector<int64_t> &values);

  std::unique_ptr<Executor> executor_;
  std::string tokens_, targets_;
  DType tokenType_ = DType::I64, targetType_ = DType::I64;
  int64_t batch_ = 0, seq_ = 0, vocab_ = 0;
  bool hasStep_ = false;
  PlanKind kind_ = PlanKind::Train;
};

} // namespace llmc

#endif // LLMC_COMPILER_CUDATRAINER_H
