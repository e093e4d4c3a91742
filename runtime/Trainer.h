//===- Trainer.h - The training step loop, for any step engine ----*- C++ -*-===//
//
// The loop that `llmc train` runs (and that an embedding program can run):
// data, learning-rate schedule, step, NaN/inf policy, log, validation,
// checkpoints, signals. It is MLIR-free; the step itself is a StepEngine:
// the CPU reference evaluator (compiler/CpuStepEngine.h) or a compiled plan
// on a GPU (runtime/PlanStepEngine.h). Both run exactly this loop, so what
// CI tests on the CPU (resume bit for bit, NaN policies, signals) is the
// logic the GPU runs.
//
// The pieces are separate so that another driver can use them alone:
//   StepEngine          one step, state access by tensor (this file)
//   LrSchedule          runtime/LrSchedule.h
//   save/loadCheckpoint runtime/Checkpoint.h
//   TrainLoop           the loop over the three (this file)
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_TRAINER_H
#define LLMC_RUNTIME_TRAINER_H

#include "runtime/HostClock.h"
#include "runtime/LrSchedule.h"
#include "runtime/Plan.h"
#include "runtime/Status.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace llmc {

class DataLoader;

/// One tensor of the training state, in its logical (model) shape: what a
/// checkpoint holds. A parameter is named as in the model; optimizer state
/// as the plan names it (`adamw.m:<param>`, `adamw.v:<param>`, `step`).
struct StateTensor {
  std::string name;
  bool optimizer = false; // false: a parameter (model.safetensors)
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t bytes() const;
};

/// What a step reports. The loss and the gradient norm come back to the
/// host anyway (the loss line), so checking them for NaN/inf costs nothing.
struct StepResult {
  double loss = 0;
  double gradNorm = 0;
  bool hasGradNorm = false; // the step computes one only with --clip-norm
  bool applied = true;      // false: a non-finite step whose update was skipped
  // Dynamic loss scaling (fp16), read with the loss: the scale after the
  // step's update of it (GradScaler.get_scale() after update()), whether its gradients overflowed (the step itself skipped its
  // update and halved the scale, on the device: no NaN policy applies),
  // and the steps the scaler has skipped so far (its checkpointed state).
  bool hasLossScale = false;
  double lossScale = 0;
  bool overflow = false;
  int64_t scalerSkipped = 0;
};

/// A training step engine. State read and write go through the tensors'
/// logical shapes, so an engine that holds parameters padded copies the
/// logical part (PlanStepEngine::copyLogical) and checkpoints stay in the
/// model's shapes.
class StepEngine {
public:
  virtual ~StepEngine();
  /// "the CPU reference evaluator", "GPU 0 (NVIDIA H100 80GB HBM3)".
  virtual std::string description() const = 0;
  virtual int64_t batch() const = 0;
  virtual int64_t seq() const = 0;
  /// Token ids and targets must stay below it (0: no check).
  virtual int64_t vocab() const = 0;
  /// Matmul and attention FLOPs of one step (forward and backward) per
  /// token, from the graph; 0 when unknown.
  virtual double flopsPerToken() const = 0;
  /// Whether step(..., skipNonFinite = true) can drop a non-finite update
  /// (else the NaN policies skip and reduce-lr are refused at start).
  virtual bool canSkipUpdate() const = 0;

  /// One step on a [B, T] batch at learning rate `lr`; `updates` is the
  /// number of updates applied so far (the optimizer's step count). With
  /// skipNonFinite, a step whose loss or gradient norm is not finite leaves
  /// parameters and optimizer state as they were (result.applied = false).
  virtual Status step(const std::vector<int64_t> &tokens,
                      const std::vector<int64_t> &targets, double lr,
                      int64_t updates, bool skipNonFinite,
                      StepResult &result) = 0;
  /// The loss at the current parameters; changes no state once
  /// endValidation() has run. The loop brackets each validation pass with
  /// begin/endValidation, so an engine whose loss comes from a training step
  /// at lr 0 saves and restores its state once per pass, not per batch.
  virtual Status evalLoss(const std::vector<int64_t> &tokens,
                          const std::vector<int64_t> &targets,
                          double &loss) = 0;
  virtual Status beginValidation() { return Status::ok(); }
  /// Test only: the value of the `nan_gate` input that llmc-inject-nan put
  /// on one op's output (1: identity, NaN: the injected fault).
  virtual Status setNanGate(double value) {
    (void)value;
    return Status::error("the step has no NaN gate: compile it with "
                         "--debug-inject-nan");
  }
  virtual Status endValidation() { return Status::ok(); }
  /// The names of the step's float [B, T] data inputs, which no token
  /// shard fills: only a data mode that draws them can train such a model.
  virtual std::vector<std::string> floatInputs() const { return {}; }
  /// Sets a float [B, T] data input of the step by name, for the steps
  /// that follow (the masked-diffusion data mode's `p_mask`:
  /// runtime/MaskedDiffusion.h).
  virtual Status setFloatInput(const std::string &name,
                               const std::vector<float> &values) {
    (void)values;
    return Status::error(description() + " has no float input '" + name +
                         "' to set");
  }
  /// Whether drawMasksOnDevice works: the masked-diffusion data mode then draws
  /// on the device (runtime/MaskedDiffusionDevice.h) instead of the host.
  virtual bool canDrawMasks() const { return false; }
  /// Draws the masking of draw `draw` of stream `seed` (drawMasking's, bit
  /// for bit) into the step's mask (its second integer input) and the float
  /// input `pMask`, for the next step() or evalLoss(), which then take an
  /// empty `targets`.
  virtual Status drawMasksOnDevice(const std::string &pMask, uint64_t seed,
                             uint64_t draw, double eps) {
    (void)pMask, (void)seed, (void)draw, (void)eps;
    return Status::error(description() + " draws no masks itself");
  }
  /// --detect-anomaly: after a non-finite step that was not applied
  /// (step(..., skipNonFinite = true)), replays it on the same batch from
  /// the same state and sets `where` to the first op that produced a NaN or
  /// an infinity ("" when the replay finds none). Changes no state.
  virtual Status findAnomaly(const std::vector<int64_t> &tokens,
                             const std::vector<int64_t> &targets, double lr,
                             std::string &where) {
    (void)tokens, (void)targets, (void)lr, (void)where;
    return Status::error("--detect-anomaly replays a bad step from the state "
                         "before its update, which " + description() +
                         " does not keep yet; run it with --device cpu");
  }

