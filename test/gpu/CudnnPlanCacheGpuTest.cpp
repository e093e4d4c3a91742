//===- CudnnPlanCacheGpuTest.cpp - Restored cuDNN plans, same bits --------===//
//
// runtime/CudnnPlanCache.h on the GPU: a plan built and stored, then
// restored by a second create() (no heuristics, no compile), runs the same
// engine and gives bitwise the same O, stats, dQ, dK and dV; a stored file
// whose plan text cuDNN rejects, or that names another engine, falls back
// to a full build (same bits) and is replaced. The first test prints how
// long the build and the restore took (the warm start's share, issue 17).
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

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

class CudnnPlanCacheGpu : public CudnnCaseTest {
protected:
  void SetUp() override {
    cache_.dir =
        ::testing::TempDir() + "llmc-cudnn-plan-" +
        ::testing::UnitTest::GetInstance()->current_test_info()->name() + "-" +
        std::to_string(::getpid());
    std::filesystem::remove_all(cache_.dir);
    cache_.device = "test device";
  }
  void TearDown() override { std::filesystem::remove_all(cache_.dir); }

  /// The cold pair: built, stored, run; its outputs in `first_`.
  void buildCold() {
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_NO_FATAL_FAILURE(start(2, 12, 512, 11, cache_));
    coldSeconds_ = secondsSince(t0);
    for (const CudnnAttention *a : {run_.fwd.get(), run_.bwd.get()}) {
      EXPECT_FALSE(a->fromCache());
      EXPECT_EQ(a->planSource(), "built, stored in the cache")
          << describe(a->desc());
    }
  }

  /// The backward's cache file, rewritten with its record changed by
  /// `damage`.
  void damageBackwardFile(void (*damage)(CudnnPlanRecord &)) {
    std::string key = cudnnPlanKey(c_.bwd, run_.bwd->cudnnVersion(),
                                   cache_.device, binaryIdentity());
    std::string path = cudnnPlanPath(cache_.dir, key), why;
    CudnnPlanRecord record;
    ASSERT_TRUE(readCudnnPlan(path, key, record, why))
        << "the stored backward plan does not read: " << why;
    damage(record);
    Status st = writeCudnnPlan(path, record);
    ASSERT_TRUE(st) << st.message();
  }

  /// A second pair of plans through the cache, run on cleared outputs;
  /// `seconds_` is how long the two create() calls took.
  void rerun(CudnnRun &run, OutputBits &bits) {
    Status st = clearOutputs(dev_, c_);
    ASSERT_TRUE(st) << st.message();
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(st = CudnnAttention::create(c_.fwd, run.fwd, cache_))
        << st.message();
    ASSERT_TRUE(st = CudnnAttention::create(c_.bwd, run.bwd, cache_))
        << st.message();
    seconds_ = secondsSince(t0);
    // The case's workspace was sized for the cold pair (the same engines).
    ASSERT_LE(std::max(run.fwd->workspaceBytes(), run.bwd->workspaceBytes()),
              std::max(run_.fwd->workspaceBytes(), run_.bwd->workspaceBytes()));
    ASSERT_TRUE(st = runCudnn(dev_, c_, run)) << st.message();
    ASSERT_TRUE(st = readOutputs(dev_, c_, bits)) << st.message();
  }

  CudnnPlanCacheOptions cache_;
  double coldSeconds_ = 0, seconds_ = 0;
};

TEST_F(CudnnPlanCacheGpu, RestoredPlanIsBitwiseTheBuiltOne) {
  LLMC_REQUIRE_GPU_AND_CUDNN();
  ASSERT_NO_FATAL_FAILURE(buildCold());
  CudnnRun warm;
  OutputBits bits;
  ASSERT_NO_FATAL_FAILURE(rerun(warm, bits));
  const CudnnAttention *built[] = {run_.fwd.get(), run_.bwd.get()};
  const CudnnAttention *restored[] = {warm.fwd.get(), warm.bwd.get()};
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(restored[i]->fromCache()) << restored[i]->planSource();
    EXPECT_EQ(restored[i]->planSource(), "restored from the cache");
    EXPECT_EQ(restored[i]->engineName(), built[i]->engineName());
    EXPECT_EQ(restored[i]->workspaceBytes(), built[i]->workspaceBytes());
  }
  expectSameBits(first_, bits, "with the restored plans");
  std::printf("[ cudnn ] plan pair [2, 12, 512x512, 64] bf16 causal: built "
              "(with the session and the case) %.3f s, restored %.3f s; %s, "
              "%s\n",
              coldSeconds_, seconds_, warm.fwd->engineName().c_str(),
              warm.bwd->engineName().c_str());
}

// cuDNN refuses the text: the plan is built again, runs to the same bits,
// and the file is replaced so that the next create() restores.
TEST_F(CudnnPlanCacheGpu, DamagedPlanTextFallsBackToABuild) {
  LLMC_REQUIRE_GPU_AND_CUDNN();
  ASSERT_NO_FATAL_FAILURE(buildCold());
  ASSERT_NO_FATAL_FAILURE(damageBackwardFile([](CudnnPlanRecord &r) {
    r.json = "{\"this\": \"is not a cuDNN plan\"}";
  }));
  CudnnRun again, third;
  OutputBits bits;
  ASSERT_NO_FATAL_FAILURE(rerun(again, bits));
  EXPECT_TRUE(again.fwd->fromCache()) << again.fwd->planSource();
  EXPECT_FALSE(again.bwd->fromCache());
  EXPECT_NE(again.bwd->planSource().find("built, stored in the cache; the "
                                         "cached plan was rejected: '"),
            std::string::npos)
      << again.bwd->planSource();
  EXPECT_EQ(again.bwd->engineName(), run_.bwd->engineName());
  expectSameBits(first_, bits, "after the damaged plan was rebuilt");
  std::printf("[ cudnn ] %s\n", again.bwd->planSource().c_str());

  ASSERT_NO_FATAL_FAILURE(rerun(third, bits));
  EXPECT_TRUE(third.bwd->fromCache()) << third.bwd->planSource();
  expectSameBits(first_, bits, "with the replaced file");
}

// A file that restores to another engine than it names is not trusted.
TEST_F(CudnnPlanCacheGpu, AnotherEngineThanRecordedFallsBackToABuild) {
  LLMC_REQUIRE_GPU_AND_CUDNN();
  ASSERT_NO_FATAL_FAILURE(buildCold());
  ASSERT_NO_FATAL_FAILURE(
      damageBackwardFile([](CudnnPlanRecord &r) { r.engineIndex += 1000; }));
  CudnnRun again;
  OutputBits bits;
  ASSERT_NO_FATAL_FAILURE(rerun(again, bits));
  EXPECT_FALSE(again.bwd->fromCache());
  EXPECT_NE(again.bwd->planSource().find("the file names engine"),
            std::string::npos)
      << again.bwd->planSource();
  expectSameBits(first_, bits, "after the mismatched plan was rebuilt");
}

} // namespace
