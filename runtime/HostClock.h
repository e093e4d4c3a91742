//===- HostClock.h - The host clock of a step's breakdown -------*- C++ -*-===//
//
// `llmc train --breakdown` (docs/trainer.md) times a step's host work as
// spans on one clock, read by the loop, the step engine and the executor:
// the steady clock in ms. A span is a pair of reads of its own, so host work
// between two spans is in neither, and shows as unattributed.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_HOSTCLOCK_H
#define LLMC_RUNTIME_HOSTCLOCK_H

#include <chrono>

namespace llmc {

/// Milliseconds on the host's steady clock (an arbitrary origin).
inline double hostNowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// An interval of host time, in hostNowMs() (or relative to a step's start).
struct HostSpan {
  double startMs = 0, endMs = 0;
  double ms() const { return endMs - startMs; }
};

} // namespace llmc

#endif // LLMC_RUNTIME_HOSTCLOCK_H
