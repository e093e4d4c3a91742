//===- StepProfileTest.cpp - The --profile report -------------------------===//
#include "runtime/StepProfile.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>

using namespace llmc;

namespace {

Plan profiledPlan() {
  Plan plan;
  for (const char *name : {"attention_grad_57_kv", "attention_grad_81_kv",
                           "add_3", "layer_norm_12_rows"}) {
    KernelInfo k;
    k.name = name;
    plan.kernels.push_back(k);
    LaunchStep launch;
    launch.kernel = static_cast<uint32_t>(plan.kernels.size() - 1);
    plan.steps.push_back({launch, ""});
  }
  MatmulStep mm;
  mm.m = 32, mm.n = 192, mm.k = 64, mm.d = "matmul_3.out0";
  plan.steps.push_back({mm, ""});
  plan.steps.push_back({MemsetStep{"grad:wte", 0}, ""});
  return plan;
}

TEST(StepProfile, FamilyDropsNumericParts) {
  EXPECT_EQ(kernelFamily("attention_grad_57_kv"), "attention_grad_kv");
  EXPECT_EQ(kernelFamily("add_3"), "add");
  EXPECT_EQ(kernelFamily("layer_norm_12_rows"), "layer_norm_rows");
  EXPECT_EQ(kernelFamily("fp8_cast_2"), "fp8_cast");
  EXPECT_EQ(kernelFamily("42"), "42");
}

TEST(StepProfile, StepNames) {
  Plan plan = profiledPlan();
  EXPECT_EQ(stepName(plan, 0), "attention_grad_57_kv");
  EXPECT_EQ(stepName(plan, 4), "matmul_3 [32 x 192 x 64]");
  EXPECT_EQ(stepName(plan, 5), "memset grad:wte");
  EXPECT_EQ(stepFamily(plan, 4), "matmul (cuBLASLt)");
  EXPECT_EQ(stepFamily(plan, 5), "memset");
}

TEST(StepProfile, FamiliesAddUpAndSortByTime) {
  Plan plan = profiledPlan();
  std::string report =
      formatStepProfile(plan, {2.0f, 3.0f, 0.5f, 1.0f, 3.5f, 0.0f}, 2);
  EXPECT_NE(report.find("6 steps, 10.000 ms"), std::string::npos) << report;
  // The two attention kernels add up to 5 ms (50%) and lead the list.
  size_t attn = report.find("attention_grad_kv");
  size_t mm = report.find("matmul (cuBLASLt)");
  ASSERT_NE(attn, std::string::npos) << report;
  ASSERT_NE(mm, std::string::npos) << report;
  EXPECT_LT(attn, mm);
  EXPECT_NE(report.find("5.000   50.0%"), std::string::npos) << report;
  // Only the two slowest single steps are listed.
  size_t slowest = report.find("slowest steps:");
  ASSERT_NE(slowest, std::string::npos);
  std::string tail = report.substr(slowest);
  EXPECT_NE(tail.find("matmul_3"), std::string::npos) << tail;
  EXPECT_NE(tail.find("attention_grad_81_kv"), std::string::npos) << tail;
  EXPECT_EQ(tail.find("add_3"), std::string::npos) << tail;
}

// The bandwidth table counts an op's bytes once and all its launches' time:
// layer_norm_grad_57's rows and params kernels are one op of 300 MB in
// 0.1 + 0.05 ms (2000 GB/s, 2/3 of a 3000 GB/s copy); launches without
// recorded bytes and cuBLASLt calls are left out.
TEST(StepProfile, BandwidthPerOpFamily) {
  Plan plan;
  auto launch = [&](const char *name, uint64_t bytes) {
    KernelInfo k;
    k.name = name;
    plan.kernels.push_back(k);
    LaunchStep l;
    l.kernel = static_cast<uint32_t>(plan.kernels.size() - 1);
    Step step{l, ""};
    step.bytes = bytes;
    plan.steps.push_back(step);
  };
  launch("layer_norm_grad_57_rows", 300000000);
  launch("layer_norm_grad_57_params", 0);
  launch("gelu_grad_9", 100000000);
  launch("gelu_grad_12", 100000000);
  launch("slice_4", 0);
  MatmulStep mm;
  mm.d = "matmul_3.out0";
  Step m{mm, ""};
  m.bytes = 1000000000;
  plan.steps.push_back(m);
  std::string report = formatBandwidth(
      plan, {0.1f, 0.05f, 0.1f, 0.1f, 0.01f, 1.0f}, 3000);
  EXPECT_NE(report.find("device copy 3000 GB/s"), std::string::npos)
      << report;
  EXPECT_NE(report.find("gelu_grad                            2      200.0"
                        "     0.200     1000     33%"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("layer_norm_grad                      1      300.0"
                        "     0.150     2000     67%"),
            std::string::npos)
      << report;
  EXPECT_EQ(report.find("slice"), std::string::npos) << report;
  EXPECT_EQ(report.find("matmul"), std::string::npos) << report;
  // Without a measured copy rate the share column is left out.
  EXPECT_EQ(formatBandwidth(plan, {0.1f, 0.05f, 0.1f, 0.1f, 0.01f, 1.0f}, 0)
                .find('%'),
            std::string::npos);
}

/// profiledPlan's six steps in two phases each, and a timeline whose every
/// number is exact in binary, on a host clock that reads 1000 ms when the
/// step starts: 0.25 ms data wait, 0.125 ms preparing, 0.5 ms copy, 0.125
/// ms scalars; the replay's host span is 3.75 ms, in which the GPU's start
/// event is followed 0.125 ms later by the first launch, launches are 0.5
/// ms long with 0.0625 ms between them, the end event 0.0625 ms after the
/// last (3.5 ms of GPU time, so 0.25 ms of hand-off); then 0.25 ms of
/// read-back and 0.25 ms of log. The step is 5.5 ms: 0.25 ms unattributed.
struct Synthetic {
  Plan plan = profiledPlan();
  StepTimeline t;
  Synthetic() {
    StepPhase phases[] = {StepPhase::Forward,   StepPhase::Forward,
                          StepPhase::Backward,  StepPhase::Backward,
                          StepPhase::Optimizer, StepPhase::Optimizer};
    for (size_t i = 0; i < plan.steps.size(); ++i)
      plan.steps[i].phase = phases[i];
    plan.steps[4].origin = "llmc.matmul \"lm_head\"";
    plan.kernels[0].origin = "llmc.attention_grad \"h.0\"";
    auto span = [](double start, double end) {
      return HostSpan{1000 + start, 1000 + end};
    };
    t.step = span(0, 5.5);
    t.dataWait = span(0, 0.25);
    t.prepare = span(0.25, 0.375);
    t.copy = span(0.375, 0.875);
    t.scalars = span(0.875, 1.0);
    t.gpu.host = span(1.0, 4.75);
    t.gpu.launchCall = span(1.0625, 1.125);
    float at = 0.125f;
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      t.gpu.startMs.push_back(at);
      t.gpu.endMs.push_back(at + 0.5f);
      at += 0.5625f;
    }
    t.gpu.graphEndMs = at; // 0.0625 after the last end
    t.readBack = span(4.75, 5.0);
    t.log = span(5.0, 5.25);
  }
};

TEST(StepProfile, PhaseTimesAddUpToTheStep) {
  Synthetic s;
  PhaseTimes p = phaseTimes(s.plan, s.t);
  EXPECT_DOUBLE_EQ(p.data, 0.75);
  EXPECT_DOUBLE_EQ(p.forward, 1.0);
  EXPECT_DOUBLE_EQ(p.backward, 1.0);
  EXPECT_DOUBLE_EQ(p.optimizer, 1.0);
  EXPECT_DOUBLE_EQ(p.host, 0.75);
  EXPECT_DOUBLE_EQ(p.launch, 0.125);
  EXPECT_DOUBLE_EQ(p.gaps, 6 * 0.0625);
  EXPECT_DOUBLE_EQ(p.sync, 0.25);
  EXPECT_DOUBLE_EQ(p.unattributed, 0.25);
  EXPECT_DOUBLE_EQ(p.step, 5.5);
  std::vector<float> ms = kernelTimes(s.t);
  ASSERT_EQ(ms.size(), 6u);
  EXPECT_FLOAT_EQ(ms[3], 0.5f);
}

TEST(StepProfile, HostWorkBetweenSpansIsUnattributed) {
  // The loop's log ends 1 ms later than its last span says (work nobody
  // timed): the step grows and so does unattributed, by exactly that.
  Synthetic s;
  s.t.step.endMs += 1.0;
  PhaseTimes p = phaseTimes(s.plan, s.t);
  EXPECT_DOUBLE_EQ(p.unattributed, 1.25);
  // A slower hand-off is sync, not unattributed.
  Synthetic t;
  t.t.gpu.host.endMs += 0.5;
  t.t.readBack.startMs += 0.5;
  t.t.readBack.endMs += 0.5;
  t.t.log.startMs += 0.5;
  t.t.log.endMs += 0.5;
  t.t.step.endMs += 0.5;
  PhaseTimes q = phaseTimes(t.plan, t.t);
  EXPECT_DOUBLE_EQ(q.sync, 0.75);
  EXPECT_DOUBLE_EQ(q.unattributed, 0.25);
}

TEST(StepProfile, BreakdownReportHasEveryPhase) {
  Synthetic s;
  s.t.plainGraphMs = 3.25;
  s.t.captureMs = 2.5;
  std::string report = formatBreakdown(s.plan, s.t);
  EXPECT_NE(report.find("breakdown: 5.500 ms step, 6 launches"),
            std::string::npos)
      << report;
  for (const char *line :
       {"data               0.750 ms   13.6%", "forward            1.000 ms",
        "backward           1.000 ms", "optimizer          1.000 ms",
        "host               0.750 ms", "launch             0.125 ms",
        "gaps               0.375 ms    6.8%",
        "sync               0.250 ms    4.5%",
        "unattributed       0.250 ms    4.5%",
        "3.500 ms with the event nodes, 3.250 ms without",
        "outside the step: capturing the profiled graph took 2.500 ms"})
    EXPECT_NE(report.find(line), std::string::npos) << line << "\n" << report;
}

TEST(StepProfile, ChromeTraceHasOneSlicePerLaunchByPhase) {
  Synthetic s;
  auto trace = nlohmann::json::parse(formatChromeTrace(s.plan, s.t));
  std::vector<nlohmann::json> launches, host;
  std::map<int, std::string> threads;
  for (const auto &e : trace["traceEvents"]) {
    if (e["ph"] == "M") {
      if (e["name"] == "thread_name")
        threads[e["tid"].get<int>()] = e["args"]["name"];
      continue;
    }
    ASSERT_EQ(e["ph"], "X");
    (e["tid"] == 0 ? host : launches).push_back(e);
  }
  EXPECT_EQ(threads[0], "host");
  EXPECT_EQ(threads[1], "GPU forward");
  EXPECT_EQ(threads[2], "GPU backward");
  EXPECT_EQ(threads[3], "GPU optimizer");
  ASSERT_EQ(launches.size(), s.plan.steps.size());
  const char *cats[] = {"forward",  "forward",   "backward",
                        "backward", "optimizer", "optimizer"};
  for (size_t i = 0; i < launches.size(); ++i) {
    const auto &e = launches[i];
    EXPECT_EQ(e["args"]["step"], i);
    EXPECT_EQ(e["cat"], cats[i]);
    EXPECT_EQ(e["tid"], 1 + i / 2);
    // On the step's clock, from the replay's start (1 ms into the step).
    EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1000.0 + 125.0 + 562.5 * i);
    EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 500.0);
  }
  EXPECT_EQ(launches[0]["name"], "attention_grad_57_kv");
  EXPECT_EQ(launches[0]["args"]["family"], "attention_grad_kv");
  EXPECT_EQ(launches[0]["args"]["origin"], "llmc.attention_grad \"h.0\"");
  EXPECT_EQ(launches[4]["name"], "matmul_3 [32 x 192 x 64]");
  EXPECT_EQ(launches[4]["args"]["origin"], "llmc.matmul \"lm_head\"");
  EXPECT_EQ(launches[5]["name"], "memset grad:wte");
  // The host's spans in order, on the step's clock: wait, prepare, copy,
  // scalars, the replay with its cuGraphLaunch call inside, read-back, log.
  ASSERT_EQ(host.size(), 8u);
  const char *names[] = {"wait for the batch",
                         "prepare the step",
                         "copy the batch to the GPU",
                         "write scalars",
                         "replay the graph and wait for it",
                         "cuGraphLaunch",
                         "read the loss and norm back",
                         "log the step"};
  double starts[] = {0, 250, 375, 875, 1000, 1062.5, 4750, 5000};
  double durs[] = {250, 125, 500, 125, 3750, 62.5, 250, 250};
  for (size_t i = 0; i < host.size(); ++i) {
    EXPECT_EQ(host[i]["name"], names[i]);
    EXPECT_DOUBLE_EQ(host[i]["ts"].get<double>(), starts[i]) << names[i];
    EXPECT_DOUBLE_EQ(host[i]["dur"].get<double>(), durs[i]) << names[i];
  }
  EXPECT_EQ(host[0]["cat"], "data");
  const auto &other = trace["otherData"];
  EXPECT_EQ(other["launches"], 6);
  EXPECT_DOUBLE_EQ(other["step_ms"].get<double>(), 5.5);
  double sum = 0;
  for (auto &[phase, ms] : other["breakdown_ms"].items())
    sum += ms.get<double>();
  EXPECT_DOUBLE_EQ(sum, 5.5);
  EXPECT_DOUBLE_EQ(other["breakdown_ms"]["unattributed"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(other["breakdown_ms"]["sync"].get<double>(), 0.25);
}

} // namespace
