//===- StepProfile.cpp - Where the time of one step goes ------------------===//
#include "runtime/StepProfile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>

namespace llmc {

namespace {

/// Whether a part of a kernel name between underscores is an op counter.
bool numericPart(const std::string &part) {
  return !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
    return c >= '0' && c <= '9';
  });
}

} // namespace

std::string kernelFamily(const std::string &name) {
  std::string out;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('_', start);
    if (end == std::string::npos)
      end = name.size();
    std::string part = name.substr(start, end - start);
    if (!numericPart(part) && !part.empty())
      out += (out.empty() ? "" : "_") + part;
    start = end + 1;
  }
  return out.empty() ? name : out;
}

std::string stepName(const Plan &plan, size_t index) {
  const Step &step = plan.steps[index];
  // Launches that share one kernel (ShareKernels.h) keep their op's name in
  // the label.
  if (const auto *launch = std::get_if<LaunchStep>(&step.op))
    return step.label.empty() ? plan.kernels[launch->kernel].name
                              : step.label;
  if (const auto *mm = std::get_if<MatmulStep>(&step.op)) {
    // Named after its result ("matmul_3.out0" -> "matmul_3") with the shape.
    std::string d = mm->d.substr(0, mm->d.find('.'));
    char dims[96];
    std::snprintf(dims, sizeof dims, " [%lld x %lld x %lld]%s",
                  static_cast<long long>(mm->m), static_cast<long long>(mm->n),
                  static_cast<long long>(mm->k),
                  mm->batch > 1 ? " batched" : "");
    return d + dims;
  }
  if (const auto *a = std::get_if<AttentionStep>(&step.op))
    return step.label.empty()
               ? std::string(a->backward ? "cudnn attention backward"
                                         : "cudnn attention forward")
               : step.label;
  return "memset " + std::get<MemsetStep>(step.op).buffer;
}

std::string stepFamily(const Plan &plan, size_t index) {
  const Step &step = plan.steps[index];
  if (const auto *launch = std::get_if<LaunchStep>(&step.op))
    return kernelFamily(plan.kernels[launch->kernel].name);
  if (std::holds_alternative<MatmulStep>(step.op))
    return "matmul (cuBLASLt)";
  if (std::holds_alternative<AttentionStep>(step.op))
    return "attention (cuDNN)";
  return "memset";
}

std::string formatStepProfile(const Plan &plan,
                              const std::vector<float> &stepMs, size_t top) {
  struct Family {
    double ms = 0;
    size_t steps = 0;
  };
  std::map<std::string, Family> families;
  size_t n = std::min(stepMs.size(), plan.steps.size());
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    Family &f = families[stepFamily(plan, i)];
    f.ms += stepMs[i];
    ++f.steps;
    total += stepMs[i];
  }
  std::vector<std::pair<std::string, Family>> sorted(families.begin(),
                                                     families.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](auto &a, auto &b) {
    return a.second.ms > b.second.ms;
  });
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line,
                "profile: %zu steps, %.3f ms of GPU time (launch gaps "
                "excluded)\n%-40s %7s %10s %7s\n",
                n, total, "family", "steps", "ms", "%");
  out += line;
  for (auto &[name, f] : sorted) {
    std::snprintf(line, sizeof line, "%-40s %7zu %10.3f %6.1f%%\n",
                  name.c_str(), f.steps, f.ms,
                  total > 0 ? 100.0 * f.ms / total : 0.0);
    out += line;
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return stepMs[a] > stepMs[b]; });
  order.resize(std::min(top, n));
  if (!order.empty()) {
    std::snprintf(line, sizeof line, "slowest steps:\n%-6s %-48s %10s\n",
                  "step", "name", "ms");
    out += line;
  }
  for (size_t i : order) {
    std::snprintf(line, sizeof line, "%-6zu %-48s %10.3f\n", i,
                  stepName(plan, i).c_str(), stepMs[i]);
    out += line;
  }
  return out;
}

namespace {

/// "layer_norm_grad_57_rows" -> "layer_norm_grad_57": the name up to its
/// first purely numeric part, which is the op's (kernels of one op share
/// it); the name itself when it has none.
std::string opKey(const std::string &name) {
  size_t start = 0;
  while (start < name.size()) {
    size_t end = name.find('_', start);
    if (end == std::string::npos)
      end = name.size();
    if (numericPart(name.substr(start, end - start)))
      return name.substr(0, end);
    start = end + 1;
  }
  return name;
}

} // namespace

