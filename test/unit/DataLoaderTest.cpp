//===- DataLoaderTest.cpp - llm.c-style batches from token shards ---------===//
#include "runtime/DataLoader.h"
#include "runtime/TokenFile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <numeric>
#include <thread>
#include <unistd.h>

using namespace llmc;

namespace {

std::string shard(const std::string &name, std::vector<uint16_t> tokens) {
  std::string path =
      ::testing::TempDir() + std::to_string(::getpid()) + "-" + name;
  EXPECT_TRUE(writeTokenFile(path, tokens).isOk());
  return path;
}

std::vector<uint16_t> iota(size_t n, uint16_t first) {
  std::vector<uint16_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST(DataLoader, TargetsAreInputsShiftedByOne) {
  std::string path = shard("dl1.bin", iota(20, 100));
  DataLoader loader;
  ASSERT_TRUE(loader.open(path, 2, 3).isOk());
  std::vector<int64_t> x, y;
  ASSERT_TRUE(loader.next(x, y).isOk());
  EXPECT_EQ(x, (std::vector<int64_t>{100, 101, 102, 103, 104, 105}));
  EXPECT_EQ(y, (std::vector<int64_t>{101, 102, 103, 104, 105, 106}));
  ASSERT_TRUE(loader.next(x, y).isOk());
  EXPECT_EQ(x.front(), 106);
  EXPECT_EQ(y.back(), 112);
  std::remove(path.c_str());
}

TEST(DataLoader, WrapsAroundAtTheEnd) {
  std::string path = shard("dl2.bin", iota(8, 0));
  DataLoader loader;
  ASSERT_TRUE(loader.open(path, 1, 3).isOk());
  EXPECT_EQ(loader.batchesPerEpoch(), 2);
  std::vector<int64_t> x, y;
  ASSERT_TRUE(loader.next(x, y).isOk()); // 0..3
  ASSERT_TRUE(loader.next(x, y).isOk()); // 3..6
  ASSERT_TRUE(loader.next(x, y).isOk()); // would need 6..9: wraps to 0
  EXPECT_EQ(x, (std::vector<int64_t>{0, 1, 2}));
  loader.reset();
  ASSERT_TRUE(loader.next(x, y).isOk());
  EXPECT_EQ(x.front(), 0);
  std::remove(path.c_str());
}

TEST(DataLoader, TooFewTokensSaysWhatToDo) {
  std::string path = shard("dl3.bin", {1, 2, 3});
  DataLoader loader;
  Status s = loader.open(path, 2, 4);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("holds 3 tokens; one batch of 2 x 4 needs 9"),
            std::string::npos)
      << s.message();
  std::remove(path.c_str());
}

TEST(DataLoader, TokensOutsideTheVocabularyAreRejected) {
  std::string path = shard("dl4.bin", {1, 2, 300, 4, 5});
  DataLoader loader;
  Status s = loader.open(path, 1, 2, 256);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("token 300 at position 2"), std::string::npos)
      << s.message();
  std::remove(path.c_str());
}

