//===- GpuAnomalyEngine.h - --detect-anomaly on the GPU ---------*- C++ -*-===//
//
// `llmc train --device cuda --detect-anomaly` (docs/trainer.md, "NaN and
// inf"): the GPU step wrapped so that a bad step can be replayed. The GPU's
// update is inside the captured graph, so before every step the wrapper
// copies the training state (parameters, optimizer state, step count) to
// the host. When a step's loss or gradient norm is not finite:
//
//   1. the saved state is written back into the graph's buffers, so the
//      update is dropped (the NaN policies skip and reduce-lr work too);
//   2. findAnomaly writes the same state into the CPU reference evaluator
//      (CpuStepEngine, built from the same model file with the same
//      optimizer, precision and NaN gate) and replays the step there,
//      unfused and one op at a time (compiler/DetectAnomaly.cpp), which
//      names the first op and ONNX node with a non-finite result.
//
// The evaluator computes in float64 with the roundings of the step's
// precision, so it meets a fault of the model (an injected NaN, an
// overflow the data causes) where the GPU did; a fault of a GPU kernel
// alone would replay clean, and the message says so. The copy per step is
// what a debugging mode may cost (PyTorch's anomaly mode is slow too); it
// is meant for the tiny and mid-size models one debugs with.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_GPUANOMALYENGINE_H
#define LLMC_COMPILER_GPUANOMALYENGINE_H

#include "runtime/Trainer.h"

#include <memory>

namespace llmc {

class GpuAnomalyEngine : public StepEngine {
public:
  /// `gpu` must outlive the wrapper. Fails when the two engines' state
  /// tensors differ (names, dtypes, shapes): then the replay would not
  /// start from the GPU's state.
  static Status create(StepEngine &gpu, std::unique_ptr<StepEngine> cpu,
                       std::unique_ptr<GpuAnomalyEngine> &out);

  std::string description() const override { return gpu_.description(); }
  int64_t batch() const override { return gpu_.batch(); }
  int64_t seq() const override { return gpu_.seq(); }
  int64_t vocab() const override { return gpu_.vocab(); }
  double flopsPerToken() const override { return gpu_.flopsPerToken(); }
  /// By writing the saved state back.
  bool canSkipUpdate() const override { return true; }
  Status step(const std::vector<int64_t> &tokens,
              const std::vector<int64_t> &targets, double lr, int64_t updates,
              bool skipNonFinite, StepResult &result) override;
  Status evalLoss(const std::vector<int64_t> &tokens,
                  const std::vector<int64_t> &targets, double &loss) override {
    return gpu_.evalLoss(tokens, targets, loss);
  }
  Status beginValidation() override { return gpu_.beginValidation(); }
  Status endValidation() override { return gpu_.endValidation(); }
  Status setNanGate(double value) override;
  Status findAnomaly(const std::vector<int64_t> &tokens,
                     const std::vector<int64_t> &targets, double lr,
                     std::string &where) override;
  std::vector<StateTensor> stateTensors() const override {
    return gpu_.stateTensors();
  }
  Status readState(const StateTensor &tensor,
                   std::vector<uint8_t> &bytes) override {
    return gpu_.readState(tensor, bytes);
  }
  Status writeState(const StateTensor &tensor,
                    const std::vector<uint8_t> &bytes) override {
    return gpu_.writeState(tensor, bytes);
  }

private:
  GpuAnomalyEngine(StepEngine &gpu, std::unique_ptr<StepEngine> cpu)
      : gpu_(gpu), cpu_(std::move(cpu)) {}

  StepEngine &gpu_;
  std::unique_ptr<StepEngine> cpu_;
  std::vector<StateTensor> state_;    // the GPU's
  std::vector<StateTensor> cpuState_; // the same tensors, the evaluator's
  std::vector<std::vector<uint8_t>> saved_; // the state before the last step
};

} // namespace llmc

#endif // LLMC_COMPILER_GPUANOMALYENGINE_H
