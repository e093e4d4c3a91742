//===- StepProfile.cpp - Where the time of one step goes ------------------===//
#include "runtime/StepProfile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>

namespace llmc {

std::string kernelFamily(const std::string &name) {
  std::string out;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('_', start);
    if (end == std::string::npos)
      end = name.size();
    std::string part = name.substr(start, end - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(),
                                                [](char c) {
                                                  return c >= '0' && c <= '9';
                                                });
    if (!numeric && !part.empty())
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
  return "memset " + std::get<MemsetStep>(step.op).buffer;
}

std::string stepFamily(const Plan &plan, size_t index) {
  const Step &step = plan.steps[index];
  if (const auto *launch = std::get_if<LaunchStep>(&step.op))
    return kernelFamily(plan.kernels[launch->kernel].name);
  if (std::holds_alternative<MatmulStep>(step.op))
    return "matmul (cuBLASLt)";
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

std::string formatChromeTrace(const Plan &plan,
                              const std::vector<float> &stepMs) {
  nlohmann::json events = nlohmann::json::array();
  double us = 0;
  size_t n = std::min(stepMs.size(), plan.steps.size());
  for (size_t i = 0; i < n; ++i) {
    double dur = 1000.0 * stepMs[i];
    nlohmann::json args = {{"step", i}};
    if (const auto *launch = std::get_if<LaunchStep>(&plan.steps[i].op))
      args["origin"] = plan.kernels[launch->kernel].origin;
    if (!plan.steps[i].label.empty())
      args["label"] = plan.steps[i].label;
    events.push_back({{"name", stepName(plan, i)},
                      {"cat", stepFamily(plan, i)},
                      {"ph", "X"},
                      {"ts", us},
                      {"dur", dur},
                      {"pid", 0},
                      {"tid", 0},
                      {"args", args}});
    us += dur;
  }
  nlohmann::json trace = {{"traceEvents", events},
                          {"displayTimeUnit", "ms"},
                          {"otherData", {{"plan", plan.name}}}};
  return trace.dump() + "\n";
}

} // namespace llmc
