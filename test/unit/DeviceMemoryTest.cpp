//===- DeviceMemoryTest.cpp - The memory report's exact items
//--------------===//
#include "runtime/DeviceMemory.h"

#include <gtest/gtest.h>

namespace llmc {
namespace {

Plan planWith(uint64_t arena, size_t slots, bool matmul) {
  Plan plan;
  plan.arenaBytes = arena;
  for (size_t i = 0; i < slots; ++i)
    plan.scalars.push_back({"s" + std::to_string(i), DType::F32, i * 256, 0});
  KernelInfo k;
  k.cubin.assign(70000, 1); // two 64 KiB granules
  plan.kernels.push_back(k);
  plan.steps.push_back({LaunchStep{}, ""});
  if (matmul)
    plan.steps.push_back({MatmulStep{}, ""});
  return plan;
}

TEST(DeviceMemory, ArenaSlotsWorkspaceAndRoundingAreExact) {
  Plan plan = planWith(1000000, 3, true);
  DeviceMemoryPlan m = planDeviceMemory(plan, DeviceFacts());
  uint64_t arena = 1000192; // 256-aligned
  EXPECT_EQ(m.bytesOf("scalar slots"), 768u);
  EXPECT_EQ(m.bytesOf("arena buffers"), arena - 768);
  EXPECT_EQ(m.bytesOf("cuBLASLt workspace"), 32ull << 20);
  uint64_t allocation = arena + (32ull << 20);
  EXPECT_EQ(m.bytesOf("allocation rounding") + allocation, 34ull << 20);
  EXPECT_EQ(m.bytesOf("modules"), 128ull << 10);
  EXPECT_EQ(m.bytesOf("local memory"), 0u);
  EXPECT_EQ(m.bytesOf("CUDA graph"), 2048u);
  EXPECT_GT(m.bytesOf("cuBLASLt library"), 0u);
  EXPECT_EQ(m.bytesOf("input staging"), 0u);
  uint64_t sum = 0;
  for (const DeviceMemoryItem &item : m.items)
    sum += item.bytes;
  EXPECT_EQ(m.total(), sum);
}

TEST(DeviceMemory, NoMatmulNoLibraryAndLocalMemoryFromTheFacts) {
  Plan plan = planWith(4096, 0, false);
  DeviceFacts facts;
  facts.loaded = true;
  facts.localBytesPerThread = 1024 + 64;
  facts.stackBytesPerThread = 1024;
  facts.residentThreads = 132 * 2048;
  DeviceMemoryPlan m = planDeviceMemory(plan, facts, 12345);
  EXPECT_EQ(m.bytesOf("cuBLASLt library"), 0u);
  EXPECT_EQ(m.bytesOf("local memory"), 64ull * 132 * 2048);
  EXPECT_EQ(m.bytesOf("modules"), 12345u); // measured before load, as given
  facts.localBytesPerThread = 512;         // within the context's stack
  EXPECT_EQ(planDeviceMemory(plan, facts).bytesOf("local memory"), 0u);
}

// The arena's allocation is the exact floor; every item the driver places
// in its own pools adds between nothing and whole 2 MiB pages.
TEST(DeviceMemory, PageBoundsTakeTheArenaExactlyAndPoolItemsInPages) {
  Plan plan = planWith(1000000, 3, true);
  DeviceMemoryPlan m = planDeviceMemory(plan, DeviceFacts());
  DevicePageBounds b = m.pageBounds();
  EXPECT_EQ(b.low, 34ull << 20); // arena + workspace in whole pages
  // modules (128 KiB), graph (2 KiB), library (2 MiB): one page each.
  EXPECT_EQ(b.high, (34ull + 2 + 2 + 2) << 20);
  EXPECT_LE(b.low, m.total());
  EXPECT_GE(b.high, m.total());
  std::string text = formatDeviceMemory(m, "> ");
  EXPECT_NE(text.find("> on the device"), std::string::npos);
  EXPECT_NE(text.find("34.00 MiB to 40.00 MiB"), std::string::npos) << text;
}

TEST(DeviceMemory, ReportNamesEveryItemAndTheTotal) {
  DeviceMemoryPlan m = planDeviceMemory(planWith(1 << 20, 1, true), {});
  std::string text = formatDeviceMemory(m, "> ");
  for (const char *name :
       {"arena buffers", "scalar slots", "cuBLASLt workspace",
        "allocation rounding", "modules", "local memory", "CUDA graph",
        "cuBLASLt library", "input staging", "total"})
    EXPECT_NE(text.find(std::string("> ") + name), std::string::npos) << name;
  EXPECT_NE(text.find(std::to_string(m.total()) + " bytes"), std::string::npos);
  EXPECT_EQ(formatMemoryBytes(0), "0 bytes");
  EXPECT_EQ(formatMemoryBytes(3ull << 30), "3.00 GiB");
}

} // namespace
} // namespace llmc

