//===- CpuTrainer.h - Training steps on the reference evaluator ---*- C++ -*-===//
//
// Builds the training step of a model (docs/training-ir.md: append-loss when
// the graph ends in logits, autodiff, and optionally the optimizer) and runs
// it in the CPU reference evaluator, threading parameters and optimizer
// state from one step to the next through the `llmc.next` results. It is the
// oracle the GPU trainer is checked against, the engine of `llmc verify`,
// and `llmc train --device cpu`.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CPUTRAINER_H
#define LLMC_COMPILER_CPUTRAINER_H

#include "compiler/Train.h"
#include "compiler/eval/RefTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llmc {

struct FusionConfig; // compiler/Pipeline.h

/// One data input of the step function: its name and type.
struct StepInput {
  std::string name;
  RefTensor type; // zero-filled, with the argument's kind and shape
};

class CpuTrainer {
public:
  /// Turns `module` (with @forward) into a step function in place.
  /// `optimizer` null: the step returns the loss and one gradient per
  /// trainable parameter; otherwise the step also updates parameters and
  /// state. Errors are emitted as diagnostics.
  /// `fusion` non-null: the step also takes the fusions of the GPU's step
  /// that change its numerics (addRoundingFusions), as `llmc verify` needs.
  static mlir::FailureOr<std::unique_ptr<CpuTrainer>>
  create(mlir::ModuleOp module, const OptimizerConfig *optimizer,
         uint64_t seed, const PrecisionConfig &precision = {},
         const std::string &injectNanOp = "",
         const RecomputeConfig &recompute = {},
         const FusionConfig *fusion = nullptr);

  /// Gradient accumulation (OptimizerConfig::accumulate): each step runs
  /// @accumulate_step on `k` micro-batches, rows [i * B, (i + 1) * B) of
  /// the batch, then the apply step once; inputs() then have k * B rows.
  /// Without accumulation only k = 1 is allowed.
  mlir::LogicalResult setMicroBatches(int64_t k);
  int64_t microBatches() const { return microBatches_; }
  /// Rows of one micro-batch (B); 0 without accumulation.
  int64_t microBatchRows() const { return microRows_; }

  /// The data inputs (not lr) in argument order.
  const std::vector<StepInput> &inputs() const { return inputs_; }

  /// Runs one step on `batch` (keyed by input name). Returns the loss; with
  /// an optimizer, parameters and state move to their next values.
  mlir::FailureOr<double> step(const std::map<std::string, RefTensor> &batch,
                               double lr = 0.0, bool skipNonFinite = false);

  /// After a step: its gradient norm (the `grad_norm` result, with
  /// --clip-norm), and whether its update was applied (false only for a
  /// non-finite step run with skipNonFinite, which leaves the state as it
  /// was).
  bool hasGradNorm() const { return hasGradNorm_; }
  double gradNorm() const { return gradNorm_; }
  bool applied() const { return applied_; }

  /// Dynamic loss scaling (--precision fp16): whether the step has it, the
  /// scale after the last step's update of it, whether its gradients overflowed (the
  /// step skipped its own update and halved the scale), and the steps the
  /// scaler has skipped so far (its `amp.skipped` state).
  bool hasLossScale() const { return scaleArg_ >= 0; }
  double lossScale() const { return lossScale_; }
  bool overflowed() const { return overflow_; }
  int64_t scalerSkipped() const;

  /// The training state: parameters, then optimizer state, each an argument
  /// of the step named as the GPU plan names its buffer (the parameter's
  /// name; `adamw.m:<param>`, `adamw.v:<param>`, `step`), so a checkpoint
  /// means the same on both devices.
  struct StateArgument {
    unsigned index;
    std::string name;
    bool optimizer;
  };
  std::vector<StateArgument> stateArguments() const;
  RefTensor &argument(unsigned index) { return args_[index]; }
  /// The model's shape of argument `index` when llmc-pad-shapes padded it
  /// (a parameter or its optimizer state); nullopt otherwise.
  std::optional<std::vector<int64_t>> realShape(unsigned index) const;

  /// Matmul and attention FLOPs of one training step (forward and
  /// backward, attention's backward counted as twice its forward).
  double stepFlops() const;

  /// --detect-anomaly (compiler/DetectAnomaly.cpp): evaluates the step on
  /// `batch` from the current state (nothing is updated), one op at a time,
  /// and describes the first op whose result holds a NaN or an infinity:
  /// the op, its ONNX node names and position, the result, the function.
  /// "" when every value is finite. A non-finite parameter or optimizer
  /// state from an earlier step is named instead.
  mlir::FailureOr<std::string>
  firstNonFinite(const std::map<std::string, RefTensor> &batch, double lr);

  /// The loss of @forward on `batch` with the current parameters, without
  /// updating anything (validation).
  mlir::FailureOr<double>
  evalLoss(const std::map<std::string, RefTensor> &batch);

  /// After a step without optimizer: the gradients by parameter name, in
  /// the model's own shapes (a padded parameter's padding cut off).
  const std::map<std::string, RefTensor> &gradients() const { return grads_; }

  /// Current parameter values by name, in the model's own shapes.
  std::map<std::string, RefTensor> parameters() const;

  int64_t parameterCount() const;

  /// The parameters llmc-pad-shapes padded: name -> (real, padded shape).
  std::map<std::string, std::pair<std::vector<int64_t>, std::vector<int64_t>>>
  paddedShapes() const;

  /// The vocabulary token ids and targets must stay below (0: no
  /// cross-entropy loss, nothing to check).
  int64_t vocabulary() const;

private:
  // mutable: MLIR op handles are value types whose accessors are not const.
  mutable mlir::func::FuncOp func_, forward_;
  // Accumulation: @accumulate_step, its arguments (accumulators threaded
  // through llmc.next), and where its parameters are in func_'s arguments.
  mutable mlir::func::FuncOp accumulate_;
  std::vector<RefTensor> accArgs_;
  std::vector<std::pair<unsigned, unsigned>> accParams_; // (acc, apply) index
  std::map<std::string, unsigned> accInputArg_;
  std::vector<std::pair<unsigned, unsigned>> accIntoApply_; // acc -> apply
  int64_t microBatches_ = 1, microRows_ = 0;
  mlir::LogicalResult bindAccumulate(mlir::func::FuncOp acc);
  mlir::LogicalResult runWindow(const std::map<std::string, RefTensor> &batch);
  bool withOptimizer_ = false;
  std::vector<RefTensor> args_;
  std::vector<StepInput> inputs_;
  std::map<std::string, unsigned> inputArg_;
  int lrArg_ = -1;
  std::map<std::string, RefTensor> grads_;
  double gradNorm_ = 0;
  bool hasGradNorm_ = false, applied_ = true;
  int scaleArg_ = -1;     // the `amp.scale` state argument
  double lossScale_ = 0;  // the scale after the last step
  bool overflow_ = false; // its unscaled gradients were not finite
  // Real shapes of the parameters llmc-pad-shapes padded, by name.
  std::map<std::string, std::vector<int64_t>> realShapes_;

  /// Puts `batch` and `lr` into the step's arguments.
  mlir::LogicalResult setBatch(const std::map<std::string, RefTensor> &batch,
                               double lr);
  /// `t` (parameter `name`'s shape in the step) in the model's shape.
  RefTensor unpadded(const std::string &name, const RefTensor &t) const;
  /// The step's parameters by name, as the step holds them.
  std::map<std::string, RefTensor> stepParameters() const;
};

} // namespace llmc

#endif // LLMC_COMPILER_CPUTRAINER_H
