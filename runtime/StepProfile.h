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

#include "runtime/Executor.h"
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

/// The bandwidth table (issue 14): per family of ops that run as generated
/// kernels, the bytes they must move (Step::bytes), their time and the rate
/// as GB/s and as a share of `copyGBs` (Executor::measureCopyBandwidth; 0
/// leaves the column out). An op's time is that of all its launches (the
/// launches of one op share the label prefix up to its number, e.g.
/// "layer_norm_grad_57_rows" and "..._57_params"). cuBLASLt and cuDNN steps
/// are left out: their floor is FLOPs, not bytes.
std::string formatBandwidth(const Plan &plan, const std::vector<float> &stepMs,
                            double copyGBs);

/// One profiled training step: the host's spans (hostNowMs()) as the loop
/// and the engine measured them, one after another, and the profiled
/// replay's GPU times. Every part of the step's wall time is a span or a
/// GPU interval of its own; the formatters rebase the host spans on
/// `step.startMs`.
struct StepTimeline {
  HostSpan step;     // from asking for the batch to the end of the step's
                     // log line
  HostSpan dataWait; // the loop waits for the loader's batch
  HostSpan prepare;  // the loop: learning rate, NaN gate, hooks
  HostSpan copy;     // the batch's host-to-device copy, until it landed
  HostSpan scalars;  // scalar uploads before the graph launch
  GpuTimeline gpu;   // the profiled replay (Executor::replayProfiled)
  HostSpan readBack; // reading the loss and the norm back
  HostSpan log;      // the loop: NaN check, the log line and JSON line
  double plainGraphMs = 0; // the graph without event nodes, the step
                           // before (0: not measured)
  double captureMs = 0;    // capturing the profiled graph, before the run
                           // (0: not measured)
};

/// The per-step GPU times of a timeline (end - start).
std::vector<float> kernelTimes(const StepTimeline &t);

/// Where a step's time went, in ms. Everything but `unattributed` is
/// measured: host spans on the host's clock, kernels, launch and gaps on
/// the GPU's, and `sync`, the replay's host span less the GPU time between
/// its events. `unattributed` is the wall time that none of the spans
/// covers (host work between them).
struct PhaseTimes {
  double data = 0;       // dataWait + copy
  double forward = 0, backward = 0, optimizer = 0; // kernel times by phase
  double host = 0;       // prepare + scalars + readBack + log
  double launch = 0;     // from the start event to the first kernel's start
  double gaps = 0;       // between launches, and after the last one
  double sync = 0;       // host/GPU hand-off around the replay: the host
                         // until the GPU ran the start event, and from the
                         // end event until the host's wait returned
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
/// host's spans (data wait, prepare, copy, scalars, the replay with its
/// cuGraphLaunch call, read-back, log) on thread 0. A launch's GPU start is
/// placed from the host's read before the start event's record, the
/// earliest it can be. `otherData` holds the plan's name and the breakdown
/// (PhaseTimes, ms).
std::string formatChromeTrace(const Plan &plan, const StepTimeline &t);

} // namespace llmc

#endif // LLMC_RUNTIME_STEPPROFILE_H