  /// The training state, parameters first, in a fixed order.
  virtual std::vector<StateTensor> stateTensors() const = 0;
  /// The bytes of one state tensor in its logical shape (little-endian).
  virtual Status readState(const StateTensor &tensor,
                           std::vector<uint8_t> &bytes) = 0;
  virtual Status writeState(const StateTensor &tensor,
                            const std::vector<uint8_t> &bytes) = 0;
};

/// What to do when a step's loss or gradient norm is NaN or infinite.
enum class NanPolicy {
  Stop,     // stop with an error (the default)
  Skip,     // drop the step's update, go on with the next batch
  ReduceLr, // drop the update and halve the learning rate from then on
  Rollback, // drop the update; after nanPatience bad steps in a row, reload
            // the last checkpoint (weights and optimizer) and go on with
            // the next batch
};
const char *nanPolicyName(NanPolicy policy);
bool parseNanPolicy(const std::string &name, NanPolicy &policy);

/// A step's host spans as the loop measured them (hostNowMs(); HostClock.h).
/// They follow one another, each with clock reads of its own, so the loop's
/// work between them (none is meant to be there) is in none.
struct LoopTimes {
  HostSpan step;     // from asking for the batch to the end of the log line
  HostSpan dataWait; // waiting for the loader's batch
  HostSpan prepare;  // learning rate, NaN gate, the beforeStep hook
  HostSpan engine;   // StepEngine::step
  HostSpan log;      // the NaN check, the log line and JSON line
};

struct TrainOptions {
  int64_t steps = 10;
  LrSchedule schedule;
  uint64_t seed = 0; // recorded in checkpoints: the run's only randomness
  int64_t valEvery = 0, valBatches = 4;
  // Checkpoints (docs/trainer.md): every saveEvery steps into checkpointDir,
  // the last `keep` kept (0: all); resume from a checkpoint or a folder of
  // them.
  int64_t saveEvery = 0;
  std::string checkpointDir;
  int64_t keep = 0;
  std::string resume;
  // An identity of the model, compared on resume in addition to the
  // state's names, dtypes and shapes (e.g. the model file's name).
  std::string modelName;
  NanPolicy onNan = NanPolicy::Stop;
  int64_t nanPatience = 3;
  // Name the first op that made a non-finite value (StepEngine::
  // findAnomaly) before the NaN policy acts.
  bool detectAnomaly = false;
  // Log: a JSON object per step; the progress bar on a terminal.
  std::string logJson;
  int progress = -1; // -1: when stdout is a terminal
  double peakFlops = 989e12; // MFU's denominator (H100/H200 dense bf16)
  // SIGINT/SIGTERM: finish the step, write a checkpoint, return 128+signal.
  bool handleSignals = true;
  // Test only: the 1-based step whose NaN gate is NaN (0: none).
  int64_t nanGateStep = 0;
  // Called around each step with its 0-based index (the CLI's --profile).
  std::function<void(int64_t)> beforeStep, afterStep;
  // Called after each step's log line (before afterStep) with the loop's
  // spans of it (--breakdown).
  std::function<void(int64_t step, const LoopTimes &times)> stepTimes;
};

/// The counters a checkpoint keeps so that a resumed run goes on exactly.
struct TrainState {
  int64_t step = 0;        // steps taken (the next step's 0-based index)
  int64_t updates = 0;     // updates applied (steps minus skipped ones)
  uint64_t dataPosition = 0;
  int64_t nanSteps = 0;    // non-finite steps seen
  int64_t badInARow = 0;
  int64_t rollbacks = 0;
  double lrScale = 1.0;    // halved by each reduce-lr
};

/// Runs the loop: resume if asked, then steps until options.steps. Prints
/// the log on stdout and errors on stderr ("llmc train: error: ...").
/// Returns the exit code: 0, 1 on an error, 128 + signal when stopped by
/// SIGINT/SIGTERM (after the step and a checkpoint).
int runTrainLoop(StepEngine &engine, DataLoader &train, DataLoader *val,
                 const TrainOptions &options);

} // namespace llmc

#endif // LLMC_RUNTIME_TRAINER_H