std::string formatBandwidth(const Plan &plan, const std::vector<float> &stepMs,
                            double copyGBs) {
  struct Op {
    uint64_t bytes = 0;
    double ms = 0;
  };
  std::map<std::string, Op> ops;
  size_t n = std::min(stepMs.size(), plan.steps.size());
  for (size_t i = 0; i < n; ++i) {
    const Step &step = plan.steps[i];
    if (!std::holds_alternative<LaunchStep>(step.op))
      continue;
    Op &op = ops[opKey(stepName(plan, i))];
    op.bytes += step.bytes;
    op.ms += stepMs[i];
  }
  struct Family {
    uint64_t bytes = 0;
    double ms = 0;
    size_t ops = 0;
  };
  std::map<std::string, Family> families;
  for (auto &[key, op] : ops) {
    if (op.bytes == 0)
      continue;
    Family &f = families[kernelFamily(key)];
    f.bytes += op.bytes;
    f.ms += op.ms;
    ++f.ops;
  }
  std::vector<std::pair<std::string, Family>> sorted(families.begin(),
                                                     families.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](auto &a, auto &b) {
    return a.second.ms > b.second.ms;
  });
  std::string out;
  char line[256];
  if (copyGBs > 0)
    std::snprintf(line, sizeof line,
                  "bandwidth: generated kernels on the bytes their ops must "
                  "move; device copy %.0f GB/s\n",
                  copyGBs);
  else
    std::snprintf(line, sizeof line,
                  "bandwidth: generated kernels on the bytes their ops must "
                  "move\n");
  out += line;
  std::snprintf(line, sizeof line, "%-32s %5s %10s %9s %8s %7s\n", "family",
                "ops", "MB", "ms", "GB/s", copyGBs > 0 ? "% copy" : "");
  out += line;
  for (auto &[name, f] : sorted) {
    double gbs = f.ms > 0 ? f.bytes / (f.ms * 1e6) : 0;
    std::snprintf(line, sizeof line, "%-32s %5zu %10.1f %9.3f %8.0f", name.c_str(),
                  f.ops, f.bytes / 1e6, f.ms, gbs);
    out += line;
    if (copyGBs > 0) {
      std::snprintf(line, sizeof line, " %6.0f%%", 100.0 * gbs / copyGBs);
      out += line;
    }
    out += "\n";
  }
  return out;
}

std::vector<float> kernelTimes(const StepTimeline &t) {
  const GpuTimeline &g = t.gpu;
  std::vector<float> ms(std::min(g.startMs.size(), g.endMs.size()));
  for (size_t i = 0; i < ms.size(); ++i)
    ms[i] = g.endMs[i] - g.startMs[i];
  return ms;
}

PhaseTimes phaseTimes(const Plan &plan, const StepTimeline &t) {
  const GpuTimeline &g = t.gpu;
  PhaseTimes p;
  p.step = t.step.ms();
  p.data = t.dataWait.ms() + t.copy.ms();
  p.host = t.prepare.ms() + t.scalars.ms() + t.readBack.ms() + t.log.ms();
  size_t n = std::min({g.startMs.size(), g.endMs.size(), plan.steps.size()});
  p.launch = n > 0 ? g.startMs[0] : g.graphEndMs;
  for (size_t i = 0; i < n; ++i) {
    double ms = g.endMs[i] - g.startMs[i];
    switch (plan.steps[i].phase) {
    case StepPhase::Forward:
      p.forward += ms;
      break;
    case StepPhase::Backward:
      p.backward += ms;
      break;
    case StepPhase::Optimizer:
      p.optimizer += ms;
      break;
    }
    // Until the next launch starts, or the graph's end event after the last.
    double next = i + 1 < n ? g.startMs[i + 1] : g.graphEndMs;
    p.gaps += next - g.endMs[i];
  }
  // launch + kernels + gaps is the GPU time between the replay's two
  // events; the rest of the replay's host span is the hand-off.
  p.sync = g.host.ms() - g.graphEndMs;
  p.unattributed = p.step - (p.data + p.host + p.launch + p.forward +
                             p.backward + p.optimizer + p.gaps + p.sync);
  return p;
}

