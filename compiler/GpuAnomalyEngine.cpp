//===- GpuAnomalyEngine.cpp - --detect-anomaly on the GPU -----------------===//
#include "compiler/GpuAnomalyEngine.h"

#include <cmath>

namespace llmc {

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace

Status GpuAnomalyEngine::create(StepEngine &gpu, std::unique_ptr<StepEngine> cpu,
                                std::unique_ptr<GpuAnomalyEngine> &out) {
  std::vector<StateTensor> g = gpu.stateTensors(), c = cpu->stateTensors();
  auto mismatch = [&](const std::string &what) {
    return Status::error("--detect-anomaly: the reference evaluator's step "
                         "cannot start from the GPU's state: " + what);
  };
  if (g.size() != c.size())
    return mismatch("the GPU step has " + std::to_string(g.size()) +
                    " state tensors, the evaluator's " +
                    std::to_string(c.size()));
  // By name: the two engines may list them in another order.
  std::vector<StateTensor> cpuOrder;
  for (const StateTensor &t : g) {
    const StateTensor *match = nullptr;
    for (const StateTensor &u : c)
      if (u.name == t.name)
        match = &u;
    if (!match)
      return mismatch("the evaluator has no state tensor '" + t.name + "'");
    if (match->dtype != t.dtype || match->shape != t.shape)
      return mismatch("state tensor '" + t.name + "' is " +
                      dtypeName(t.dtype) + shapeText(t.shape) +
                      " on the GPU and " + dtypeName(match->dtype) +
                      shapeText(match->shape) + " in the evaluator");
    cpuOrder.push_back(*match);
  }
  out.reset(new GpuAnomalyEngine(gpu, std::move(cpu)));
  out->state_ = std::move(g);
  out->cpuState_ = std::move(cpuOrder);
  return Status::ok();
}

Status GpuAnomalyEngine::setNanGate(double value) {
  LLMC_RETURN_IF_ERROR(gpu_.setNanGate(value));
  // The replay must meet the same fault.
  return cpu_->setNanGate(value);
}

Status GpuAnomalyEngine::step(const std::vector<int64_t> &tokens,
                              const std::vector<int64_t> &targets, double lr,
                              int64_t updates, bool skipNonFinite,
                              StepResult &result) {
  saved_.assign(state_.size(), {});
  for (size_t i = 0; i < state_.size(); ++i)
    LLMC_RETURN_IF_ERROR(gpu_.readState(state_[i], saved_[i]));
  LLMC_RETURN_IF_ERROR(
      gpu_.step(tokens, targets, lr, updates, skipNonFinite, result));
  bool bad = !std::isfinite(result.loss) ||
             (result.hasGradNorm && !std::isfinite(result.gradNorm));
  if (bad && skipNonFinite) {
    for (size_t i = 0; i < state_.size(); ++i)
      LLMC_RETURN_IF_ERROR(gpu_.writeState(state_[i], saved_[i]));
    result.applied = false;
  }
  return Status::ok();
}

Status GpuAnomalyEngine::findAnomaly(const std::vector<int64_t> &tokens,
                                     const std::vector<int64_t> &targets,
                                     double lr, std::string &where) {
  if (saved_.size() != state_.size())
    return Status::error("no step has run yet");
  for (size_t i = 0; i < state_.size(); ++i)
    LLMC_RETURN_IF_ERROR(cpu_->writeState(cpuState_[i], saved_[i]));
  return cpu_->findAnomaly(tokens, targets, lr, where);
}

} // namespace llmc
