//===- TokenFileTest.cpp - llm.c .bin shards ------------------------------===//
#include "runtime/TokenFile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <sys/resource.h>
#include <sys/wait.h>
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

/// A shard with `count` in its header and `bodyTokens` tokens of body.
std::string rawShard(const char *name, int32_t count, size_t bodyTokens) {
  std::string path = tempPath(name);
  std::ofstream out(path, std::ios::binary);
  int32_t header[256] = {20240520, 1, count};
  out.write(reinterpret_cast<const char *>(header), sizeof(header));
  std::vector<uint16_t> body(bodyTokens, 7);
  out.write(reinterpret_cast<const char *>(body.data()), body.size() * 2);
  return path;
}

TEST(TokenFile, HugeCountIsCheckedBeforeAllocating) {
  // 2^31 - 1 tokens would be 4 GiB; the file holds 3. Under an address
  // space limit well below 4 GiB, allocating first would abort the child
  // with bad_alloc; checking the size first returns the error.
  std::string path = rawShard("huge.bin", INT32_MAX, 3);
  pid_t pid = ::fork();
  if (pid == 0) {
    long pages = 0, page = ::sysconf(_SC_PAGESIZE);
    std::ifstream statm("/proc/self/statm");
    statm >> pages;
    rlim_t cap = static_cast<rlim_t>(pages) * page + (1ull << 30);
    struct rlimit limit = {cap, cap};
    if (::setrlimit(RLIMIT_AS, &limit) != 0)
      ::_exit(10);
    std::vector<uint16_t> tokens;
    Status s = readTokenFile(path, tokens);
    bool ok = !s.isOk() &&
              s.message() == "token file '" + path +
                                 "' header promises 2147483647 tokens but the "
                                 "file holds 3 (a truncated or damaged shard: "
                                 "write it again)";
    ::_exit(ok ? 0 : 11);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::remove(path.c_str());
}

TEST(TokenFile, BodyLongerThanTheHeaderSays) {
  std::string path = rawShard("long.bin", 2, 5);
  uint64_t count = 0;
  Status s = readTokenFileHeader(path, count);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("promises 2 tokens but the file holds 5"),
            std::string::npos)
      << s.message();
  std::remove(path.c_str());
}

TEST(TokenFile, NegativeCountIsExplained) {
  std::string path = rawShard("neg.bin", -4, 0);
  uint64_t count = 0;
  Status s = readTokenFileHeader(path, count);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("has a negative count (-4)"), std::string::npos)
      << s.message();
  std::remove(path.c_str());
}

TEST(TokenFile, VocabularyCheckStreamsAndNamesThePosition) {
  // Past the first 1 MiB chunk of the streaming check.
  std::vector<uint16_t> tokens((1 << 20) + 10, 5);
  tokens[(1 << 20) + 3] = 256;
  std::string path = tempPath("vocab.bin");
  ASSERT_TRUE(writeTokenFile(path, tokens).isOk());
  EXPECT_TRUE(checkTokenVocabulary(path, 257).isOk());
  Status s = checkTokenVocabulary(path, 256);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("has token 256 at position 1048579, outside the "
                             "model's vocabulary of 256"),
            std::string::npos)
      << s.message();
  std::remove(path.c_str());
}

TEST(TokenFile, ShardNames) {
  EXPECT_EQ(tokenShardName("train.bin", 0), "train_000000.bin");
  EXPECT_EQ(tokenShardName("d/train.bin", 12), "d/train_000012.bin");
  EXPECT_EQ(tokenShardName("d.x/train", 3), "d.x/train_000003");
  EXPECT_EQ(tokenShardName("d/.bin", 1), "d/.bin_000001");
  EXPECT_EQ(tokenShardName("a.b.bin", 1234567), "a.b_1234567.bin");
}

TEST(TokenFile, DataSpecs) {
  std::vector<std::string> paths;
  ASSERT_TRUE(resolveTokenShards("b.bin,a.bin", paths).isOk());
  EXPECT_EQ(paths, (std::vector<std::string>{"b.bin", "a.bin"}));
  Status s = resolveTokenShards("/nonexistent-llmc/*.bin", paths);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "'/nonexistent-llmc/*.bin' matches no token file");
  s = resolveTokenShards("a.bin,,b.bin", paths);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "empty token file name in 'a.bin,,b.bin'");
  // An existing file whose name has a comma is that one file.
  std::string comma = tempPath("a,b.bin");
  ASSERT_TRUE(writeTokenFile(comma, {1}).isOk());
  ASSERT_TRUE(resolveTokenShards(comma, paths).isOk());
  EXPECT_EQ(paths, std::vector<std::string>{comma});
  std::remove(comma.c_str());
}