TEST(DataLoader, ShardsAreOneStream) {
  // 0..9 in one file and the same tokens as shards of 4, 0 and 6: every
  // batch is the same, including the one that spans the shards.
  std::string whole = shard("whole.bin", iota(10, 0));
  std::string a = shard("s_000000.bin", iota(4, 0));
  std::string empty = shard("s_000001.bin", {});
  std::string b = shard("s_000002.bin", iota(6, 4));
  DataLoader one, many;
  ASSERT_TRUE(one.open(whole, 1, 3).isOk());
  Status s = many.open(a + "," + empty + "," + b, 1, 3);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(many.numTokens(), 10u);
  EXPECT_EQ(many.shardPaths(), (std::vector<std::string>{a, empty, b}));
  for (int i = 0; i < 7; ++i) {
    std::vector<int64_t> x1, y1, x2, y2;
    ASSERT_TRUE(one.next(x1, y1).isOk());
    ASSERT_TRUE(many.next(x2, y2).isOk());
    EXPECT_EQ(x1, x2) << "batch " << i;
    EXPECT_EQ(y1, y2) << "batch " << i;
  }
  std::vector<int64_t> x, y;
  many.reset();
  ASSERT_TRUE(many.next(x, y).isOk());
  ASSERT_TRUE(many.next(x, y).isOk()); // tokens 3..6 span a and b
  EXPECT_EQ(x, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(y, (std::vector<int64_t>{4, 5, 6}));
  for (const std::string &p : {whole, a, empty, b})
    std::remove(p.c_str());
}

TEST(DataLoader, GlobOrderIsBytewise) {
  std::string dir =
      ::testing::TempDir() + "dlglob" + std::to_string(::getpid());
  ASSERT_EQ(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  // Written out of order; read back in name order.
  ASSERT_TRUE(writeTokenFile(dir + "/t_000001.bin", {3, 4}).isOk());
  ASSERT_TRUE(writeTokenFile(dir + "/t_000000.bin", {1, 2}).isOk());
  ASSERT_TRUE(writeTokenFile(dir + "/t_000002.bin", {5, 6}).isOk());
  DataLoader loader;
  ASSERT_TRUE(loader.open(dir + "/t_*.bin", 1, 4).isOk());
  std::vector<int64_t> x, y;
  ASSERT_TRUE(loader.next(x, y).isOk());
  EXPECT_EQ(x, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(y, (std::vector<int64_t>{2, 3, 4, 5}));
}

TEST(DataLoader, BadTokenInALaterShardIsFoundAtOpen) {
  std::string a = shard("v_000000.bin", iota(50, 0));
  std::string b = shard("v_000001.bin", {1, 2, 3, 999, 4});
  DataLoader loader;
  Status s = loader.open(a + "," + b, 1, 4, 256);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "token file '" + b +
                             "' has token 999 at position 3, outside the "
                             "model's vocabulary of 256");
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(DataLoader, ShardsTooSmallTogether) {
  std::string a = shard("u_000000.bin", {1, 2});
  std::string b = shard("u_000001.bin", {3});
  DataLoader loader;
  Status s = loader.open(a + "," + b, 2, 2);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("2 token files hold 3 tokens; one batch of 2 x 2 "
                             "needs 5"),
            std::string::npos)
      << s.message();
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(DataLoader, ShardShortenedAfterOpenFailsTheBatch) {
  std::string path = shard("gone.bin", iota(20, 0));
  DataLoader loader;
  ASSERT_TRUE(loader.open(path, 1, 4).isOk());
  ASSERT_EQ(::truncate(path.c_str(), 1024 + 4), 0);
  std::vector<int64_t> x, y;
  Status s = loader.next(x, y);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("shorter than when training started"),
            std::string::npos)
      << s.message();
  std::remove(path.c_str());
}

TEST(DataLoader, PrefetchGivesTheSameBatchesAcrossWrapSeekAndReset) {
  std::string path = shard("dl-prefetch.bin", iota(50, 0));
  DataLoader plain, ahead;
  ASSERT_TRUE(plain.open(path, 2, 3).isOk());
  ASSERT_TRUE(ahead.open(path, 2, 3).isOk());
  ahead.enablePrefetch();
  std::vector<int64_t> x1, y1, x2, y2;
  for (int i = 0; i < 20; ++i) { // 8 batches per pass: wraps twice
    if (i == 11) {
      ASSERT_TRUE(plain.seek(18).isOk());
      ASSERT_TRUE(ahead.seek(18).isOk());
    }
    if (i == 15) {
      plain.reset();
      ahead.reset();
    }
    ASSERT_TRUE(plain.next(x1, y1).isOk());
    ASSERT_TRUE(ahead.next(x2, y2).isOk());
    EXPECT_EQ(x1, x2) << "batch " << i;
    EXPECT_EQ(y1, y2) << "batch " << i;
    EXPECT_EQ(plain.position(), ahead.position()) << "batch " << i;
  }
  std::remove(path.c_str());
}

TEST(DataLoader, PrefetchHidesASlowReaderBehindTheStep) {
  // Each read takes 40 ms; the "step" between batches takes 80 ms. Read
  // ahead, next() returns at once (the read happened during the step);
  // without it, every next() waits for its read.
  std::string path = shard("dl-slow.bin", iota(200, 0));
  auto meanWaitMs = [&](bool prefetch) {
    DataLoader loader;
    EXPECT_TRUE(loader.open(path, 2, 3).isOk());
    loader.readDelayMs = 40;
    if (prefetch)
      loader.enablePrefetch();
    std::vector<int64_t> x, y;
    double waited = 0;
    for (int i = 0; i < 6; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      EXPECT_TRUE(loader.next(x, y).isOk());
      if (i > 0) // the first read has nothing to hide behind
        waited += std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
      std::this_thread::sleep_for(std::chrono::milliseconds(80));
    }
    return waited / 5;
  };
  double plain = meanWaitMs(false), ahead = meanWaitMs(true);
  EXPECT_GE(plain, 39.0);
  EXPECT_LT(ahead, 20.0) << "without prefetch " << plain << " ms";
  std::remove(path.c_str());
}

} // namespace
