//===- MatmulTuneGpuTest.cpp - cuBLASLt algorithms timed at load, cached --===//
//
// runtime/MatmulTune.cpp: the first executor times the heuristic's
// candidates per matmul key and caches the choice; a second executor of the
// same plan takes every choice from the cache without timing, and computes
// bitwise the same results (what bitwise resume in a new process needs).
//
//===----------------------------------------------------------------------===//
#include "compiler/common/FloatFormats.h"
#include "test/gpu/PlanBuilder.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace llmc;
using namespace llmc::test;

namespace {

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>(static_cast<int>(i % 97) - 48) / 48.0f;
  return v;
}

/// Two matmuls of one shape (one key, tuned once) and one of another.
Plan threeMatmuls() {
  const int64_t m = 512, n = 768, k = 1024, n2 = 256;
  PlanBuilder b("tune");
  b.buffer("A", BufferRole::Input, {m * k}, DType::F32, ramp(m * k, 1.0f))
      .buffer("B", BufferRole::Param, {k * n}, DType::F32, ramp(k * n, 0.5f))
      .buffer("B2", BufferRole::Param, {k * n2}, DType::F32,
              ramp(k * n2, 0.25f))
      .buffer("D1", BufferRole::Output, {m * n})
      .buffer("D2", BufferRole::Output, {m * n})
      .buffer("D3", BufferRole::Output, {m * n2});
  MatmulStep mm;
  mm.m = m;
  mm.n = n;
  mm.k = k;
  mm.a = "A";
  mm.b = "B";
  mm.d = "D1";
  b.matmul(mm);
  mm.d = "D2";
  b.matmul(mm);
  mm.n = n2;
  mm.b = "B2";
  mm.d = "D3";
  b.matmul(mm);
  return b.build();
}

class MatmulTune : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    unsetenv("LLMC_MATMUL_TUNE");
    dir_ = std::filesystem::temp_directory_path() /
           ("llmc-tune-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Executor> load(int candidates) {
    ExecutorOptions options;
    options.cacheDir = dir_.string();
    options.matmulCandidates = candidates;
    std::unique_ptr<Executor> e;
    Status s = Executor::create(threeMatmuls(), options, e);
    EXPECT_TRUE(s.isOk()) << s.message();
    return e;
  }
  std::filesystem::path dir_;
};

TEST_F(MatmulTune, SecondLoadTakesTheCachedChoiceAndMatchesBitwise) {
  std::unique_ptr<Executor> first = load(8);
  ASSERT_TRUE(first);
  // Two keys; the second use of the first key shares its tuning.
  EXPECT_NE(first->matmulTuning().find("2 matmul shapes: 2 timed"),
            std::string::npos)
      << first->matmulTuning();
  size_t files = 0;
  for (const auto &entry :
       std::filesystem::directory_iterator(dir_ / "matmul-tune")) {
    std::ifstream in(entry.path());
    int rank = -1;
    ASSERT_TRUE(in >> rank) << entry.path();
    EXPECT_GE(rank, 0);
    // The heuristic's 8 answers, then at most 3 split-K variants of each of
    // its first 4 (runtime/Matmul.cpp).
    EXPECT_LT(rank, 8 + 12);
    ++files;
  }
  EXPECT_EQ(files, 2u);
  ASSERT_TRUE(first->replay().isOk());

  std::unique_ptr<Executor> second = load(8);
  ASSERT_TRUE(second);
  EXPECT_NE(second->matmulTuning().find("0 timed"), std::string::npos)
      << second->matmulTuning();
  EXPECT_NE(second->matmulTuning().find("2 from the cache"), std::string::npos)
      << second->matmulTuning();
  ASSERT_TRUE(second->replay().isOk());
  for (const char *name : {"D1", "D2", "D3"}) {
    std::vector<uint8_t> a, b;
    ASSERT_TRUE(first->readBuffer(name, a).isOk());
    ASSERT_TRUE(second->readBuffer(name, b).isOk());
    EXPECT_EQ(a, b) << name << " differs between the tuned and cached loads";
  }
  // One key, one algorithm: D1 and D2 are the same product.
  std::vector<uint8_t> d1, d2;
  ASSERT_TRUE(second->readBuffer("D1", d1).isOk());
  ASSERT_TRUE(second->readBuffer("D2", d2).isOk());
  EXPECT_EQ(d1, d2);
}

