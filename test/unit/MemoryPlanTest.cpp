//===- MemoryPlanTest.cpp - The arena planner on synthetic live ranges ----===//
#include "compiler/codegen/MemoryPlan.h"

#include <gtest/gtest.h>

#include <random>

using namespace llmc::codegen;

namespace {

BufferRequest transient(uint64_t bytes, int64_t first, int64_t last) {
  BufferRequest r;
  r.bytes = bytes;
  r.first = first;
  r.last = last;
  return r;
}

BufferRequest persistent(uint64_t bytes) {
  BufferRequest r;
  r.bytes = bytes;
  r.persistent = true;
  return r;
}

BufferRequest alias(int64_t of, int64_t first = 0, int64_t last = 0) {
  BufferRequest r;
  r.aliasOf = of;
  r.first = first;
  r.last = last;
  return r;
}

/// The effective range of every root after aliases widen it.
struct Range {
  bool persistent = false;
  int64_t first = INT64_MAX, last = INT64_MIN;
  uint64_t bytes = 0;
};

/// No two roots that are live at the same time share a byte; every buffer is
/// aligned and inside the arena; persistent buffers sit below the transient
/// region.
void checkLayout(const std::vector<BufferRequest> &requests,
                 const MemoryLayout &layout) {
  ASSERT_EQ(layout.offsets.size(), requests.size());
  std::vector<Range> ranges(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    Range &r = ranges[layout.roots[i]];
    r.persistent = r.persistent || requests[i].persistent;
    r.first = std::min(r.first, requests[i].first);
    r.last = std::max(r.last, requests[i].last);
    r.bytes = std::max<uint64_t>({r.bytes, requests[i].bytes, 1});
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(layout.offsets[i] % kBufferAlignment, 0u) << "buffer " << i;
    uint64_t inRoot = 0; // an alias starts its chain's offsets into its root
    for (int64_t a = int64_t(i); requests[a].aliasOf >= 0;
         a = requests[a].aliasOf)
      inRoot += requests[a].aliasOffset;
    EXPECT_EQ(layout.offsets[i], layout.offsets[layout.roots[i]] + inRoot);
    if (layout.roots[i] != static_cast<int64_t>(i))
      continue;
    EXPECT_LE(layout.offsets[i] + ranges[i].bytes, layout.arenaBytes);
    if (ranges[i].persistent)
      EXPECT_LE(layout.offsets[i] + ranges[i].bytes, layout.persistentBytes);
    else
      EXPECT_GE(layout.offsets[i], layout.persistentBytes);
    for (size_t j = 0; j < i; ++j) {
      if (layout.roots[j] != static_cast<int64_t>(j))
        continue;
      bool live = ranges[i].persistent || ranges[j].persistent ||
                  (ranges[i].first <= ranges[j].last &&
                   ranges[j].first <= ranges[i].last);
      bool overlap = layout.offsets[i] < layout.offsets[j] + ranges[j].bytes &&
                     layout.offsets[j] < layout.offsets[i] + ranges[i].bytes;
      EXPECT_FALSE(live && overlap) << "buffers " << j << " and " << i
                                    << " are live together and overlap";
    }
  }
}

TEST(MemoryPlanTest, DisjointRangesShareMemory) {
  // a: [0, 1], b: [2, 3] never live together: b reuses a's bytes.
  std::vector<BufferRequest> r = {transient(1000, 0, 1), transient(1000, 2, 3)};
  MemoryLayout l = planMemory(r);
  checkLayout(r, l);
  EXPECT_EQ(l.offsets[0], l.offsets[1]);
  EXPECT_EQ(l.arenaBytes, 1024u);
  EXPECT_EQ(l.unplannedBytes, 2048u);
}

TEST(MemoryPlanTest, OverlappingRangesDoNot) {
  std::vector<BufferRequest> r = {transient(1000, 0, 2), transient(1000, 2, 3),
                                  transient(10, 3, 4)};
  MemoryLayout l = planMemory(r);
  checkLayout(r, l);
  EXPECT_NE(l.offsets[0], l.offsets[1]);
  // The small buffer fits where the first one was (dead after 2).
  EXPECT_EQ(l.offsets[2], l.offsets[0]);
  EXPECT_EQ(l.arenaBytes, 2048u);
}

TEST(MemoryPlanTest, LargestFirstFirstFit) {
  // The big buffer is placed first at the bottom; the two small ones that
  // live at the same time as each other but not with it stack on its bytes.
  std::vector<BufferRequest> r = {transient(256, 0, 1), transient(256, 0, 1),
                                  transient(4096, 2, 3)};
  MemoryLayout l = planMemory(r);
  checkLayout(r, l);
  EXPECT_EQ(l.offsets[2], 0u);
  EXPECT_EQ(l.offsets[0], 0u);
  EXPECT_EQ(l.offsets[1], 256u);
  EXPECT_EQ(l.arenaBytes, 4096u);
}

TEST(MemoryPlanTest, PersistentBuffersAreStackedAndNeverReused) {
  std::vector<BufferRequest> r = {persistent(100), transient(5000, 0, 0),
                                  persistent(300), transient(5000, 1, 1)};
  MemoryLayout l = planMemory(r);
  checkLayout(r, l);
  EXPECT_EQ(l.offsets[0], 0u);
  EXPECT_EQ(l.offsets[2], 256u);
  EXPECT_EQ(l.persistentBytes, 768u);
  EXPECT_EQ(l.offsets[1], 768u);
  EXPECT_EQ(l.offsets[3], 768u);
  EXPECT_EQ(l.arenaBytes, 768u + 5120u);
}

TEST(MemoryPlanTest, AliasesShareTheirRootAndExtendItsRange) {
  // 1 is a reshape of 0 used until 5, so 0 stays live until 5 and 2
  // (live at 4) may not take its bytes.
  std::vector<BufferRequest> r = {transient(512, 0, 1), alias(0, 1, 5),
                                  transient(512, 4, 4), alias(1, 5, 5)};
  MemoryLayout l = planMemory(r);
  checkLayout(r, l);
  EXPECT_EQ(l.roots[1], 0);
  EXPECT_EQ(l.roots[3], 0);
  EXPECT_EQ(l.offsets[1], l.offsets[0]);
  EXPECT_EQ(l.offsets[3], l.offsets[0]);
  EXPECT_NE(l.offsets[2], l.offsets[0]);
}

TEST(MemoryPlanTest, OffsetAliasesStartInsideTheirRoot) {
  // 1 is rows [256, 512) of 0 (a slice read in place), 2 a reshape of 1,
  // 3 a view 256 bytes into 2: offsets add up along the chain, 0 lives as
  // long as its views, and 4 (live at 5, during view 3) may not overlap it.
  std::vector<BufferRequest> r = {transient(1024, 0, 1), alias(0, 1, 3),
                                  alias(1, 2, 3), alias(2, 3, 6),
                                  transient(1024, 5, 5)};
  r[1].aliasOffset = 256;
  r[1].bytes = 256;
  r[3].aliasOffset = 0;
  r[3].bytes = 256;
  MemoryLayout l = planMemory(r);
  checkLayout(r, l);
  EXPECT_EQ(l.roots[3], 0);
  EXPECT_EQ(l.offsets[1], l.offsets[0] + 256);
  EXPECT_EQ(l.offsets[2], l.offsets[0] + 256);
  EXPECT_EQ(l.offsets[3], l.offsets[0] + 256);
  EXPECT_TRUE(l.offsets[4] >= l.offsets[0] + 1024 ||
              l.offsets[4] + 1024 <= l.offsets[0]);
  // The unplanned layout puts them at the same places in the root.
  MemoryLayout s = stackMemory(r);
  EXPECT_EQ(s.offsets[3], s.offsets[0] + 256);
  EXPECT_EQ(s.offsets[4], 1024u);
}

TEST(MemoryPlanTest, PersistentAliasMakesItsRootPersistent) {
  // An in-place update: the next value of parameter 0 is computed by a
  // transient-looking op result that aliases the parameter's buffer.
  std::vector<BufferRequest> r = {persistent(1024), transient(4096, 0, 1),
                                  alias(0, 2, 2)};
  r[2].persistent = true;
  MemoryLayout l = planMemory(r);
  checkLayout(r, l);
  EXPECT_EQ(l.offsets[2], 0u);
  EXPECT_EQ(l.persistentBytes, 1024u);
  // A transient root aliased by a persistent request moves to the stack.
  std::vector<BufferRequest> r2 = {transient(1024, 0, 1), alias(0, 1, 1)};
  r2[1].persistent = true;
  MemoryLayout l2 = planMemory(r2);
  checkLayout(r2, l2);
  EXPECT_EQ(l2.persistentBytes, 1024u);
}

TEST(MemoryPlanTest, ZeroByteBuffersGetAnAddressOfTheirOwn) {
  std::vector<BufferRequest> r = {transient(0, 0, 0), transient(0, 0, 0)};
  MemoryLayout l = planMemory(r);
  checkLayout(r, l);
  EXPECT_NE(l.offsets[0], l.offsets[1]);
}

TEST(MemoryPlanTest, RandomLiveRangesNeverOverlap) {
  std::mt19937_64 rng(1234);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<BufferRequest> r;
    int n = 5 + static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      uint64_t kind = rng() % 10;
      int64_t first = static_cast<int64_t>(rng() % 40);
      int64_t last = first + static_cast<int64_t>(rng() % 10);
      if (kind == 0)
        r.push_back(persistent(1 + rng() % 5000));
      else if (kind == 1 && i > 0)
        r.push_back(alias(static_cast<int64_t>(rng() % i), first, last));
      else
        r.push_back(transient(1 + rng() % 5000, first, last));
    }
    MemoryLayout l = planMemory(r);
    checkLayout(r, l);
    EXPECT_LE(l.arenaBytes, l.unplannedBytes);
    if (HasFailure())
      return;
  }
}

} // namespace

