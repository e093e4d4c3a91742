//===- StepProfileTest.cpp - The --profile report -------------------------===//
#include "runtime/StepProfile.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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

TEST(StepProfile, ChromeTraceHasOneSlicePerStepEndToEnd) {
  Plan plan = profiledPlan();
  plan.kernels[0].origin = "llmc.attention_grad \"h.0\"";
  std::vector<float> ms = {0.5f, 0.25f, 0.125f, 0.25f, 1.0f, 0.0625f};
  auto trace = nlohmann::json::parse(formatChromeTrace(plan, ms));
  const auto &events = trace["traceEvents"];
  ASSERT_EQ(events.size(), plan.steps.size());
  double end = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i]["ph"], "X");
    EXPECT_EQ(events[i]["args"]["step"], i);
    EXPECT_DOUBLE_EQ(events[i]["ts"].get<double>(), end);
    EXPECT_DOUBLE_EQ(events[i]["dur"].get<double>(), 1000.0 * ms[i]);
    end += 1000.0 * ms[i];
  }
  EXPECT_EQ(events[0]["name"], "attention_grad_57_kv");
  EXPECT_EQ(events[0]["cat"], "attention_grad_kv");
  EXPECT_EQ(events[0]["args"]["origin"], "llmc.attention_grad \"h.0\"");
  EXPECT_EQ(events[4]["cat"], "matmul (cuBLASLt)");
  EXPECT_EQ(events[5]["name"], "memset grad:wte");
}

} // namespace
