//===- StepProfile.h - Where the time of one step goes ----------*- C++ -*-===//
//
// `llmc train --device cuda --profile` runs its last step with an event pair
// around every launch (Executor::runProfiled) and prints this report: time
// per kernel family (the kernel name without its op counter, so
// "attention_grad_57_kv" and "attention_grad_81_kv" add up under
// "attention_grad_kv"; every cuBLASLt call is "matmul"), then the slowest
// single steps. It is what tells fusion and kernel work where to look.
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

/// A Chrome trace (chrome://tracing, Perfetto) of one profiled step: one
/// complete event ("ph": "X") per plan step, named as stepName, with its
/// family as the category and the kernel's origin (the ops it fuses) and the
/// step index as args. Slices are laid end to end in plan order: the times
/// are the GPU times of a kernel-by-kernel run, so launch gaps are left out.
std::string formatChromeTrace(const Plan &plan,
                              const std::vector<float> &stepMs);

} // namespace llmc

#endif // LLMC_RUNTIME_STEPPROFILE_H
