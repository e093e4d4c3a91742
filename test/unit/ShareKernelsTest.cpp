//===- ShareKernelsTest.cpp - Launches with the same code share a kernel --===//
#include "compiler/codegen/ShareKernels.h"

#include <gtest/gtest.h>

using namespace llmc;
using namespace llmc::codegen;

namespace {

KernelInfo kernel(const std::string &name, const std::string &comment,
                  const std::string &body) {
  KernelInfo k;
  k.name = k.entry = name;
  k.source = "// " + name + ": " + comment + "\n//   more header\n\n" +
             "extern \"C\" __global__ void " + name + "(float *x) { " + body +
             " }\n";
  k.origin = comment;
  return k;
}

Step launch(uint32_t kernel, const std::string &label) {
  LaunchStep l;
  l.kernel = kernel;
  return {l, label};
}

uint32_t kernelOf(const Plan &plan, size_t step) {
  return std::get<LaunchStep>(plan.steps[step].op).kernel;
}

TEST(ShareKernels, CanonicalFormDropsHeaderAndName) {
  EXPECT_EQ(canonicalKernelSource("// cast_9: layer 0\n  // more\nvoid "
                                  "cast_9(int cast_90) { cast_9x; }\n",
                                  "cast_9"),
            "void __llmc_kernel__(int cast_90) { cast_9x; }\n");
  // A comment after code is code's business, and stays.
  EXPECT_EQ(canonicalKernelSource("int a; // z\n", "k"), "int a; // z\n");
}

TEST(ShareKernels, MergesSameCodeKeepsLabels) {
  Plan plan;
  plan.kernels = {kernel("cast_1", "layer 0", "x[0] *= 2.0f;"),
                  kernel("add_2", "layer 0", "x[0] += 1.0f;"),
                  kernel("cast_3", "layer 1", "x[0] *= 2.0f;"),
                  kernel("cast_4", "layer 2", "x[0] *= 3.0f;"),
                  kernel("add_5", "layer 1", "x[0] += 1.0f;")};
  for (uint32_t i = 0; i < 5; ++i)
    plan.steps.push_back(launch(i, plan.kernels[i].name));
  MatmulStep mm;
  plan.steps.insert(plan.steps.begin() + 2, Step{mm, "mm"});

  EXPECT_EQ(shareIdenticalKernels(plan), 2u);
  ASSERT_EQ(plan.kernels.size(), 3u);
  EXPECT_EQ(plan.kernels[0].name, "cast_1");
  EXPECT_EQ(plan.kernels[1].name, "add_2");
  EXPECT_EQ(plan.kernels[2].name, "cast_4");
  // The kept source is the first one, untouched.
  EXPECT_NE(plan.kernels[0].source.find("// cast_1: layer 0"),
            std::string::npos);
  EXPECT_NE(plan.kernels[0].origin.find("shared by 2 launches"),
            std::string::npos);
  EXPECT_EQ(plan.kernels[2].origin, "layer 2");
  EXPECT_EQ(kernelOf(plan, 0), 0u);
  EXPECT_EQ(kernelOf(plan, 1), 1u);
  EXPECT_EQ(kernelOf(plan, 3), 0u); // cast_3
  EXPECT_EQ(kernelOf(plan, 4), 2u); // cast_4
  EXPECT_EQ(kernelOf(plan, 5), 1u); // add_5
  EXPECT_EQ(plan.steps[3].label, "cast_3");
}

TEST(ShareKernels, DifferentOptionsOrNoSourceStayApart) {
  Plan plan;
  plan.kernels = {kernel("a_1", "", "x[0] = 1.0f;"),
                  kernel("a_2", "", "x[0] = 1.0f;"),
                  kernel("a_3", "", "x[0] = 1.0f;"), KernelInfo{}, KernelInfo{}};
  plan.kernels[1].fastMath = true;
  plan.kernels[2].options = {"-DX=1"};
  plan.kernels[3].name = plan.kernels[3].entry = "binary_only";
  plan.kernels[3].cubin = {1, 2, 3};
  plan.kernels[4] = plan.kernels[3];
  for (uint32_t i = 0; i < 5; ++i)
    plan.steps.push_back(launch(i, ""));
  EXPECT_EQ(shareIdenticalKernels(plan), 0u);
  EXPECT_EQ(plan.kernels.size(), 5u);
  EXPECT_EQ(kernelOf(plan, 4), 4u);
}

} // namespace
