//===- PlanStepEngine.cpp - A compiled training step as a StepEngine ------===//
#include "runtime/PlanStepEngine.h"
#include "runtime/MaskedDiffusionDevice.h"
#include "runtime/Padding.h"

#include <cmath>
#include <cstring>

namespace llmc {

Status bindPlan(const Plan &plan, PlanKind kind, PlanBinding &out) {
  std::vector<const BufferInfo *> ints;
  for (const BufferInfo &b : plan.buffers)
    if (b.role == BufferRole::Input && b.shape.size() == 2 &&
        (b.dtype == DType::I64 || b.dtype == DType::I32))
      ints.push_back(&b);
  std::string where = "'" + plan.name + "'";
  if (ints.size() < 2)
    return Status::error(
        where + " has " + std::to_string(ints.size()) +
        " integer [B, T] inputs; training on token shards needs two (token "
        "ids and targets, in that order)");
  if (ints[0]->shape != ints[1]->shape)
    return Status::error(where + ": the token ids '" + ints[0]->name +
                         "' and the targets '" + ints[1]->name +
                         "' have different shapes");
  PlanBinding b;
  b.tokens = ints[0]->name;
  b.targets = ints[1]->name;
  b.tokenType = ints[0]->dtype;
  b.targetType = ints[1]->dtype;
  b.batch = ints[0]->shape[0];
  b.seq = ints[0]->shape[1];
  // From the compiler, or 0 for bundles written before plans recorded it.
  b.vocab = plan.vocab;
  b.kind = kind;
  bool hasLr = plan.findScalar("lr") != nullptr;
  if (kind == PlanKind::Eval && hasLr)
    return Status::error(where + " is a training step (it has the scalar slot "
                                 "'lr'); evaluation needs a plan compiled "
                                 "with `llmc compile --eval`");
  if (kind == PlanKind::Train && !hasLr && plan.findScalar("loss"))
    return Status::error(where + " has no scalar slot 'lr': it is an eval "
                                 "plan (llmc compile --eval), which computes "
                                 "the loss and trains nothing");
  std::vector<const char *> needed = {"loss"};
  if (kind == PlanKind::Train)
    needed.insert(needed.begin(), "lr");
  for (const char *name : needed)
    if (!plan.findScalar(name))
      return Status::error(where + " has no scalar slot '" + name +
                           (kind == PlanKind::Train
                                ? "': it is not a training step compiled by "
                                  "llmc compile"
                                : "': it is not a plan compiled by llmc "
                                  "compile --eval"));
  b.hasStep = plan.findScalar("step") != nullptr;
  const BufferInfo *norm = plan.findBuffer("grad_norm");
  b.hasGradNorm = norm && norm->dtype == DType::F32 && norm->shape.empty();
  const BufferInfo *scale = plan.findBuffer("amp.scale");
  const BufferInfo *skipped = plan.findBuffer("amp.skipped");
  b.hasLossScale = scale && scale->dtype == DType::F32 &&
                   scale->shape.empty() && skipped &&
                   skipped->dtype == DType::I64 && skipped->shape.empty();
  out = std::move(b);
  return Status::ok();
}

Status copyLogical(Executor &executor, const BufferInfo &buffer,
                   const std::vector<int64_t> &logicalShape,
                   std::vector<uint8_t> &bytes, bool toDevice) {
  size_t elem = dtypeSize(buffer.dtype);
  std::string what = "tensor '" + buffer.name + "'";
  std::vector<uint8_t> stored;
  if (toDevice) {
    // Loading pads with zeros: a padded row or column of a parameter or of
    // its optimizer state is zero, whatever the buffer held before.
    LLMC_RETURN_IF_ERROR(padData(bytes.data(), bytes.size(), logicalShape,
                                 buffer.shape, elem, stored)
                             .withContext(what));
    return executor.writeBuffer(buffer.name, stored.data(), stored.size());
  }
  LLMC_RETURN_IF_ERROR(executor.readBuffer(buffer.name, stored));
  uint64_t storedBytes = elem;
  for (int64_t d : buffer.shape)
    storedBytes *= static_cast<uint64_t>(d);
  stored.resize(storedBytes); // the buffer may be larger (alignment)
  return unpadData(stored.data(), stored.size(), buffer.shape, logicalShape,
                   elem, bytes)
      .withContext(what);
}

PlanStepEngine::PlanStepEngine(Executor &e) : exec_(e) {}
PlanStepEngine::~PlanStepEngine() = default;

Status PlanStepEngine::create(Executor &executor,
                              std::unique_ptr<PlanStepEngine> &out) {
  std::unique_ptr<PlanStepEngine> e(new PlanStepEngine(executor));
  LLMC_RETURN_IF_ERROR(bindPlan(executor.plan(), PlanKind::Train, e->bind_));
  // The matmuls' FLOPs; attention kernels are launches whose FLOPs the plan
  // does not record, so MFU is a lower bound for models with attention.
  double flops = 0;
  for (const Step &s : executor.plan().steps)
    if (const auto *mm = std::get_if<MatmulStep>(&s.op))
      flops += 2.0 * mm->m * mm->n * mm->k * mm->batch;
  double tokens = static_cast<double>(e->bind_.batch * e->bind_.seq);
  e->flopsPerToken_ = tokens > 0 ? flops / tokens : 0;
  out = std::move(e);
  return Status::ok();
}

std::string PlanStepEngine::description() const {
  return "a compiled plan on the GPU (" + exec_.arch() + ")";
}

Status PlanStepEngine::setMicroBatches(int64_t k) {
  if (k < 1)
    return Status::error("micro-batches must be at least 1, got " +
                         std::to_string(k));
  if (k > 1 && exec_.plan().accumulateSteps == 0)
    return Status::error(
        "'" + exec_.plan().name +
        "' was compiled without gradient accumulation (it has no accumulate "
        "sequence); compile it with --tokens-per-step, or train the model "
        "file");
  micro_ = k;
  return Status::ok();
}

Status PlanStepEngine::write(const std::string &buffer, DType type,
                             const std::vector<int64_t> &values, size_t first,
                             size_t count) {
  if (type == DType::I64)
    return exec_.writeBuffer(buffer, values.data() + first, count * 8);
  std::vector<int32_t> narrow(values.begin() + first,
                              values.begin() + first + count);
  return exec_.writeBuffer(buffer, narrow.data(), narrow.size() * 4);
}

Status PlanStepEngine::step(const std::vector<int64_t> &tokens,
                            const std::vector<int64_t> &targets, double lr,
                            int64_t updates, bool /*skipNonFinite*/,
                            StepResult &result) {
  StepTimeline *profile = profileNext;
  profileNext = nullptr;
  // Profiled (--breakdown): each part is a span of its own (HostClock.h).
  HostSpan copy, scalars, readBack;
  copy.startMs = profile ? hostNowMs() : 0;
  // Accumulation: micro-batch m is rows [m B, (m + 1) B) of the window.
  // Each write is queued before its replay on the one stream, and the
  // driver has staged a pageable copy when the call returns, so no
  // micro-batch waits for the host. The last micro-batch's replay comes
  // with the apply step below (or inside the profiled graph).
  size_t rows = static_cast<size_t>(bind_.batch * bind_.seq); // B x T ids
  // Targets drawn on the device (drawMasksOnDevice) are in their buffer.
  bool drawn = maskDrawn_ && targets.empty();
  maskDrawn_ = false;
  if (tokens.size() != rows * micro_ ||
      (!drawn && targets.size() != rows * micro_))
    return Status::error("a step of '" + exec_.plan().name + "' takes " +
                         std::to_string(rows * micro_) +
                         " token ids and targets, got " +
                         std::to_string(tokens.size()) + " and " +
                         std::to_string(targets.size()));
  for (int64_t m = 0; m < micro_; ++m) {
    LLMC_RETURN_IF_ERROR(
        write(bind_.tokens, bind_.tokenType, tokens, static_cast<size_t>(m) * rows, rows));
    if (!drawn)
      LLMC_RETURN_IF_ERROR(write(bind_.targets, bind_.targetType, targets,
                                 static_cast<size_t>(m) * rows, rows));
    bool last = m + 1 == micro_;
    if (exec_.plan().accumulateSteps > 0 && !(last && profile))
      LLMC_RETURN_IF_ERROR(exec_.replayAccumulate());
  }
  // Profiled: wait until the batch has landed, so the copy's time is its own.
  if (profile) {
    LLMC_RETURN_IF_ERROR(exec_.synchronize());
    copy.endMs = hostNowMs();
    scalars.startMs = hostNowMs();
  }
  LLMC_RETURN_IF_ERROR(exec_.setScalar("lr", lr));
  if (exec_.plan().findBuffer("nan_gate")) {
    float gate = static_cast<float>(gate_);
    LLMC_RETURN_IF_ERROR(exec_.writeBuffer("nan_gate", &gate, 4));
  }
  if (bind_.hasStep)
    LLMC_RETURN_IF_ERROR(
        exec_.setScalar("step", static_cast<double>(updates)));
  if (profile) {
    scalars.endMs = hostNowMs();
    LLMC_RETURN_IF_ERROR(exec_.replayProfiled(profile->gpu));
    readBack.startMs = hostNowMs();
  } else {
    LLMC_RETURN_IF_ERROR(exec_.replay());
  }
  // The loop's one synchronization: the loss (and the norm, already on the
  // host side of that sync) decide the NaN policy.
  LLMC_RETURN_IF_ERROR(exec_.readScalar("loss", result.loss));
  result.hasGradNorm = bind_.hasGradNorm;
  if (bind_.hasGradNorm) {
    std::vector<uint8_t> norm;
    LLMC_RETURN_IF_ERROR(exec_.readBuffer("grad_norm", norm));
    float f = 0;
    std::memcpy(&f, norm.data(), 4);
    result.gradNorm = f;
  }
  result.hasLossScale = bind_.hasLossScale;
  if (bind_.hasLossScale) {
    // After the loss's synchronization: two small copies, no extra wait on
    // the step.
    std::vector<uint8_t> bytes;
    float scale = 0;
    LLMC_RETURN_IF_ERROR(exec_.readBuffer("amp.scale", bytes));
    std::memcpy(&scale, bytes.data(), 4);
    int64_t skipped = 0;
    LLMC_RETURN_IF_ERROR(exec_.readBuffer("amp.skipped", bytes));
    std::memcpy(&skipped, bytes.data(), 8);
    result.lossScale = scale;
    result.scalerSkipped = skipped;
    // The unscaled gradients' norm is not finite exactly when the scaler
    // skipped the update (passes/AppendOptimizer.cpp).
    result.overflow = bind_.hasGradNorm && !std::isfinite(result.gradNorm);
  }
  if (profile) {
    readBack.endMs = hostNowMs();
    profile->copy = copy;
    profile->scalars = scalars;
    profile->readBack = readBack;
  }
  result.applied = true;
  return Status::ok();
}

// The loss is the training step's, replayed at lr 0: one plan and one arena
// serve both, and bundles need no second plan. That step leaves the
// parameters but moves the AdamW moments and the step count, so the state
// is copied to the host before and written back after.
Status PlanStepEngine::beginValidation() {
  std::vector<StateTensor> state = stateTensors();
  saved_.assign(state.size(), {});
  for (size_t i = 0; i < state.size(); ++i)
    LLMC_RETURN_IF_ERROR(readState(state[i], saved_[i]));
  validating_ = true;
  return Status::ok();
}

Status PlanStepEngine::endValidation() {
  std::vector<StateTensor> state = stateTensors();
  validating_ = false;
  for (size_t i = 0; i < state.size() && i < saved_.size(); ++i)
    LLMC_RETURN_IF_ERROR(writeState(state[i], saved_[i]));
  saved_.clear();
  return exec_.synchronize();
}

Status PlanStepEngine::evalLoss(const std::vector<int64_t> &tokens,
                                const std::vector<int64_t> &targets,
                                double &loss) {
  bool alone = !validating_;
  if (alone)
    LLMC_RETURN_IF_ERROR(beginValidation());
  StepResult r;
  double gate = gate_;
  gate_ = 1.0;
  Status s = step(tokens, targets, 0.0, 0, false, r);
  gate_ = gate;
  LLMC_RETURN_IF_ERROR(s);
  loss = r.loss;
  return alone ? endValidation() : Status::ok();
}

Status PlanStepEngine::setNanGate(double value) {
  if (!exec_.plan().findBuffer("nan_gate"))
    return StepEngine::setNanGate(value);
  gate_ = value;
  return Status::ok();
}

std::vector<std::string> PlanStepEngine::floatInputs() const {
  std::vector<std::string> names;
  std::vector<int64_t> bt = {bind_.batch, bind_.seq};
  for (const BufferInfo &b : exec_.plan().buffers)
    if (b.role == BufferRole::Input && b.dtype != DType::I64 &&
        b.dtype != DType::I32 && b.shape == bt)
      names.push_back(b.name);
  return names;
}

Status PlanStepEngine::setFloatInput(const std::string &name,
                                     const std::vector<float> &values) {
  const BufferInfo *b = exec_.plan().findBuffer(name);
  if (!b || b->role != BufferRole::Input)
    return StepEngine::setFloatInput(name, values);
  if (b->dtype != DType::F32)
    return Status::error("input '" + name + "' is " + dtypeName(b->dtype) +
                         "; the data modes feed f32 inputs only");
  if (static_cast<int64_t>(values.size()) != bind_.batch * bind_.seq)
    return Status::error("input '" + name + "' takes " +
                         std::to_string(bind_.batch * bind_.seq) +
                         " values, not " + std::to_string(values.size()));
  // Copied on the executor's stream before the step's own batch copy, so
  // the replay that follows reads it.
  return exec_.writeBuffer(name, values.data(), values.size() * 4);
}

Status PlanStepEngine::drawMasksOnDevice(const std::string &pMask,
                                         uint64_t seed, uint64_t draw,
                                         double eps) {
  if (!canDrawMasks())
    return StepEngine::drawMasksOnDevice(pMask, seed, draw, eps);
  if (!drawer_)
    LLMC_RETURN_IF_ERROR(
        DeviceMaskDrawer::create(exec_, bind_.targets, pMask, drawer_));
  LLMC_RETURN_IF_ERROR(drawer_->draw(seed, draw, eps));
  maskDrawn_ = true;
  return Status::ok();
}

std::vector<StateTensor> PlanStepEngine::stateTensors() const {
  std::vector<StateTensor> params, state;
  for (const BufferInfo &b : exec_.plan().buffers)
    if (b.role == BufferRole::Param || b.role == BufferRole::OptimizerState)
      (b.role == BufferRole::Param ? params : state)
          .push_back({b.name, b.role == BufferRole::OptimizerState, b.dtype,
                      // A checkpoint holds the model's shape (docs/padding.md).
                      b.realShape.empty() ? b.shape : b.realShape});
  // The optimizer's step count lives in a scalar slot; a checkpoint holds
  // it as the tensor `step`, as the CPU evaluator's state names it.
  if (bind_.hasStep && !exec_.plan().findBuffer("step"))
    state.push_back({"step", true, DType::I64, {}});
  params.insert(params.end(), state.begin(), state.end());
  return params;
}

Status PlanStepEngine::readState(const StateTensor &tensor,
                                 std::vector<uint8_t> &bytes) {
  if (const BufferInfo *b = exec_.plan().findBuffer(tensor.name))
    return copyLogical(exec_, *b, tensor.shape, bytes, /*toDevice=*/false);
  double value = 0;
  LLMC_RETURN_IF_ERROR(exec_.readScalar(tensor.name, value));
  int64_t v = static_cast<int64_t>(value);
  bytes.resize(8);
  std::memcpy(bytes.data(), &v, 8);
  return Status::ok();
}

Status PlanStepEngine::writeState(const StateTensor &tensor,
                                  const std::vector<uint8_t> &bytes) {
  if (const BufferInfo *b = exec_.plan().findBuffer(tensor.name)) {
    std::vector<uint8_t> copy = bytes;
    return copyLogical(exec_, *b, tensor.shape, copy, /*toDevice=*/true);
  }
  int64_t v = 0;
  if (bytes.size() != 8)
    return Status::error("state tensor '" + tensor.name + "' needs 8 bytes");
  std::memcpy(&v, bytes.data(), 8);
  return exec_.setScalar(tensor.name, static_cast<double>(v));
}

} // namespace llmc
