//===- CudnnPlanCacheGpuTest.cpp - Restored cuDNN plans, same bits --------===//
//
// runtime/CudnnPlanCache.h on the GPU: a plan built and stored, then
// restored by a second create() (no heuristics, no compile), runs the same
// engine and gives bitwise the same O, stats, dQ, dK and dV; a stored file
// whose plan text cuDNN rejects, or that names another engine, falls back
// to a full build (same bits) and is replaced. Each test prints how long
// the build and the restore took (the warm start's share, issue 17).
// Skips with a message without a GPU or without cuDNN.
//
//===----------------------------------------------------------------------===//
#include "runtime/BinaryIdentity.h"
#include "runtime/CudnnPlanCache.h"
#include "test/gpu/CudnnAttentionTestUtil.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

using namespace llmc;
using namespace llmc::test;

namespace {

std::string freshCache(const char *name) {
  std::string dir = ::testing::TempDir() + "llmc-cudnn-plan-" + name + "-" +
                    std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

/// A second pair of plans for the case through `cache`, run on cleared
/// outputs; `seconds` is how long the two create() calls took.
Status rerun(DeviceSession &dev, AttentionCase &c, uint64_t coldWorkspace,
             const CudnnPlanCacheOptions &cache, CudnnRun &run,
             OutputBits &bits, double &seconds) {
  LLMC_RETURN_IF_ERROR(clearOutputs(dev, c));
  auto t0 = std::chrono::steady_clock::now();
  LLMC_RETURN_IF_ERROR(CudnnAttention::create(c.fwd, run.fwd, cache));
  LLMC_RETURN_IF_ERROR(CudnnAttention::create(c.bwd, run.bwd, cache));
  seconds = secondsSince(t0);
  // The case's workspace was sized for the cold pair (the same engines).
  if (std::max(run.fwd->workspaceBytes(), run.bwd->workspaceBytes()) >
      coldWorkspace)
    return Status::error("the second pair needs more workspace than the first");
  LLMC_RETURN_IF_ERROR(runCudnn(dev, c, run));
  return readOutputs(dev, c, bits);
}

/// The backward's cache file, rewritten with `record` changed by `damage`.
Status damageBackwardFile(const AttentionCase &c, const CudnnRun &cold,
                          const CudnnPlanCacheOptions &cache,
                          void (*damage)(CudnnPlanRecord &)) {
  std::string key = cudnnPlanKey(c.bwd, cold.bwd->cudnnVersion(),
                                 cache.device, binaryIdentity());
  std::string path = cudnnPlanPath(cache.dir, key), why;
  CudnnPlanRecord record;
  if (!readCudnnPlan(path, key, record, why))
    return Status::error("the stored backward plan does not read: " + why);
  damage(record);
  return writeCudnnPlan(path, record);
}

class CudnnPlanCacheGpu : public ::testing::Test {
protected:
  void SetUp() override {
    cache_.dir = freshCache(
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    cache_.device = "test device";
  }
  void TearDown() override { std::filesystem::remove_all(cache_.dir); }

  /// The cold pair: built, stored, run; its outputs in `cold_`.
  void buildCold() {
    auto t0 = std::chrono::steady_clock::now();
    Status st = openAndRun(dev_, c_, run_, 2, 12, 512, 11, cache_);
    coldSeconds_ = secondsSince(t0);
    ASSERT_TRUE(st) << st.message();
    for (const CudnnAttention *a : {run_.fwd.get(), run_.bwd.get()}) {
      EXPECT_FALSE(a->fromCache());
      EXPECT_EQ(a->planSource(), "built, stored in the cache")
          << describe(a->desc());
    }
    ASSERT_TRUE(st = readOutputs(dev_, c_, cold_)) << st.message();
  }

  uint64_t coldWorkspace() const {
    return std::max(run_.fwd->workspaceBytes(), run_.bwd->workspaceBytes());
  }

  CudnnPlanCacheOptions cache_;
  DeviceSession dev_;
  AttentionCase c_;
  CudnnRun run_;
  OutputBits cold_;
  double coldSeconds_ = 0;
};

TEST_F(CudnnPlanCacheGpu, RestoredPlanIsBitwiseTheBuiltOne) {
  LLMC_REQUIRE_GPU_AND_CUDNN();
  ASSERT_NO_FATAL_FAILURE(buildCold());
  CudnnRun warm;
  OutputBits bits;
  double seconds = 0;
  Status st = rerun(dev_, c_, coldWorkspace(), cache_, warm, bits, seconds);
  ASSERT_TRUE(st) << st.message();
  const CudnnAttention *built[] = {run_.fwd.get(), run_.bwd.get()};
  const CudnnAttention *restored[] = {warm.fwd.get(), warm.bwd.get()};
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(restored[i]->fromCache()) << restored[i]->planSource();
    EXPECT_EQ(restored[i]->planSource(), "restored from the cache");
    EXPECT_EQ(restored[i]->engineName(), built[i]->engineName());
    EXPECT_EQ(restored[i]->workspaceBytes(), built[i]->workspaceBytes());
  }
  expectSameBits(cold_, bits, "with the restored plans");
  std::printf("[ cudnn ] plan pair [2, 12, 512x512, 64] bf16 causal: built "
              "(with the session and the case) %.3f s, restored %.3f s; %s, "
              "%s\n",
              coldSeconds_, seconds, warm.fwd->engineName().c_str(),
              warm.bwd->engineName().c_str());
}

// cuDNN refuses the text: the plan is built again, runs to the same bits,
// and the file is replaced so that the next create() restores.
TEST_F(CudnnPlanCacheGpu, DamagedPlanTextFallsBackToABuild) {
  LLMC_REQUIRE_GPU_AND_CUDNN();
  ASSERT_NO_FATAL_FAILURE(buildCold());
  Status st = damageBackwardFile(c_, run_, cache_, [](CudnnPlanRecord &r) {
    r.json = "{\"this\": \"is not a cuDNN plan\"}";
  });
  ASSERT_TRUE(st) << st.message();
  CudnnRun again;
  OutputBits bits;
  double seconds = 0;
  ASSERT_TRUE(st = rerun(dev_, c_, coldWorkspace(), cache_, again, bits, seconds))
      << st.message();
  EXPECT_TRUE(again.fwd->fromCache()) << again.fwd->planSource();
  EXPECT_FALSE(again.bwd->fromCache());
  EXPECT_NE(again.bwd->planSource().find("built, stored in the cache; the "
                                         "cached plan was rejected: '"),
            std::string::npos)
      << again.bwd->planSource();
  EXPECT_EQ(again.bwd->engineName(), run_.bwd->engineName());
  expectSameBits(cold_, bits, "after the damaged plan was rebuilt");
  std::printf("[ cudnn ] %s\n", again.bwd->planSource().c_str());

  CudnnRun third;
  ASSERT_TRUE(st = rerun(dev_, c_, coldWorkspace(), cache_, third, bits, seconds))
      << st.message();
  EXPECT_TRUE(third.bwd->fromCache()) << third.bwd->planSource();
  expectSameBits(cold_, bits, "with the replaced file");
}

// A file that restores to another engine than it names is not trusted.
TEST_F(CudnnPlanCacheGpu, AnotherEngineThanRecordedFallsBackToABuild) {
  LLMC_REQUIRE_GPU_AND_CUDNN();
  ASSERT_NO_FATAL_FAILURE(buildCold());
  Status st = damageBackwardFile(c_, run_, cache_, [](CudnnPlanRecord &r) {
    r.engineIndex += 1000;
  });
  ASSERT_TRUE(st) << st.message();
  CudnnRun again;
  OutputBits bits;
  double seconds = 0;
  ASSERT_TRUE(st = rerun(dev_, c_, coldWorkspace(), cache_, again, bits, seconds))
      << st.message();
  EXPECT_FALSE(again.bwd->fromCache());
  EXPECT_NE(again.bwd->planSource().find("the file names engine"),
            std::string::npos)
      << again.bwd->planSource();
  expectSameBits(cold_, bits, "after the mismatched plan was rebuilt");
}

} // namespace
