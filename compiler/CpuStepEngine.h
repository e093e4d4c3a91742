//===- CpuStepEngine.h - The reference evaluator as a StepEngine --*- C++ -*-===//
//
// `llmc train --device cpu`: the runtime's training loop (runtime/Trainer.h)
// driving CpuTrainer. State tensors are the step's parameter and optimizer
// arguments, converted between the evaluator's doubles (already rounded to
// their type) and little-endian bytes exactly, so a checkpoint of f32 state
// reloads bit for bit.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CPUSTEPENGINE_H
#define LLMC_COMPILER_CPUSTEPENGINE_H

#include "compiler/CpuTrainer.h"
#include "runtime/Trainer.h"

#include <memory>

namespace llmc {

class CpuStepEngine : public StepEngine {
public:
  /// Finds the token-id and target inputs (the first two integer [B, T]
  /// inputs) of `trainer`'s step; an error names what the model has instead.
  static Status create(std::unique_ptr<CpuTrainer> trainer,
                       std::unique_ptr<CpuStepEngine> &out);

  CpuTrainer &trainer() { return *trainer_; }

  std::string description() const override {
    return "the CPU reference evaluator";
  }
  int64_t batch() const override { return batch_; }
  int64_t seq() const override { return seq_; }
  int64_t vocab() const override { return vocab_; }
  double flopsPerToken() const override { return flopsPerToken_; }
  bool canSkipUpdate() const override { return true; }
  Status step(const std::vector<int64_t> &tokens,
              const std::vector<int64_t> &targets, double lr, int64_t updates,
              bool skipNonFinite, StepResult &result) override;
  Status evalLoss(const std::vector<int64_t> &tokens,
                  const std::vector<int64_t> &targets, double &loss) override;
  Status setNanGate(double value) override;
  std::vector<std::string> floatInputs() const override;
  Status setFloatInput(const std::string &name,
                       const std::vector<float> &values) override;
  Status findAnomaly(const std::vector<int64_t> &tokens,
                     const std::vector<int64_t> &targets, double lr,
                     std::string &where) override;
  std::vector<StateTensor> stateTensors() const override;
  Status readState(const StateTensor &tensor,
                   std::vector<uint8_t> &bytes) override;
  Status writeState(const StateTensor &tensor,
                    const std::vector<uint8_t> &bytes) override;

private:
  std::map<std::string, RefTensor> batchOf(const std::vector<int64_t> &tokens,
                                           const std::vector<int64_t> &targets,
                                           double gate);
  const CpuTrainer::StateArgument *find(const std::string &name) const;
  /// An error when a float input has not been set yet.
  Status checkFloatInputs() const;

  std::unique_ptr<CpuTrainer> trainer_;
  std::vector<CpuTrainer::StateArgument> state_;
  std::string tokens_, targets_;
  RefTensor inputType_;
  int64_t batch_ = 0, seq_ = 0, vocab_ = 0;
  double flopsPerToken_ = 0;
  /// Float [B, T] data inputs (masked diffusion's p_mask), set by
  /// setFloatInput; empty values until then.
  struct FloatInput {
    ElementKind kind;
    std::vector<int64_t> shape;
    std::vector<double> values;
  };
  std::map<std::string, FloatInput> floats_;
  bool hasGate_ = false; // the step has llmc-inject-nan's `nan_gate` input
  double gate_ = 1.0;
};

} // namespace llmc

#endif // LLMC_COMPILER_CPUSTEPENGINE_H
