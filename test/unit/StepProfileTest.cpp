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

/// profiledPlan's six steps in two phases each, and a timeline whose every
/// number is exact in binary: the GPU starts 1 ms into the step (0.25 ms
/// data wait, 0.5 ms copy, 0.25 ms scalars), the graph's first launch 0.125
/// ms after its start event, launches 0.5 ms long with 0.0625 ms between
/// them, the end event 0.0625 ms after the last, then 0.25 ms of read-back.
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
    t.dataWaitMs = 0.25;
    t.copyMs = 0.5;
    t.hostBeforeMs = 0.25;
    float at = 0.125f;
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      t.startMs.push_back(at);
      t.endMs.push_back(at + 0.5f);
      at += 0.5625f;
    }
    t.graphEndMs = at; // 0.0625 after the last end
    t.hostAfterMs = 0.25;
    // 1 + 3.5 (graph) + 0.25 = 4.75 ms measured; 0.25 ms unattributed.
    t.stepMs = 5.0;
  }
};

TEST(StepProfile, PhaseTimesAddUpToTheStep) {
  Synthetic s;
  PhaseTimes p = phaseTimes(s.plan, s.t);
  EXPECT_DOUBLE_EQ(p.data, 0.75);
  EXPECT_DOUBLE_EQ(p.forward, 1.0);
  EXPECT_DOUBLE_EQ(p.backward, 1.0);
  EXPECT_DOUBLE_EQ(p.optimizer, 1.0);
  EXPECT_DOUBLE_EQ(p.host, 0.5);
  EXPECT_DOUBLE_EQ(p.launch, 0.125);
  EXPECT_DOUBLE_EQ(p.gaps, 6 * 0.0625);
  EXPECT_DOUBLE_EQ(p.unattributed, 0.25);
  EXPECT_DOUBLE_EQ(p.step, 5.0);
  std::vector<float> ms = kernelTimes(s.t);
  ASSERT_EQ(ms.size(), 6u);
  EXPECT_FLOAT_EQ(ms[3], 0.5f);
}

TEST(StepProfile, BreakdownReportHasEveryPhase) {
  Synthetic s;
  s.t.plainGraphMs = 3.25;
  std::string report = formatBreakdown(s.plan, s.t);
  EXPECT_NE(report.find("breakdown: 5.000 ms step, 6 launches"),
            std::string::npos)
      << report;
  for (const char *line :
       {"data               0.750 ms   15.0%", "forward            1.000 ms",
        "backward           1.000 ms", "optimizer          1.000 ms",
        "host               0.500 ms", "launch             0.125 ms",
        "gaps               0.375 ms    7.5%",
        "unattributed       0.250 ms    5.0%",
        "3.500 ms with the event nodes, 3.250 ms without"})
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
    // On the step's clock: the GPU starts after 1 ms of host work.
    EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1000.0 + 125.0 + 562.5 * i);
    EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 500.0);
  }
  EXPECT_EQ(launches[0]["name"], "attention_grad_57_kv");
  EXPECT_EQ(launches[0]["args"]["family"], "attention_grad_kv");
  EXPECT_EQ(launches[0]["args"]["origin"], "llmc.attention_grad \"h.0\"");
  EXPECT_EQ(launches[4]["name"], "matmul_3 [32 x 192 x 64]");
  EXPECT_EQ(launches[4]["args"]["origin"], "llmc.matmul \"lm_head\"");
  EXPECT_EQ(launches[5]["name"], "memset grad:wte");
  // The host's slices, end to end: wait, copy, scalars, graph launch; the
  // read-back after the graph's end event.
  ASSERT_EQ(host.size(), 5u);
  EXPECT_EQ(host[0]["cat"], "data");
  EXPECT_DOUBLE_EQ(host[1]["ts"].get<double>(), 250.0);
  EXPECT_EQ(host[3]["name"], "graph launch");
  EXPECT_DOUBLE_EQ(host[3]["dur"].get<double>(), 125.0);
  EXPECT_DOUBLE_EQ(host[4]["ts"].get<double>(), 4500.0);
  const auto &other = trace["otherData"];
  EXPECT_EQ(other["launches"], 6);
  EXPECT_DOUBLE_EQ(other["step_ms"].get<double>(), 5.0);
  double sum = 0;
  for (auto &[phase, ms] : other["breakdown_ms"].items())
    sum += ms.get<double>();
  EXPECT_DOUBLE_EQ(sum, 5.0);
  EXPECT_DOUBLE_EQ(other["breakdown_ms"]["unattributed"].get<double>(), 0.25);
}

} // namespace