namespace llmc {
namespace {

/// A batch-8 plan: a 1 MiB token input and a 9 MiB arena.
Plan batch8Plan() {
  Plan plan;
  BufferInfo tokens;
  tokens.name = "tokens";
  tokens.role = BufferRole::Input;
  tokens.dtype = DType::I64;
  tokens.shape = {8, 16};
  tokens.bytes = 1 << 20;
  plan.buffers.push_back(tokens);
  plan.arenaBytes = 9ull << 20;
  return plan;
}

// Persistent 1 MiB, transient 8 MiB at batch 8 (1 MiB per row), fixed
// costs 34 MiB (workspace, rounding, modules...): 20 MiB of transients fit
// only when 55 MiB are free.
TEST(DeviceMemory, BatchThatFitsScalesTheTransientArena) {
  Plan plan = batch8Plan();
  EXPECT_EQ(planBatch(plan), 8);
  DeviceMemoryPlan m = planDeviceMemory(plan, DeviceFacts());
  uint64_t fixed = m.total() - (9ull << 20);
  EXPECT_EQ(batchThatFits(plan, m, fixed + (1ull << 20) + (4ull << 20), 8), 4);
  EXPECT_EQ(batchThatFits(plan, m, fixed + (1ull << 20) + (9ull << 19), 8), 4);
  EXPECT_EQ(batchThatFits(plan, m, fixed + (1ull << 20), 8), 0);
  EXPECT_EQ(batchThatFits(plan, m, fixed + (1ull << 20) + (100ull << 20), 8),
            7); // never above the plan's own batch minus one
  plan.buffers.clear();
  EXPECT_EQ(planBatch(plan), 0);
}

// The out-of-memory hint with cuDNN attention: its workspace (dP, b x h x
// t x t scores, and row sums) is per sequence like the activations, so it
// shrinks with the batch. Counted as a fixed cost, the same free memory
// would hint batch 1 instead of 4.
TEST(DeviceMemory, BatchThatFitsScalesTheCudnnWorkspace) {
  Plan plan = batch8Plan();
  AttentionStep backward;
  backward.backward = true;
  backward.b = 8, backward.hq = backward.hkv = 4;
  backward.sq = backward.skv = 256, backward.d = 64;
  plan.steps.push_back({backward, ""});
  DeviceMemoryPlan m = planDeviceMemory(plan, DeviceFacts());
  uint64_t workspace = m.bytesOf("cuDNN workspace");
  EXPECT_EQ(workspace, (4ull << 20) + (32ull << 10) + 256); // dP, row sums
  uint64_t fixed = m.total() - (9ull << 20) - workspace;
  uint64_t half = (8ull << 20) / 2 + workspace / 2; // at batch 4
  EXPECT_EQ(batchThatFits(plan, m, fixed + (1ull << 20) + half, 8), 4);
  EXPECT_EQ(batchThatFits(plan, m, fixed + (1ull << 20) + half - 1, 8), 3);
}

} // namespace
} // namespace llmc
