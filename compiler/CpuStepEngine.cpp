//===- CpuStepEngine.cpp - The reference evaluator as a StepEngine --------===//
#include "compiler/CpuStepEngine.h"
#include "compiler/common/FloatFormats.h"
#include "runtime/Padding.h"

#include <cstring>

namespace llmc {

Status CpuStepEngine::create(std::unique_ptr<CpuTrainer> trainer,
                             std::unique_ptr<CpuStepEngine> &out) {
  std::vector<const StepInput *> ints, floats;
  bool gate = false;
  for (const StepInput &in : trainer->inputs()) {
    if (in.name == "nan_gate" && in.type.isFloat() && in.type.rank() == 0) {
      gate = true; // llmc-inject-nan's input (test only)
      continue;
    }
    if (in.type.isFloat() && in.type.rank() == 2) {
      floats.push_back(&in); // a data mode's input (masked diffusion)
      continue;
    }
    if (in.type.isFloat() || in.type.rank() != 2)
      return Status::error(
          "input '" + in.name + "' (" + in.type.typeString() +
          ") is not token ids or targets; `llmc train` feeds models whose "
          "data inputs are [B, T] token ids and targets only");
    ints.push_back(&in);
  }
  if (ints.size() != 2 || ints[0]->type.shape != ints[1]->type.shape)
    return Status::error("the model needs exactly two integer inputs of one "
                         "shape [B, T] (token ids, then targets); it has " +
                         std::to_string(ints.size()));
  for (const StepInput *in : floats)
    if (in->type.shape != ints[0]->type.shape)
      return Status::error("float input '" + in->name + "' (" +
                           in->type.typeString() +
                           ") is not shaped like the token ids [B, T]");
  std::unique_ptr<CpuStepEngine> e(new CpuStepEngine());
  for (const StepInput *in : floats)
    e->floats_[in->name] = {in->type.kind, in->type.shape, {}};
  e->tokens_ = ints[0]->name;
  e->targets_ = ints[1]->name;
  e->inputType_ = ints[0]->type;
  e->batch_ = ints[0]->type.shape[0];
  e->seq_ = ints[0]->type.shape[1];
  e->vocab_ = trainer->vocabulary();
  e->state_ = trainer->stateArguments();
  double tokens = static_cast<double>(e->batch_ * e->seq_);
  e->flopsPerToken_ = tokens > 0 ? trainer->stepFlops() / tokens : 0;
  e->hasGate_ = gate;
  e->trainer_ = std::move(trainer);
  out = std::move(e);
  return Status::ok();
}

std::map<std::string, RefTensor>
CpuStepEngine::batchOf(const std::vector<int64_t> &tokens,
                       const std::vector<int64_t> &targets, double gate) {
  std::map<std::string, RefTensor> batch = {
      {tokens_,
       RefTensor::fromInts(inputType_.kind, inputType_.shape, tokens)},
      {targets_,
       RefTensor::fromInts(inputType_.kind, inputType_.shape, targets)}};
  if (hasGate_)
    batch["nan_gate"] = RefTensor::fromFloats(ElementKind::F32, {}, {gate});
  for (const auto &[name, in] : floats_)
    batch[name] = RefTensor::fromFloats(in.kind, in.shape, in.values);
  return batch;
}

std::vector<std::string> CpuStepEngine::floatInputs() const {
  std::vector<std::string> names;
  for (const auto &entry : floats_)
    names.push_back(entry.first);
  return names;
}

Status CpuStepEngine::setFloatInput(const std::string &name,
                                    const std::vector<float> &values) {
  auto it = floats_.find(name);
  if (it == floats_.end())
    return StepEngine::setFloatInput(name, values);
  if (static_cast<int64_t>(values.size()) != batch_ * seq_)
    return Status::error("input '" + name + "' takes " +
                         std::to_string(batch_ * seq_) + " values, not " +
                         std::to_string(values.size()));
  it->second.values.assign(values.begin(), values.end());
  return Status::ok();
}

Status CpuStepEngine::checkFloatInputs() const {
  for (const auto &[name, in] : floats_)
    if (in.values.empty())
      return Status::error("the model's float input '" + name +
                           "' has no value: only a data mode that draws it "
                           "(--data-mode masked-diffusion) trains this model");
  return Status::ok();
}

Status CpuStepEngine::setNanGate(double value) {
  if (!hasGate_)
    return StepEngine::setNanGate(value);
  gate_ = value;
  return Status::ok();
}

Status CpuStepEngine::step(const std::vector<int64_t> &tokens,
                           const std::vector<int64_t> &targets, double lr,
                           int64_t /*updates: the step's own state*/,
                           bool skipNonFinite, StepResult &result) {
  LLMC_RETURN_IF_ERROR(checkFloatInputs());
  auto loss =
      trainer_->step(batchOf(tokens, targets, gate_), lr, skipNonFinite);
  if (mlir::failed(loss))
    return Status::error("the reference evaluator failed (see the errors "
                         "above)");
  result.loss = *loss;
  result.hasGradNorm = trainer_->hasGradNorm();
  result.gradNorm = trainer_->gradNorm();
  result.applied = trainer_->applied();
  result.hasLossScale = trainer_->hasLossScale();
  if (result.hasLossScale) {
    result.lossScale = trainer_->lossScale();
    result.overflow = trainer_->overflowed();
    result.scalerSkipped = trainer_->scalerSkipped();
  }
  return Status::ok();
}

Status CpuStepEngine::findAnomaly(const std::vector<int64_t> &tokens,
                                  const std::vector<int64_t> &targets,
                                  double lr, std::string &where) {
  LLMC_RETURN_IF_ERROR(checkFloatInputs());
  // The same gate as the step had: the replay must meet the same fault.
  auto found = trainer_->firstNonFinite(batchOf(tokens, targets, gate_), lr);
  if (mlir::failed(found))
    return Status::error("the reference evaluator failed (see the errors "
                         "above)");
  where = *found;
  return Status::ok();
}

Status CpuStepEngine::evalLoss(const std::vector<int64_t> &tokens,
                               const std::vector<int64_t> &targets,
                               double &loss) {
  LLMC_RETURN_IF_ERROR(checkFloatInputs());
  auto l = trainer_->evalLoss(batchOf(tokens, targets, 1.0));
  if (mlir::failed(l))
    return Status::error("the reference evaluator failed (see the errors "
                         "above)");
  loss = *l;
  return Status::ok();
}

/// The checkpoint dtype of an evaluator kind; false for kinds a checkpoint
/// does not hold (f64, f8, i1).
static bool dtypeOfKind(ElementKind kind, DType &dtype) {
  switch (kind) {
  case ElementKind::F32:
    dtype = DType::F32;
    return true;
  case ElementKind::BF16:
    dtype = DType::BF16;
    return true;
  case ElementKind::F16:
    dtype = DType::F16;
    return true;
  case ElementKind::I64:
    dtype = DType::I64;
    return true;
  case ElementKind::I32:
    dtype = DType::I32;
    return true;
  default:
    return false;
  }
}

std::vector<StateTensor> CpuStepEngine::stateTensors() const {
  std::vector<StateTensor> out;
  for (const CpuTrainer::StateArgument &a : state_) {
    const RefTensor &t = trainer_->argument(a.index);
    StateTensor s;
    s.name = a.name;
    s.optimizer = a.optimizer;
    // A checkpoint holds the model's shape (docs/padding.md).
    s.shape = trainer_->realShape(a.index).value_or(t.shape);
    if (!dtypeOfKind(t.kind, s.dtype))
      s.dtype = DType::U8; // refused by readState with the kind's name
    out.push_back(std::move(s));
  }
  return out;
}

const CpuTrainer::StateArgument *
CpuStepEngine::find(const std::string &name) const {
  for (const CpuTrainer::StateArgument &a : state_)
    if (a.name == name)
      return &a;
  return nullptr;
}

Status CpuStepEngine::readState(const StateTensor &tensor,
                                std::vector<uint8_t> &bytes) {
  const CpuTrainer::StateArgument *a = find(tensor.name);
  if (!a)
    return Status::error("no state tensor '" + tensor.name + "'");
  const RefTensor &held = trainer_->argument(a->index);
  DType dtype;
  if (!dtypeOfKind(held.kind, dtype))
    return Status::error("state tensor '" + tensor.name + "' is " +
                         kindName(held.kind) +
                         ", which a checkpoint cannot hold");
  // A padded tensor gives up its model-shaped corner (runtime/Padding.h).
  RefTensor t = held;
  if (auto real = trainer_->realShape(a->index)) {
    t = RefTensor(held.kind, *real);
    LLMC_RETURN_IF_ERROR(
        held.isFloat() ? unpadValues(held.floats, held.shape, *real, t.floats)
                       : unpadValues(held.ints, held.shape, *real, t.ints));
  }
  size_t n = static_cast<size_t>(t.numElements()), size = dtypeSize(dtype);
  bytes.assign(n * size, 0);
  for (size_t i = 0; i < n; ++i) {
    uint8_t *dst = bytes.data() + i * size;
    switch (dtype) {
    case DType::F32: {
      float f = static_cast<float>(t.floats[i]);
      std::memcpy(dst, &f, 4);
      break;
    }
    case DType::BF16:
    case DType::F16: {
      uint16_t bits = static_cast<uint16_t>(floatToBits(
          t.floats[i], dtype == DType::BF16 ? FloatFormat::BF16
                                            : FloatFormat::F16));
      std::memcpy(dst, &bits, 2);
      break;
    }
    case DType::I64:
      std::memcpy(dst, &t.ints[i], 8);
      break;
    default: {
      int32_t v = static_cast<int32_t>(t.ints[i]);
      std::memcpy(dst, &v, 4);
      break;
    }
    }
  }
  return Status::ok();
}

Status CpuStepEngine::writeState(const StateTensor &tensor,
                                 const std::vector<uint8_t> &bytes) {
  const CpuTrainer::StateArgument *a = find(tensor.name);
  if (!a)
    return Status::error("no state tensor '" + tensor.name + "'");
  RefTensor &held = trainer_->argument(a->index);
  // A padded tensor is written at the model's shape, then padded with zeros.
  auto real = trainer_->realShape(a->index);
  RefTensor t(held.kind, real.value_or(held.shape));
  DType dtype;
  if (!dtypeOfKind(t.kind, dtype) || t.shape != tensor.shape ||
      bytes.size() != static_cast<size_t>(t.numElements()) * dtypeSize(dtype))
    return Status::error("state tensor '" + tensor.name +
                         "' does not match the model's " + t.typeString());
  size_t n = static_cast<size_t>(t.numElements()), size = dtypeSize(dtype);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t *src = bytes.data() + i * size;
    switch (dtype) {
    case DType::F32: {
      float f;
      std::memcpy(&f, src, 4);
      t.floats[i] = f;
      break;
    }
    case DType::BF16:
    case DType::F16: {
      uint16_t bits;
      std::memcpy(&bits, src, 2);
      t.floats[i] = bitsToFloat(bits, dtype == DType::BF16 ? FloatFormat::BF16
                                                           : FloatFormat::F16);
      break;
    }
    case DType::I64:
      std::memcpy(&t.ints[i], src, 8);
      break;
    default: {
      int32_t v;
      std::memcpy(&v, src, 4);
      t.ints[i] = v;
      break;
    }
    }
  }
  if (!real) {
    held = std::move(t);
    return Status::ok();
  }
  return t.isFloat() ? padValues(t.floats, *real, held.shape, held.floats)
                     : padValues(t.ints, *real, held.shape, held.ints);
}

} // namespace llmc