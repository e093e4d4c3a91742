//===- LrSchedule.h - The learning rate of each step --------------*- C++ -*-===//
//
// Linear warmup as llm.c does it (step s < warmup runs at lr * (s + 1) /
// warmup, so the first step already learns), then constant, cosine or
// linear decay from lr down to a floor (minLr) at step decaySteps, as
// nanoGPT's get_lr. Steps are 0-based. The CPU and the GPU trainers (and a
// resumed run) call the same function, so their rates are identical.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_LRSCHEDULE_H
#define LLMC_RUNTIME_LRSCHEDULE_H

#include <cstdint>
#include <string>

namespace llmc {

struct LrSchedule {
  enum class Decay { Constant, Cosine, Linear };
  double lr = 1e-3;      // the peak rate, reached at the end of warmup
  int64_t warmup = 0;    // linear warmup steps
  Decay decay = Decay::Constant;
  int64_t decaySteps = 0; // the step at which the floor is reached (0: the run's length)
  double minLr = 0;       // the floor of the decay

  /// The rate of 0-based step `step`.
  double at(int64_t step) const;
};

/// "constant", "cosine", "linear".
const char *decayName(LrSchedule::Decay decay);
bool parseDecay(const std::string &name, LrSchedule::Decay &decay);

} // namespace llmc

#endif // LLMC_RUNTIME_LRSCHEDULE_H