/// bf16 bits of each value (compiler/common/FloatFormats.h's rounding).
std::vector<uint8_t> bf16Bytes(const std::vector<float> &v) {
  std::vector<uint8_t> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h = static_cast<uint16_t>(floatToBits(v[i], FloatFormat::BF16));
    std::memcpy(&out[2 * i], &h, 2);
  }
  return out;
}

float bf16Value(const uint8_t *p) {
  return static_cast<float>(
      bitsToFloat(static_cast<uint32_t>(p[0] | (p[1] << 8)), FloatFormat::BF16));
}

/// GPT-2 124M's MLP c_fc weight gradient at B 16 x T 1024: dW [768, 3072] =
/// x^T dy over 16384 tokens, bf16 (the HF layout: "grad:h [768 x 3072 x
/// 16384]" in the trace). 72 output tiles of 128 x 256 on 132 SMs: the case
/// split-K variants are for.
Plan weightGradient() {
  const int64_t m = 768, n = 3072, k = 16384;
  PlanBuilder b("wgrad");
  b.rawBuffer("X", BufferRole::Input, {k, m}, DType::BF16,
              bf16Bytes(ramp(k * m, 1.0f)))
      .rawBuffer("DY", BufferRole::Param, {k, n}, DType::BF16,
                 bf16Bytes(ramp(k * n, 0.01f)))
      .buffer("DW", BufferRole::Output, {m, n}, DType::BF16);
  MatmulStep mm;
  mm.m = m;
  mm.n = n;
  mm.k = k;
  mm.transA = true;
  mm.typeA = mm.typeB = mm.typeC = mm.typeD = DType::BF16;
  mm.a = "X";
  mm.b = "DY";
  mm.d = "DW";
  b.matmul(mm);
  return b.build();
}

// Whatever the timing chooses (a split-K variant on the H100), replays give
// the same bits (the COMPUTE_TYPE reduction adds the slices in a fixed
// order) and the product agrees with the heuristic's unsplit answer to
// bf16 rounding.
TEST_F(MatmulTune, WeightGradientSplitOverKIsDeterministic) {
  setenv("LLMC_MATMUL_TUNE_LOG", "1", 1);
  ExecutorOptions options;
  options.cacheDir = dir_.string();
  options.matmulCandidates = 8;
  std::unique_ptr<Executor> tuned, plain;
  Status s = Executor::create(weightGradient(), options, tuned);
  unsetenv("LLMC_MATMUL_TUNE_LOG");
  ASSERT_TRUE(s.isOk()) << s.message();
  std::printf("[ timing ] %s\n", tuned->matmulTuning().c_str());
  options.matmulCandidates = 1;
  ASSERT_TRUE(Executor::create(weightGradient(), options, plain).isOk());
  std::vector<uint8_t> first, second, reference;
  ASSERT_TRUE(tuned->replay().isOk());
  ASSERT_TRUE(tuned->readBuffer("DW", first).isOk());
  ASSERT_TRUE(tuned->replay().isOk());
  ASSERT_TRUE(tuned->readBuffer("DW", second).isOk());
  EXPECT_EQ(first, second) << "two replays of the tuned matmul differ";
  ASSERT_TRUE(plain->replay().isOk());
  ASSERT_TRUE(plain->readBuffer("DW", reference).isOk());
  ASSERT_EQ(first.size(), reference.size());
  float scale = 0, worst = 0;
  for (size_t i = 0; i < reference.size(); i += 2)
    scale = std::max(scale, std::fabs(bf16Value(&reference[i])));
  for (size_t i = 0; i < reference.size(); i += 2)
    worst = std::max(worst, std::fabs(bf16Value(&first[i]) -
                                      bf16Value(&reference[i])));
  ASSERT_GT(scale, 0.0f);
  // Two f32 sums of 16384 products in different orders, each rounded to
  // bf16 once: a couple of bf16 ulps of the largest element at most.
  EXPECT_LE(worst, scale * (1.0f / 64)) << "largest |DW| " << scale;
}

TEST_F(MatmulTune, OneCandidateIsTheHeuristicsAnswerUntimed) {
  std::unique_ptr<Executor> e = load(1);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->matmulTuning(), "");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "matmul-tune"));
}

} // namespace