std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d))
      if (e->d_name[0] != '.')
        names.push_back(e->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string freshDir(const char *name) {
  std::string dir = tempPath(name);
  EXPECT_EQ(
      std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()),
      0);
  return dir;
}

TEST(TokenShardWriter, OneShardKeepsTheName) {
  std::string dir = freshDir("w1");
  TokenShardWriter w;
  ASSERT_TRUE(w.open(dir + "/t.bin", 10).isOk());
  std::vector<uint16_t> t = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  ASSERT_TRUE(w.append(t.data(), 6).isOk());
  ASSERT_TRUE(w.append(t.data() + 6, 4).isOk()); // exactly full: one shard
  ASSERT_TRUE(w.finish().isOk());
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"t.bin"});
  std::vector<uint16_t> back;
  ASSERT_TRUE(readTokenFile(dir + "/t.bin", back).isOk());
  EXPECT_EQ(back, t);
}

TEST(TokenShardWriter, LargeStreamIsNumberedShards) {
  std::string dir = freshDir("w2");
  TokenShardWriter w;
  ASSERT_TRUE(w.open(dir + "/t.bin", 4).isOk());
  std::vector<uint16_t> t = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  ASSERT_TRUE(w.append(t.data(), t.size()).isOk());
  // Nothing is visible before finish().
  for (const std::string &name : listDir(dir))
    EXPECT_NE(name.find(".tmp."), std::string::npos) << name;
  ASSERT_TRUE(w.finish().isOk());
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{
                              "t_000000.bin", "t_000001.bin", "t_000002.bin"}));
  ASSERT_EQ(w.shards().size(), 3u);
  EXPECT_EQ(w.shards()[2].tokens, 2u);
  std::vector<uint16_t> back;
  ASSERT_TRUE(readTokenFile(dir + "/t_000001.bin", back).isOk());
  EXPECT_EQ(back, (std::vector<uint16_t>{5, 6, 7, 8}));
}

TEST(TokenShardWriter, EmptyStreamIsOneEmptyShard) {
  std::string dir = freshDir("w3");
  TokenShardWriter w;
  ASSERT_TRUE(w.open(dir + "/t.bin").isOk());
  ASSERT_TRUE(w.finish().isOk());
  uint64_t count = 1;
  ASSERT_TRUE(readTokenFileHeader(dir + "/t.bin", count).isOk());
  EXPECT_EQ(count, 0u);
}

TEST(TokenShardWriter, ShardSizeIsBounded) {
  TokenShardWriter w;
  EXPECT_FALSE(w.open("x.bin", 0).isOk());
  Status s = w.open("x.bin", 1ull << 31);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(),
            "a shard holds 1 to 2147483647 tokens, not 2147483648");
}

TEST(TokenShardWriter, FailedWriteLeavesNoShard) {
  // The second shard hits RLIMIT_FSIZE: the first, complete, is not left
  // behind either (a corpus is all or nothing).
  std::string dir = freshDir("w4");
  pid_t pid = ::fork();
  if (pid == 0) {
    installAtomicFileSignalHandlers();
    Status s;
    {
      TokenShardWriter w;
      std::vector<uint16_t> t(6000, 1);
      if (!w.open(dir + "/t.bin", 3000).isOk() ||
          !w.append(t.data(), 3001).isOk()) // the first shard is complete
        ::_exit(10);
      // Files may no longer pass 4 KiB: the second shard fails.
      struct rlimit limit = {4096, 4096};
      if (::setrlimit(RLIMIT_FSIZE, &limit) != 0)
        ::_exit(11);
      s = w.append(t.data(), 2999);
      if (s.isOk())
        s = w.finish();
    } // the writer drops its temporaries here
    ::_exit(!s.isOk() && s.message().find("File too large") != std::string::npos
                ? 0
                : 12);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(listDir(dir).empty());
}

TEST(TokenFile, ByteTokenizer) {
  EXPECT_EQ(tokenizeBytes("Ab\xff"), (std::vector<uint16_t>{65, 98, 255}));
}

TEST(Status, WithContextPrefixesErrorsOnly) {
  EXPECT_TRUE(Status::ok().withContext("x").isOk());
  EXPECT_EQ(Status::error("boom").withContext("loading a.llmc").message(),
            "loading a.llmc: boom");
}

} // namespace