namespace {

// An arena past kMaxArenaBytes (2^40) is reported, never wrapped: two
// persistent halves of 2^63 bytes would sum to 0 modulo 2^64.
TEST(MemoryPlan, ArenaPastTheLimitIsTooLarge) {
  MemoryLayout wrapped =
      planMemory({persistent(uint64_t(1) << 63), persistent(uint64_t(1) << 63)});
  EXPECT_TRUE(wrapped.tooLarge);
  EXPECT_DOUBLE_EQ(wrapped.neededBytes, 18446744073709551616.0);

  MemoryLayout huge = planMemory({transient(UINT64_MAX, 0, 1)});
  EXPECT_TRUE(huge.tooLarge);

  // Each buffer fits, the persistent stack does not.
  uint64_t tib = uint64_t(1) << 40;
  MemoryLayout stacked = planMemory({persistent(tib / 2), persistent(tib / 2),
                                     persistent(256)});
  EXPECT_TRUE(stacked.tooLarge);

  // Transients that are live together do not fit either.
  MemoryLayout together = planMemory(
      {transient(tib / 2, 0, 2), transient(tib / 2, 1, 3), transient(tib / 2, 2, 4)});
  EXPECT_TRUE(together.tooLarge);
  EXPECT_GT(together.neededBytes, double(tib));

  // The same transients one after another reuse their bytes and fit.
  MemoryLayout reused = planMemory(
      {transient(tib / 2, 0, 0), transient(tib / 2, 1, 1), transient(tib / 2, 2, 2)});
  EXPECT_FALSE(reused.tooLarge);
  EXPECT_EQ(reused.arenaBytes, tib / 2);
}

} // namespace
