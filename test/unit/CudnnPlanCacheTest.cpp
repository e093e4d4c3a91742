//===- CudnnPlanCacheTest.cpp - cuDNN plan files without a GPU ------------===//
//
// runtime/CudnnPlanCache.h: the key (what a restored plan may be used for),
// the file format's round trip with cuDNN's text byte for byte, and every
// way a file is rejected (so that a load falls back to a full build). What
// cuDNN itself does with a damaged plan text is CudnnPlanCacheGpu's part
// (test/gpu/CudnnPlanCacheGpuTest.cpp).
//
//===----------------------------------------------------------------------===//
#include "runtime/CudnnPlanCache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace llmc;

namespace {

CudnnAttentionDesc gpt2Backward() {
  CudnnAttentionDesc d;
  d.backward = true;
  d.causal = true;
  d.scale = 0.125;
  d.b = 16, d.hq = 12, d.hkv = 12, d.sq = 1024, d.skv = 1024, d.d = 64;
  Strides4 packed = {1024 * 2304, 64, 2304, 1};
  Strides4 out = {1024 * 768, 64, 768, 1};
  d.q = d.k = d.v = packed;
  d.o = d.dO = d.dQ = out;
  d.dK = d.dV = out;
  return d;
}

const char *kDevice = "NVIDIA H100 80GB HBM3 sm_90";
const char *kBinary = "/opt/llmc/lib/libllmc.so 8123456 1764000000.5";

CudnnPlanRecord sampleRecord(const std::string &key) {
  CudnnPlanRecord r;
  r.key = key;
  r.engineIndex = 2;
  r.noted = false;
  // cuDNN's text as it may come: newlines, a "json" look-alike line and the
  // trailing NUL its length counts.
  r.json = std::string("{\"engine\": 2,\n\"knobs\": [7]}\njson 3\n") + '\0';
  return r;
}

std::string freshDir(const char *name) {
  std::string dir = ::testing::TempDir() + "cudnn-plan-" + name + "-" +
                    std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(CudnnPlanCache, RoundTripKeepsEveryByte) {
  std::string key = cudnnPlanKey(gpt2Backward(), 91400, kDevice, kBinary);
  CudnnPlanRecord r = sampleRecord(key);
  r.noted = true;
  r.engineIndex = 17;
  std::string bytes = encodeCudnnPlan(r);
  EXPECT_EQ(bytes.rfind("llmc cudnn plan 1\nkey ", 0), 0u) << bytes;
  CudnnPlanRecord back;
  std::string why;
  ASSERT_TRUE(decodeCudnnPlan(bytes, key, back, why)) << why;
  EXPECT_EQ(back.key, key);
  EXPECT_EQ(back.engineIndex, 17);
  EXPECT_TRUE(back.noted);
  EXPECT_EQ(back.json, r.json);
  EXPECT_EQ(back.json.size(), r.json.size());
}

TEST(CudnnPlanCache, KeyNamesShapeLibraryAndDevice) {
  CudnnAttentionDesc d = gpt2Backward();
  std::string key = cudnnPlanKey(d, 91400, kDevice, kBinary);
  EXPECT_EQ(key, cudnnPlanKey(gpt2Backward(), 91400, kDevice, kBinary));
  EXPECT_NE(key.find("cudnn attention bwd bf16 causal [16, 12/12, 1024x1024, "
                     "64] scale 0.125 "),
            std::string::npos)
      << key;
  EXPECT_NE(key.find("| cuDNN 91400 | NVIDIA H100 80GB HBM3 sm_90 | "
                     "/opt/llmc/lib/libllmc.so"),
            std::string::npos)
      << key;
  // Each of these changes the plan or where it may run.
  std::vector<std::string> others = {
      cudnnPlanKey(d, 91900, kDevice, kBinary),
      cudnnPlanKey(d, 91400, "NVIDIA H200 sm_90", kBinary),
      cudnnPlanKey(d, 91400, kDevice, "/opt/llmc/lib/libllmc.so 8123456 1"),
  };
  auto with = [&](auto change) {
    CudnnAttentionDesc e = gpt2Backward();
    change(e);
    others.push_back(cudnnPlanKey(e, 91400, kDevice, kBinary));
  };
  with([](CudnnAttentionDesc &e) { e.backward = false; });
  with([](CudnnAttentionDesc &e) { e.deterministic = false; });
  with([](CudnnAttentionDesc &e) { e.causal = false; });
  with([](CudnnAttentionDesc &e) { e.bf16 = false; });
  with([](CudnnAttentionDesc &e) { e.sq = e.skv = 512; });
  with([](CudnnAttentionDesc &e) { e.hkv = 4; });
  with([](CudnnAttentionDesc &e) { e.dK[2] = 2304; });
  with([](CudnnAttentionDesc &e) { e.q[0] = 2048 * 2304; });
  for (size_t i = 0; i < others.size(); ++i) {
    EXPECT_NE(others[i], key) << "change " << i;
    EXPECT_NE(cudnnPlanPath("/c", others[i]), cudnnPlanPath("/c", key))
        << "change " << i;
  }
  std::string path = cudnnPlanPath("/cache", key);
  EXPECT_EQ(path.rfind("/cache/cudnn-plan/", 0), 0u) << path;
  EXPECT_EQ(path.size(), std::string("/cache/cudnn-plan/").size() + 16);
}

// std::to_string kept 6 decimals: two scales that close shared one plan and
// so one by-value scale. The key now writes the double in full.
TEST(CudnnPlanCache, ScalesThatDifferInTheSeventhDigitDoNotShare) {
  CudnnAttentionDesc a = gpt2Backward(), b = gpt2Backward();
  a.scale = 0.1250001;
  b.scale = 0.1250002;
  EXPECT_NE(attentionPlanKey(a), attentionPlanKey(b));
  EXPECT_EQ(attentionPlanKey(a), attentionPlanKey(a));
}

TEST(CudnnPlanCache, RejectsDamagedAndStaleFiles) {
  CudnnAttentionDesc d = gpt2Backward();
  std::string key = cudnnPlanKey(d, 91400, kDevice, kBinary);
  std::string good = encodeCudnnPlan(sampleRecord(key));
  struct Case {
    const char *name;
    std::string bytes, why;
  };
  std::string header = "llmc cudnn plan 1\nkey " + key + "\n";
  std::vector<Case> cases = {
      {"empty", "", "not a cuDNN plan file"},
      {"another format", "{\"engine\": 2}", "not a cuDNN plan file"},
      {"a newer format", "llmc cudnn plan 2\n" + good.substr(18),
       "not a cuDNN plan file"},
      {"header only", "llmc cudnn plan 1\n", "no key line"},
      {"stale: another cuDNN",
       encodeCudnnPlan(sampleRecord(cudnnPlanKey(d, 91300, kDevice, kBinary))),
       "written for another key: '"},
      {"no engine line", header + "json 3\nabc", "no 'engine <index> <0|1>'"},
      {"engine not a number", header + "engine two 0\njson 3\nabc",
       "no 'engine <index> <0|1>'"},
      {"engine with a bad note", header + "engine 2 5\njson 3\nabc",
       "no 'engine <index> <0|1>'"},
      {"no json line", header + "engine 2 0\n", "no 'json <length>'"},
      {"json length not a number", header + "engine 2 0\njson x\nabc",
       "no 'json <length>'"},
      {"truncated plan", good.substr(0, good.size() - 5),
       "the file is truncated: its plan has"},
      {"trailing bytes", good + "x", "the header says"},
      {"empty plan", header + "engine 2 0\njson 0\n", "an empty plan"},
  };
  for (const Case &c : cases) {
    CudnnPlanRecord out;
    std::string why;
    EXPECT_FALSE(decodeCudnnPlan(c.bytes, key, out, why)) << c.name;
    EXPECT_NE(why.find(c.why), std::string::npos)
        << c.name << ": '" << why << "'";
    EXPECT_TRUE(out.json.empty()) << c.name;
  }
}

TEST(CudnnPlanCache, WritesReadsAndNamesTheRejectedFile) {
  std::string dir = freshDir("io");
  std::string key = cudnnPlanKey(gpt2Backward(), 91400, kDevice, kBinary);
  std::string path = cudnnPlanPath(dir, key);
  CudnnPlanRecord out;
  std::string why;
  EXPECT_FALSE(readCudnnPlan(path, key, out, why));
  EXPECT_EQ(why, "absent");

  Status written = writeCudnnPlan(path, sampleRecord(key)); // makes the folder
  ASSERT_TRUE(written) << written.message();
  ASSERT_TRUE(readCudnnPlan(path, key, out, why)) << why;
  EXPECT_EQ(out.json, sampleRecord(key).json);
  EXPECT_EQ(out.engineIndex, 2);

  // Another key's reader (a library upgrade reusing the folder) rejects it.
  std::string other = cudnnPlanKey(gpt2Backward(), 91900, kDevice, kBinary);
  EXPECT_FALSE(readCudnnPlan(path, other, out, why));
  EXPECT_NE(why.find("written for another key"), std::string::npos) << why;

  // Cut short on disk: rejected with the path named.
  std::string bytes = encodeCudnnPlan(sampleRecord(key));
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      << bytes.substr(0, bytes.size() / 2);
  EXPECT_FALSE(readCudnnPlan(path, key, out, why));
  EXPECT_NE(why.find("'" + path + "': "), std::string::npos) << why;
  std::filesystem::remove_all(dir);
}

TEST(CudnnPlanCache, AnUnwritableFolderIsAStatus) {
  std::string dir = freshDir("blocked");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/cudnn-plan") << "a file where the folder should be";
  std::string key = cudnnPlanKey(gpt2Backward(), 91400, kDevice, kBinary);
  Status written = writeCudnnPlan(cudnnPlanPath(dir, key), sampleRecord(key));
  EXPECT_FALSE(written);
  EXPECT_NE(written.message().find("cudnn-plan/"), std::string::npos)
      << written.message();
  std::filesystem::remove_all(dir);
}

} // namespace
