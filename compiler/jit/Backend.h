//===- Backend.h - What a jit::Step runs on ---------------------*- C++ -*-===//
//
// A Step (include/llmc/Step.h) is a thin shell over one Backend: the CPU
// reference evaluator (CpuBackend.cpp) or a compiled plan on a GPU
// (CudaBackend.cpp). Step.cpp checks every argument against inputs() and
// parameterInfo() before a backend sees it (dtype, shape, device, token
// ids), so backends may assume well-formed calls.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_JIT_BACKEND_H
#define LLMC_COMPILER_JIT_BACKEND_H

#include "llmc/Step.h"

namespace llmc::jit {

class Backend {
public:
  virtual ~Backend() = default;

  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> parameters; // logical shapes
  CompileReport report;
  Options options;
  int64_t steps = 0; // successful training steps
  double lastMs = 0; // CPU backend: the last run's wall time

  /// `loss` null: return once the step is queued, without waiting for it
  /// (lastLoss waits).
  virtual Status run(const std::vector<TensorView> &in, double lr,
                     double *loss) = 0;
  /// The loss of the last run or evaluate; waits for it.
  virtual Status lastLoss(double &loss) = 0;
  virtual Status evaluate(const std::vector<TensorView> &in,
                          double &loss) = 0;
  virtual Status lastStepMs(double &ms) {
    ms = lastMs;
    return Status::ok();
  }
  /// Parameter `index` (into `parameters`) as f32 host bytes of its logical
  /// shape.
  virtual Status readParameter(size_t index, std::vector<uint8_t> &f32) = 0;
  /// Writes parameter `index` from a checked view of its logical shape.
  virtual Status writeParameter(size_t index, const TensorView &value) = 0;
};

/// The two backends; errors name the model (`source`).
Status createCpuBackend(const std::string &path, const std::string *jsonText,
                        const Options &options,
                        std::unique_ptr<Backend> &out);
Status createCudaBackend(const std::string &path, const std::string *jsonText,
                         const Options &options,
                         std::unique_ptr<Backend> &out);

} // namespace llmc::jit

#endif // LLMC_COMPILER_JIT_BACKEND_H
