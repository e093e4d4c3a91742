//===- StepPhases.h - Forward, backward or optimizer, per launch -*- C++ -*-===//
//
// The phase of each lowered op of a training step (runtime/Plan.h
// StepPhase), which `llmc train --breakdown` and `--trace` group kernel times
// by. It is read off the IR, not guessed from kernel names:
//
//   optimizer  an op (or, for a fused group, any op in it) that is an
//              optimizer update, reads the optimizer's state or the learning
//              rate, or has AppendOptimizer's `optimizer` NameLoc (the clip
//              norm's ops; in IR printed without locations they count as
//              backward)
//   forward    every other op up to and including the one that computes the
//              loss (the function result with `llmc.slot = "loss"`)
//   backward   every other op after it: autodiff appends the backward pass
//              after the forward ops, and no later pass moves an op across
//              the loss (rematerialized forward ops are placed before their
//              backward users, so they count as backward, as PyTorch's
//              profiler shows checkpointed recomputation)
//
// A function without a loss slot (an eval step, a plain forward function) is
// forward throughout, apart from optimizer ops.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_STEPPHASES_H
#define LLMC_COMPILER_CODEGEN_STEPPHASES_H

#include "compiler/codegen/FunctionLowering.h"
#include "runtime/Plan.h"

#include <string>
#include <vector>

namespace llmc::codegen {

/// One phase per entry of `lowered.ops`.
std::vector<::llmc::StepPhase> stepPhases(mlir::func::FuncOp func,
                                          const LoweredFunction &lowered);

/// "phases: forward 0-16, backward 17-60, optimizer 61-69": the plan's
/// steps by phase as runs of consecutive steps (what `llmc codegen` prints).
std::string phaseRuns(const ::llmc::Plan &plan);

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_STEPPHASES_H
