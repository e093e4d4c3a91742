//===- PlanStepEngine.h - A compiled training step as a StepEngine -*- C++ -*-===//
//
// `llmc train --device cuda`: the runtime loop (runtime/Trainer.h) driving a
// plan loaded into an Executor, with nothing but the runtime: a bundle
// trains without the compiler.
//
// The plan's contract (docs/codegen.md, "What the trainer expects"): the
// first two integer rank-2 `input` buffers, in argument order, are the token
// ids and the targets, both [B, T]; scalar slots `lr` (f32, written before
// every step), `step` (i64: updates applied so far) and `loss` (f32, read
// after the step); an output buffer `grad_norm` when the step clips or
// scales the loss; the state buffers `amp.scale` and `amp.skipped` when it
// scales the loss (fp16). An eval
// plan (`llmc compile --eval`) has the inputs and `loss` only.
//
// State goes to and from checkpoints through copyLogical, the one place
// where a buffer's stored shape meets the tensor's logical (model) shape:
// a padded buffer (vocab 50257 stored as 50304 rows, its plan `realShape`
// 50257) gives up, and takes, only its logical sub-block; loading writes
// its padding as zeros.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_PLANSTEPENGINE_H
#define LLMC_RUNTIME_PLANSTEPENGINE_H

#include "runtime/Executor.h"
#include "runtime/StepProfile.h"
#include "runtime/Trainer.h"

namespace llmc {

/// What a plan computes: a training step, or the loss only.
enum class PlanKind { Train, Eval };

/// The buffers and slots a trainer feeds and reads.
struct PlanBinding {
  std::string tokens, targets;
  DType tokenType = DType::I64, targetType = DType::I64;
  int64_t batch = 0, seq = 0, vocab = 0;
  bool hasStep = false, hasGradNorm = false;
  // fp16's loss scaler: the state buffers `amp.scale` (f32) and
  // `amp.skipped` (i64), read after the step with the loss.
  bool hasLossScale = false;
  PlanKind kind = PlanKind::Train;
};

/// Finds the binding of `plan`; an error says what the plan lacks.
Status bindPlan(const Plan &plan, PlanKind kind, PlanBinding &out);

/// Copies the logical sub-block `logicalShape` of `buffer` (stored in
/// buffer.shape, each dim >= the logical one) between the device and
/// `bytes` (row-major, logicalShape), through runtime/Padding.h: toDevice
/// writes it with zero padding, else reads it.
Status copyLogical(Executor &executor, const BufferInfo &buffer,
                   const std::vector<int64_t> &logicalShape,
                   std::vector<uint8_t> &bytes, bool toDevice);

class DeviceMaskDrawer;

class PlanStepEngine : public StepEngine {
public:
  ~PlanStepEngine() override;
  /// `executor` must outlive the engine.
  static Status create(Executor &executor, std::unique_ptr<PlanStepEngine> &out);

  std::string description() const override;
  /// Gradient accumulation (a plan with Plan::accumulateSteps, docs/memory.md):
  /// each step is a window of `k` micro-batches of the plan's batch B; the
  /// loop hands it k * B rows, which step() feeds in turn to k replays of
  /// the accumulate graph, then replays the apply graph once. An error for
  /// k > 1 on a plan compiled without accumulation.
  Status setMicroBatches(int64_t k);
  int64_t microBatches() const { return micro_; }
  int64_t batch() const override { return bind_.batch * micro_; }
  int64_t seq() const override { return bind_.seq; }
  int64_t vocab() const override { return bind_.vocab; }
  double flopsPerToken() const override { return flopsPerToken_; }
  /// The update is inside the captured graph: dropping it needs a device
  /// side guard the plan does not have yet.
  bool canSkipUpdate() const override { return false; }
  Status step(const std::vector<int64_t> &tokens,
              const std::vector<int64_t> &targets, double lr, int64_t updates,
              bool skipNonFinite, StepResult &result) override;
  Status evalLoss(const std::vector<int64_t> &tokens,
                  const std::vector<int64_t> &targets, double &loss) override;
  Status beginValidation() override;
  Status setNanGate(double value) override;
  /// The plan's f32 [B, T] input buffers (masked diffusion's p_mask).
  std::vector<std::string> floatInputs() const override;
  Status setFloatInput(const std::string &name,
                       const std::vector<float> &values) override;
  /// On a plan with the mask and p_mask inputs and no accumulation: a
  /// kernel draws them on the stream (runtime/MaskedDiffusionDevice.h),
  /// compiled at the first draw.
  bool canDrawMasks() const override { return micro_ == 1; }
  Status drawMasksOnDevice(const std::string &pMask, uint64_t seed,
                           uint64_t draw, double eps) override;
  Status endValidation() override;
  std::vector<StateTensor> stateTensors() const override;
  Status readState(const StateTensor &tensor,
                   std::vector<uint8_t> &bytes) override;
  Status writeState(const StateTensor &tensor,
                    const std::vector<uint8_t> &bytes) override;

  /// When set, the next step replays the profiled graph
  /// (Executor::replayProfiled) and fills its spans copy, scalars, gpu's
  /// host spans and readBack; the loop measures the others, and
  /// Executor::readProfiled reads the GPU times after the step (--profile,
  /// --breakdown, --trace).
  StepTimeline *profileNext = nullptr;

private:
  explicit PlanStepEngine(Executor &e);
  Status write(const std::string &buffer, DType type,
               const std::vector<int64_t> &values, size_t first, size_t count);

  Executor &exec_;
  PlanBinding bind_;
  // The state saved by beginValidation (or by a lone evalLoss).
  std::vector<std::vector<uint8_t>> saved_;
  bool validating_ = false;
  double gate_ = 1.0; // llmc-inject-nan's `nan_gate` input, when the plan has it
  double flopsPerToken_ = 0;
  int64_t micro_ = 1;
  std::unique_ptr<DeviceMaskDrawer> drawer_;
  bool maskDrawn_ = false; // the next step's targets are drawn on the device
};

} // namespace llmc

#endif // LLMC_RUNTIME_PLANSTEPENGINE_H
