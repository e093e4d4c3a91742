//===- StepProfile.h - Where the time of one step goes ----------*- C++ -*-===//
//
// `llmc train --device cuda --profile` runs its last step as a replay of
// the captured graph with an event pair around every launch
// (Executor::replayProfiled) and prints this report: time per kernel family
// (the kernel name without its op counter, so "attention_grad_57_kv" and
// "attention_grad_81_kv" add up under "attention_grad_kv"; every cuBLASLt
// call is "matmul"), then the slowest single steps. It is what tells fusion
// and kernel work where to look.
//
// `--breakdown` puts that step's wall time into phases (docs/trainer.md,
// "Breakdown and trace"): data, forward, backward, optimizer (each launch's
// phase comes from the compiler, Plan.h StepPhase), host, graph launch and
// the gaps between launches, and what is left unattributed. `--trace` writes
// the same step as a Chrome trace.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_STEPPROFILE_H
#define LLMC_RUNTIME_STEPPROFILE_H

#include "runtime/Plan.h"

#include <string>
#include <vector>

namespace llmc {

/// "attention_grad_57_kv" -> "attention_grad_kv": the name without its
/// purely numeric parts.
std::string kernelFamily(const std::string &name);

/// The family and the display name of step `index` of `plan`.
std::string stepFamily(const Plan &plan, size_t index);
std::string stepName(const Plan &plan, size_t index);

/// The report: families by total time, then the `top` slowest steps.
/// `stepMs` has one entry per plan step.
std::string formatStepProfile(const Plan &plan,
                              const std::vector<float> &stepMs,
                              size_t top = 15);

/// One profiled training step, host and GPU side, in ms. The host times
/// follow one another: the loop waits for the batch, the engine copies it,
/// writes the scalars, launches the graph (whose GPU timeline starts at the
/// event right before the launch) and, once the graph is done, reads the
/// loss and the norm back.
struct StepTimeline {
  double stepMs = 0;     // wall: from asking for the batch to the step's end,
                         // less the profiler's own reading of the events
  double dataWaitMs = 0; // the loop waited for the loader's batch
  double copyMs = 0;     // the batch's host-to-device copy, until it landed
  double hostBeforeMs = 0; // scalar uploads before the graph launch
  double hostAfterMs = 0;  // reading the loss and the norm back
  std::vector<float> startMs, endMs; // per plan step, GPU clock
  double graphEndMs = 0;             // the event after the graph
  double plainGraphMs = 0; // the graph without event nodes, the step
                           // before (0: not measured)
  double profilingMs = 0;  // host time reading the events: left out of
                           // stepMs
};

/// The per-step GPU times of a timeline (end - start).
std::vector<float> kernelTimes(const StepTimeline &t);

/// Where a step's time went. Everything but `unattributed` is measured;
/// `unattributed` is the wall time that none of the measurements covers
/// (host work between them, the wake-up after the GPU finished).
struct PhaseTimes {
  double data = 0;       // dataWaitMs + copyMs
  double forward = 0, backward = 0, optimizer = 0; // kernel times by phase
  double host = 0;       // hostBeforeMs + hostAfterMs
  double launch = 0;     // from the launch to the first kernel's start
  double gaps = 0;       // between launches, and after the last one
  double unattributed = 0;
  double step = 0;       // the wall time all of the above add up to
};
PhaseTimes phaseTimes(const Plan &plan, const StepTimeline &t);

/// The --breakdown report: one line per phase with ms and % of the step.
std::string formatBreakdown(const Plan &plan, const StepTimeline &t);

/// A Chrome trace (chrome://tracing, Perfetto) of one profiled step, on the
/// step's wall clock (0 = asking for the batch): one complete event
/// ("ph": "X") per plan step at its GPU start, named as stepName, on the
/// thread (`tid`) of its phase with the phase as `cat`, and its family,
/// origin (the ops and ONNX nodes it covers), label and index as args; the
/// host's slices (data wait, copy, scalars, graph launch, read-back) on a
/// thread of their own. `otherData` holds the plan's name and the
/// breakdown (PhaseTimes, ms).
std::string formatChromeTrace(const Plan &plan, const StepTimeline &t);

} // namespace llmc

#endif // LLMC_RUNTIME_STEPPROFILE_H