std::string formatBreakdown(const Plan &plan, const StepTimeline &t) {
  PhaseTimes p = phaseTimes(plan, t);
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line,
                "breakdown: %.3f ms step, %zu launches in the graph "
                "(times of a replay with an event around each launch)\n",
                p.step, plan.steps.size());
  out += line;
  auto row = [&](const char *name, double ms, const char *what) {
    std::snprintf(line, sizeof line, "  %-13s %10.3f ms %6.1f%%  %s\n", name,
                  ms, p.step > 0 ? 100.0 * ms / p.step : 0.0, what);
    out += line;
  };
  row("data", p.data, "waiting for the batch, copying it to the GPU");
  row("forward", p.forward, "kernels and matmuls up to the loss");
  row("backward", p.backward, "the gradients' kernels and matmuls");
  row("optimizer", p.optimizer, "norm, clipping and the update");
  row("host", p.host,
      "the loop, scalar uploads, reading loss and norm back, the log");
  row("launch", p.launch, "graph launch until its first kernel starts");
  row("gaps", p.gaps, "between launches inside the graph");
  row("sync", p.sync, "host/GPU hand-off before and after the graph");
  row("unattributed", p.unattributed, "none of the above");
  if (t.plainGraphMs > 0) {
    std::snprintf(line, sizeof line,
                  "  the graph took %.3f ms with the event nodes, %.3f ms "
                  "without (the step before)\n",
                  static_cast<double>(t.gpu.graphEndMs), t.plainGraphMs);
    out += line;
  }
  if (t.captureMs > 0) {
    std::snprintf(line, sizeof line,
                  "  outside the step: capturing the profiled graph took "
                  "%.3f ms before the run\n",
                  t.captureMs);
    out += line;
  }
  return out;
}

namespace {

/// Chrome trace threads: the host, then one per phase.
constexpr int kHostThread = 0;
int phaseThread(StepPhase phase) { return 1 + static_cast<int>(phase); }

} // namespace

std::string formatChromeTrace(const Plan &plan, const StepTimeline &t) {
  const GpuTimeline &g = t.gpu;
  nlohmann::json events = nlohmann::json::array();
  auto thread = [&](int tid, const std::string &name) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", tid},
                      {"args", {{"name", name}}}});
  };
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"args", {{"name", "llmc step: " + plan.name}}}});
  thread(kHostThread, "host");
  for (StepPhase phase :
       {StepPhase::Forward, StepPhase::Backward, StepPhase::Optimizer})
    thread(phaseThread(phase), std::string("GPU ") + phaseName(phase));
  double origin = t.step.startMs;
  auto slice = [&](const std::string &name, const std::string &cat, int tid,
                   double startMs, double ms, nlohmann::json args) {
    events.push_back({{"name", name},
                      {"cat", cat},
                      {"ph", "X"},
                      {"ts", 1000.0 * (startMs - origin)},
                      {"dur", 1000.0 * ms},
                      {"pid", 0},
                      {"tid", tid},
                      {"args", std::move(args)}});
  };
  auto host = [&](const char *name, const char *cat, const HostSpan &span) {
    slice(name, cat, kHostThread, span.startMs, span.ms(),
          nlohmann::json::object());
  };
  host("wait for the batch", "data", t.dataWait);
  host("prepare the step", "host", t.prepare);
  host("copy the batch to the GPU", "data", t.copy);
  host("write scalars", "host", t.scalars);
  host("replay the graph and wait for it", "replay", g.host);
  host("cuGraphLaunch", "launch", g.launchCall);
  size_t n = std::min({g.startMs.size(), g.endMs.size(), plan.steps.size()});
  for (size_t i = 0; i < n; ++i) {
    const Step &step = plan.steps[i];
    nlohmann::json args = {{"step", i}, {"family", stepFamily(plan, i)}};
    if (const auto *launch = std::get_if<LaunchStep>(&step.op))
      args["origin"] = plan.kernels[launch->kernel].origin;
    else if (!step.origin.empty())
      args["origin"] = step.origin;
    if (!step.label.empty())
      args["label"] = step.label;
    slice(stepName(plan, i), phaseName(step.phase), phaseThread(step.phase),
          g.host.startMs + g.startMs[i], g.endMs[i] - g.startMs[i],
          std::move(args));
  }
  host("read the loss and norm back", "host", t.readBack);
  host("log the step", "host", t.log);
  PhaseTimes p = phaseTimes(plan, t);
  nlohmann::json breakdown = {
      {"data", p.data},         {"forward", p.forward},
      {"backward", p.backward}, {"optimizer", p.optimizer},
      {"host", p.host},         {"launch", p.launch},
      {"gaps", p.gaps},         {"sync", p.sync},
      {"unattributed", p.unattributed}};
  nlohmann::json trace = {{"traceEvents", events},
                          {"displayTimeUnit", "ms"},
                          {"otherData",
                           {{"plan", plan.name},
                            {"launches", plan.steps.size()},
                            {"step_ms", p.step},
                            {"breakdown_ms", breakdown}}}};
  return trace.dump() + "\n";
}

} // namespace llmc
