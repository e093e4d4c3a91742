//===- DataLoaderTest.cpp - llm.c-style batches from token shards ---------===//
#include "runtime/DataLoader.h"
#include "runtime/TokenFile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <numeric>
#include <unistd.h>

using namespace llmc;

namespace {

std::string shard(const char *name, std::vector<uint16_t> tokens) {
  std::string path = ::testing::TempDir() + name + std::to_string(::getpid());
  EXPECT_TRUE(writeTokenFile(path, tokens).isOk());
  return path;
}

TEST(DataLoader, TargetsAreInputsShiftedByOne) {
  std::vector<uint16_t> tokens(20);
  std::iota(tokens.begin(), tokens.end(), 100);
  std::string path = shard("dl1.bin", tokens);
  DataLoader loader;
  ASSERT_TRUE(loader.open(path, 2, 3).isOk());
  std::vector<int64_t> x, y;
  loader.next(x, y);
  EXPECT_EQ(x, (std::vector<int64_t>{100, 101, 102, 103, 104, 105}));
  EXPECT_EQ(y, (std::vector<int64_t>{101, 102, 103, 104, 105, 106}));
  loader.next(x, y);
  EXPECT_EQ(x.front(), 106);
  EXPECT_EQ(y.back(), 112);
  std::remove(path.c_str());
}

TEST(DataLoader, WrapsAroundAtTheEnd) {
  std::vector<uint16_t> tokens(8);
  std::iota(tokens.begin(), tokens.end(), 0);
  std::string path = shard("dl2.bin", tokens);
  DataLoader loader;
  ASSERT_TRUE(loader.open(path, 1, 3).isOk());
  EXPECT_EQ(loader.batchesPerEpoch(), 2);
  std::vector<int64_t> x, y;
  loader.next(x, y); // 0..3
  loader.next(x, y); // 3..6
  loader.next(x, y); // would need 6..9: wraps to 0
  EXPECT_EQ(x, (std::vector<int64_t>{0, 1, 2}));
  loader.reset();
  loader.next(x, y);
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

} // namespace
