//===- PlanBuilder.h - A lowered function as a planned plan -----*- C++ -*-===//
//
// Turns a lowered function (FunctionLowering.h) into the runtime Plan that
// `llmc compile` writes into a bundle (docs/codegen.md §2 and §5):
//
//   - one buffer per value that is not an alias; reshape results alias their
//     operand; a fused group's result (a matmul with its bias epilogue) is
//     the product's buffer; constants are persistent buffers with their data;
//   - persistent buffers: arguments (parameters, optimizer state, inputs),
//     returned values, the gradients the optimizer reads, constants;
//     everything else gets an arena offset by live range (MemoryPlan.h);
//   - a result marked `llmc.next = i` shares argument i's buffer when its
//     group's `in_place` says so (llmc-mark-in-place, docs/kernel-ir.md),
//     else it is copied into argument i's buffer by a copy kernel at the
//     end of the step;
//   - device scalar slots `lr`, `step` and `loss` for the arguments and
//     results marked `llmc.slot` (llmc-mark-scalar-slots: the f32 input
//     `lr`, the i64 state `step`, the f32 rank-0 output `loss`), so that the
//     host sets and reads them with setScalar / readScalar;
//   - initial data: parameters from `llmc.init` or `llmc.init_rule`, drawn
//     as the evaluator's initialParameter draws them (one sampler,
//     compiler/common/ParameterInit.h) but straight into
//     device bytes (DeviceBytes.h), so that the CPU and the GPU start from
//     identical weights for one seed; state starts at zero (the arena
//     is zeroed at load) unless it has an `llmc.init` (fp16's loss scale
//     `amp.scale`), which becomes its initial data as a parameter's does.
//
// Offset tables of multi-tensor kernels (ScratchBuffer::offsetsOf) are
// persistent buffers whose data is filled in once the layout is known.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_PLANBUILDER_H
#define LLMC_COMPILER_CODEGEN_PLANBUILDER_H

#include "compiler/codegen/FunctionLowering.h"

namespace llmc::codegen {

struct PlanBuildOptions {
  uint64_t seed = 0;       // for llmc.init_rule = "normal(STD)"
  bool initialData = true; // false: parameters start at zero (tests)
  /// Every value its own buffer, stacked in program order and named after
  /// the IR ("arg3:wte", "matmul_0.out0"): no live ranges, no in-place
  /// updates or end-of-step copies, no scalar slots. What `llmc codegen`
  /// shows and the codegen GPU tests run; the launch sequence is the same.
  bool unplanned = false;
};

/// Where a function argument or result lives in the plan.
struct ValueLocation {
  bool scalar = false; // a ScalarSlot rather than a buffer
  std::string name;
};

struct PlannedFunction {
  Plan plan;
  std::vector<ValueLocation> arguments; // per function argument
  std::vector<ValueLocation> results;   // per function result (after a step)
  uint64_t persistentBytes = 0;         // part of plan.arenaBytes
  uint64_t unplannedBytes = 0;          // one buffer per value, for reference
  size_t inPlaceUpdates = 0;            // llmc.next results sharing a buffer
  size_t copiedUpdates = 0;             // llmc.next results copied at the end
  size_t overwrittenInputs = 0; // results written over an input (overwrites)
};

/// Errors (an argument type the device cannot hold, a parameter without
/// initial data) are emitted at the function and the result is failure.
mlir::FailureOr<PlannedFunction>
buildPlannedPlan(mlir::func::FuncOp func, const LoweredFunction &lowered,
                 const PlanBuildOptions &options = {});

/// Gradient accumulation (docs/memory.md): @accumulate_step and the apply
/// step (@train_step, from llmc-accumulate-gradients) as one plan over one
/// arena. One memory plan for both (the apply step's positions follow the
/// accumulate step's, so their transients share space); arguments of the
/// same name share a buffer (parameters; the accumulators are the one's
/// state and the other's inputs, role Grad); Plan::accumulateSteps counts
/// the accumulate sequence; the apply sequence ends with a memset of each
/// accumulator. The locations are the apply step's.
mlir::FailureOr<PlannedFunction> buildAccumulatingPlan(
    mlir::func::FuncOp accumulate, const LoweredFunction &accumulateLowered,
    mlir::func::FuncOp apply, const LoweredFunction &applyLowered,
    const PlanBuildOptions &options = {});

/// The unplanned plan (PlanBuildOptions::unplanned, no initial data), with
/// the buffer of each function argument and result.
struct UnplannedPlan {
  Plan plan;
  std::vector<std::string> argumentBuffers; // per function argument
  std::vector<std::string> resultBuffers;   // per function result
};

mlir::FailureOr<UnplannedPlan>
buildUnplannedPlan(mlir::func::FuncOp func, const LoweredFunction &lowered);

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_PLANBUILDER_H
