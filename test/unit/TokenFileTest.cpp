//===- TokenFileTest.cpp - llm.c .bin shards ------------------------------===//
#include "runtime/TokenFile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>

using namespace llmc;

namespace {

std::string tempPath(const char *name) {
  return ::testing::TempDir() + name + std::to_string(::getpid());
}

TEST(TokenFile, RoundTrips) {
  std::string path = tempPath("tokens.bin");
  std::vector<uint16_t> tokens = {0, 1, 255, 50256, 65535};
  ASSERT_TRUE(writeTokenFile(path, tokens).isOk());
  std::vector<uint16_t> back;
  Status s = readTokenFile(path, back);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(back, tokens);
  std::remove(path.c_str());
}

TEST(TokenFile, HeaderLayoutMatchesLlmC) {
  std::string path = tempPath("header.bin");
  ASSERT_TRUE(writeTokenFile(path, {7, 8, 9}).isOk());
  std::ifstream in(path, std::ios::binary);
  int32_t header[256];
  in.read(reinterpret_cast<char *>(header), sizeof(header));
  EXPECT_EQ(header[0], 20240520);
  EXPECT_EQ(header[1], 1);
  EXPECT_EQ(header[2], 3);
  uint16_t first;
  in.read(reinterpret_cast<char *>(&first), 2);
  EXPECT_EQ(first, 7);
  std::remove(path.c_str());
}

TEST(TokenFile, MissingFileNamesThePath) {
  std::vector<uint16_t> tokens;
  Status s = readTokenFile("/nonexistent/dir/x.bin", tokens);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("/nonexistent/dir/x.bin"), std::string::npos);
}

TEST(TokenFile, BadMagicIsExplained) {
  std::string path = tempPath("bad.bin");
  {
    std::ofstream out(path, std::ios::binary);
    int32_t header[256] = {1234, 1, 0};
    out.write(reinterpret_cast<const char *>(header), sizeof(header));
  }
  std::vector<uint16_t> tokens;
  Status s = readTokenFile(path, tokens);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("magic 1234"), std::string::npos) << s.message();
  std::remove(path.c_str());
}

TEST(TokenFile, TruncatedBodyIsExplained) {
  std::string path = tempPath("short.bin");
  {
    std::ofstream out(path, std::ios::binary);
    int32_t header[256] = {20240520, 1, 10};
    out.write(reinterpret_cast<const char *>(header), sizeof(header));
    uint16_t two[2] = {1, 2};
    out.write(reinterpret_cast<const char *>(two), sizeof(two));
  }
  std::vector<uint16_t> tokens;
  Status s = readTokenFile(path, tokens);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("promises 10 tokens but the file holds 2"),
            std::string::npos)
      << s.message();
  std::remove(path.c_str());
}

TEST(TokenFile, TruncatedHeaderIsExplained) {
  std::string path = tempPath("tiny.bin");
  {
    std::ofstream out(path, std::ios::binary);
    out << "abc";
  }
  std::vector<uint16_t> tokens;
  Status s = readTokenFile(path, tokens);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("shorter than its 1024-byte header"),
            std::string::npos);
  std::remove(path.c_str());
}

TEST(TokenFile, ByteTokenizer) {
  EXPECT_EQ(tokenizeBytes("Ab\xff"),
            (std::vector<uint16_t>{65, 98, 255}));
}

TEST(Status, WithContextPrefixesErrorsOnly) {
  EXPECT_TRUE(Status::ok().withContext("x").isOk());
  EXPECT_EQ(Status::error("boom").withContext("loading a.llmc").message(),
            "loading a.llmc: boom");
}

} // namespace
