//===- LoadPhases.h - Named wall-clock phases of a warm start -*- C++ -*-===//
//
// Where a warm start's time goes (issue 17: a fresh process ready in
// <= 0.5 s): the compile cache's lookup and the executor's load each note
// their phases in order, and the reports print them (`llmc compile`'s
// "warm phases" line, the JIT report's `phases`). Wall time, since a warm
// start waits on page faults and the driver as much as it computes.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_LOADPHASES_H
#define LLMC_RUNTIME_LOADPHASES_H

#include <chrono>
#include <cstdio>
#include <sys/resource.h>
#include <string>
#include <utility>
#include <vector>

namespace llmc {

struct LoadPhases {
  std::vector<std::pair<std::string, double>> phases; // name, seconds
  /// Per phase, the process's CPU time (all threads): far below the wall
  /// time, the phase waited (page faults from disk, the driver, a loaded
  /// machine); above it, threads worked in parallel.
  std::vector<double> cpuSeconds;

  /// Notes the time since the last mark (or since construction) as `name`.
  void mark(std::string name) {
    auto now = std::chrono::steady_clock::now();
    double cpu = processCpuSeconds();
    phases.emplace_back(std::move(name),
                        std::chrono::duration<double>(now - last_).count());
    cpuSeconds.push_back(cpu - lastCpu_);
    last_ = now;
    lastCpu_ = cpu;
  }
  /// Restarts the clock without noting anything (time not to count).
  void restart() {
    last_ = std::chrono::steady_clock::now();
    lastCpu_ = processCpuSeconds();
  }
  static double processCpuSeconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
           1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  }
  double seconds(const std::string &name) const {
    double s = 0;
    for (const auto &[n, t] : phases)
      s += n == name ? t : 0;
    return s;
  }
  /// "name 0.012 s (cpu 0.010), name 0.003 s" (a phase added by hand has
  /// no CPU time)
  std::string text() const {
    std::string out;
    for (size_t i = 0; i < phases.size(); ++i) {
      char buf[48];
      if (i < cpuSeconds.size())
        std::snprintf(buf, sizeof buf, " %.3f s (cpu %.3f)", phases[i].second,
                      cpuSeconds[i]);
      else
        std::snprintf(buf, sizeof buf, " %.3f s", phases[i].second);
      out += (out.empty() ? "" : ", ") + phases[i].first + buf;
    }
    return out;
  }

private:
  std::chrono::steady_clock::time_point last_ =
      std::chrono::steady_clock::now();
  double lastCpu_ = processCpuSeconds();
};

} // namespace llmc

#endif // LLMC_RUNTIME_LOADPHASES_H
