//===- ClassifierGpuTest.cpp - The fused classifier vs unfused and the f64 ===//
//
// llmc-fuse-classifier's group (cross_entropy and its gradient in one row
// pass, the gradient written over the logits): on random inputs, every
// result bitwise equal to the unfused kernels' (the row kernel is shared,
// so a row's elements meet in the same order) and close to the f64
// reference evaluator; padded classes, ignore_index targets, `mean` and
// `sum`, bf16 and f32 logits. The logits come from a matmul (K = 8), so
// that the group overwrites them as in a training step. The row kernel
// keeps a row in registers, in shared memory, re-reads it from L2
// (ClassifierEmitter.cpp) or splits it over a thread-block cluster
// (ClassifierCluster.cpp); all visit the elements in one order, so each
// case is also run with LLMC_CE_ROW_CACHE=none (always the L2 re-read) and
// must give the same bits. The exponentials are ex2.approx's; the kernels
// with expf (LLMC_CE_EXP=expf) are checked too. The last test is GPT-2 124M's
// classifier ([16384, 50304] bf16, 50257 classes) and prints the kernels'
// times and bandwidth, fused and unfused, per row cache. Without a GPU
// only the NVRTC checks run.
//
//===----------------------------------------------------------------------===//
#include "test/gpu/codegen/GpuHarness.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>

using namespace llmc::test;

namespace {

/// @forward: logits = h w (K = 8) as `lt`, widened to f32 when `lt` is bf16,
/// the loss and its gradient (stored as `lt`) over rows x cols with
/// `classes` real classes; targets uniform in [ignore, hi).
std::string classifierIR(int64_t rows, int64_t cols, int64_t classes,
                         const std::string &lt, const std::string &reduction,
                         int64_t ignore, int64_t hi) {
  std::string r = std::to_string(rows), c = std::to_string(cols);
  std::string lx = "tensor<" + r + "x" + c + "x" + lt + ">";
  std::string fx = "tensor<" + r + "x" + c + "xf32>";
  std::string tx = "tensor<" + r + "xi64>";
  std::string attrs = "{ignore_index = " + std::to_string(ignore) +
                      " : i64" +
                      (classes != cols
                           ? ", classes = " + std::to_string(classes) + " : i64"
                           : std::string()) +
                      "}";
  bool wide = lt != "f32";
  std::string hx = "tensor<" + r + "x8x" + lt + ">";
  std::string wx = "tensor<8x" + c + "x" + lt + ">";
  std::string s = "func.func @forward(%h: " + hx + ", %w: " + wx +
                  ", %t: " + tx + " {gpu_test.range = array<i64: " +
                  std::to_string(ignore) + ", " + std::to_string(hi) +
                  ">}, %d: tensor<f32>) -> (tensor<f32>, " + lx + ") {\n";
  s += "  %x0 = llmc.matmul %h, %w : (" + hx + ", " + wx + ") -> " + lx +
       "\n";
  std::string logits = "%x0";
  if (wide) {
    s += "  %x1 = llmc.cast %x0 : " + lx + " -> " + fx + "\n";
    logits = "%x1";
  }
  s += "  %l = llmc.cross_entropy " + reduction + " " + logits + ", %t " +
       attrs + " : (" + fx + ", " + tx + ") -> tensor<f32>\n";
  s += "  %g = llmc.cross_entropy_grad " + reduction + " " + logits +
       ", %t, %d " + attrs + " : (" + fx + ", " + tx +
       ", tensor<f32>) -> " + fx + "\n";
  std::string grad = "%g";
  if (wide) {
    s += "  %g1 = llmc.cast %g : " + fx + " -> " + lx + "\n";
    grad = "%g1";
  }
  s += "  return %l, " + grad + " : tensor<f32>, " + lx + "\n}\n";
  return s;
}

struct ClassifierCase {
  const char *name;
  int64_t rows, cols, classes;
  const char *lt, *reduction;
  int64_t ignore, hi;
};
void PrintTo(const ClassifierCase &c, std::ostream *os) { *os << c.name; }

const ClassifierCase kCases[] = {
    // Padded classes (13 of 16), a row kernel of 8-element vectors; one
    // target in 14 is ignored.
    {"Bf16PaddedMean", 37, 16, 13, "bf16", "mean", -1, 13},
    // Rows of 515: one element at a time (not a multiple of 8).
    {"Bf16OddSum", 9, 515, 515, "bf16", "sum", -1, 515},
    // f32 logits: 32-byte vectors exceed the register cache; the row is
    // staged in shared memory, two cp.async of 16 bytes per vector.
    {"F32Mean", 24, 2048, 2000, "f32", "mean", 7, 2000},
    // GPT-2's row length (50304, 50257 classes), a few rows: the row in
    // shared memory (98 KiB, two blocks per SM), ignore_index 0 for one
    // target in 64; 1024-thread blocks, so the last row sums the loss (the
    // harness checks its `tickets` back at zero after the runs).
    {"Bf16Gpt2Rows", 64, 50304, 50257, "bf16", "mean", 0, 64},
    // The unpadded vocabulary, an odd row length: shared memory filled by
    // plain 2-byte copies (cp.async moves 4, 8 or 16 bytes).
    {"Bf16OddGpt2Rows", 16, 50257, 50257, "bf16", "sum", -1, 50257},
    // f32 rows of GPT-2's length (201 KiB): past the shared memory two
    // blocks per SM leave, so the L2 re-read.
    {"F32Gpt2Rows", 16, 50304, 50257, "f32", "mean", 3, 50257},
};

/// Sets an environment variable for a scope, then restores it.
class ScopedEnv {
public:
  ScopedEnv(const char *var, const char *value) : var_(var) {
    const char *old = std::getenv(var);
    had_ = old != nullptr;
    if (old)
      old_ = old;
    if (value)
      setenv(var, value, 1);
    else
      unsetenv(var);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(var_, old_.c_str(), 1);
    else
      unsetenv(var_);
  }

private:
  const char *var_;
  bool had_ = false;
  std::string old_;
};

std::string irOf(const ClassifierCase &c) {
  return classifierIR(c.rows, c.cols, c.classes, c.lt, c.reduction, c.ignore,
                      c.hi);
}

class ClassifierGpu : public ::testing::TestWithParam<ClassifierCase> {};

TEST_P(ClassifierGpu, BitwiseEqualToUnfused) {
  LLMC_REQUIRE_GPU();
  checkFusedMatchesUnfused(irOf(GetParam()));
}

TEST_P(ClassifierGpu, MatchesReference) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(irOf(GetParam()));
}

// The default row cache against the L2 re-read (the kernel before shared
// staging), fused and unfused: the same bits.
TEST_P(ClassifierGpu, RowCacheBitwiseEqualToL2Reread) {
  LLMC_REQUIRE_GPU();
  checkEnvVariantsBitwiseEqual(irOf(GetParam()), "LLMC_CE_ROW_CACHE", nullptr,
                               "none", llmc::FusionConfig::exact());
  checkEnvVariantsBitwiseEqual(irOf(GetParam()), "LLMC_CE_ROW_CACHE", nullptr,
                               "none", llmc::FusionConfig::none());
}

// The cluster row cache (LLMC_CE_ROW_CACHE=clusterN: N CTAs per row, each
// staging a slice, sm_90) splits the one-block kernel's threads over the
// CTAs and merges their warp partials in the one butterfly: the same bits
// as the L2 re-read, fused and unfused (the unfused gradient kernel uses
// it too), for every cluster size the rows allow; and the body for GPUs
// without clusters (cluster-fallback: CTA 0 of each cluster does the row).
TEST_P(ClassifierGpu, ClusterBitwiseEqualToL2Reread) {
  LLMC_REQUIRE_GPU();
  for (const char *cluster :
       {"cluster", "cluster2", "cluster8", "cluster-fallback"}) {
    checkEnvVariantsBitwiseEqual(irOf(GetParam()), "LLMC_CE_ROW_CACHE",
                                 cluster, "none", llmc::FusionConfig::exact());
    checkEnvVariantsBitwiseEqual(irOf(GetParam()), "LLMC_CE_ROW_CACHE",
                                 cluster, "none", llmc::FusionConfig::none());
  }
}

TEST_P(ClassifierGpu, CompilesWithNvrtc) { checkCompiles(irOf(GetParam())); }

// NVRTC (sm_90) accepts the cluster kernels' PTX (mapa, ld.shared::cluster,
// the split cluster barrier) for every size; no GPU needed.
TEST_P(ClassifierGpu, ClusterCompilesWithNvrtc) {
  for (const char *cluster :
       {"cluster2", "cluster4", "cluster8", "cluster-fallback"}) {
    ScopedEnv env("LLMC_CE_ROW_CACHE", cluster);
    checkCompiles(irOf(GetParam()));
  }
}

// The row kernels take exp(a - b) as ex2.approx of one FMA (the tests
// above); LLMC_CE_EXP=expf, the kernels before, keeps expf: within the
// reference's tolerance, fused bitwise unfused, and the default row cache
// and the cluster bitwise the L2 re-read.
TEST_P(ClassifierGpu, ExpfMatchesReferenceAndVariants) {
  LLMC_REQUIRE_GPU();
  ScopedEnv env("LLMC_CE_EXP", "expf");
  checkAgainstReference(irOf(GetParam()));
  checkFusedMatchesUnfused(irOf(GetParam()));
  for (const char *cache : {static_cast<const char *>(nullptr),
                            static_cast<const char *>("cluster")})
    checkEnvVariantsBitwiseEqual(irOf(GetParam()), "LLMC_CE_ROW_CACHE", cache,
                                 "none", llmc::FusionConfig::exact());
}

TEST_P(ClassifierGpu, ExpfCompilesWithNvrtc) {
  ScopedEnv exp("LLMC_CE_EXP", "expf");
  checkCompiles(irOf(GetParam()));
  ScopedEnv cache("LLMC_CE_ROW_CACHE", "cluster");
  checkCompiles(irOf(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Shapes, ClassifierGpu, ::testing::ValuesIn(kCases),
                         [](const auto &info) {
                           return std::string(info.param.name);
                         });

/// One timed configuration of the classifier: fused or not, and the row
/// cache and exponential settings (unset: the defaults).
struct Variant {
  const char *name;
  bool fused;
  const char *cache, *exp;
};

/// Replays each variant's step 10 times and prints its kernels' times and
/// the loss and gradient's bandwidth on the bytes they must move (read the
/// bf16 logits once, write the gradient once) and their share of the floor
/// at an H100's measured 2.97 TB/s.
void printVariantTimes(const std::string &ir, int64_t rows, int64_t cols,
                       std::initializer_list<Variant> variants) {
  double bytes = 2.0 * rows * cols * 2;
  const double floorMs = bytes / 2.97e12 * 1e3;
  for (Variant v : variants) {
    ScopedEnv cache("LLMC_CE_ROW_CACHE", v.cache);
    ScopedEnv exp("LLMC_CE_EXP", v.exp);
    llmc::FusionConfig fusion;
    fusion.classifier = v.fused;
    auto steps = stepReplayMs(ir, 10, fusion);
    if (steps.empty()) {
      ADD_FAILURE() << v.name << ": the timing run failed";
      continue;
    }
    double loss = 0;
    for (const auto &[label, ms] : steps) {
      std::printf("[ classifier ] %s: step %s %.4f ms\n", v.name,
                  label.c_str(), ms);
      if (label.find("matmul") == std::string::npos)
        loss += ms;
    }
    std::printf("[ classifier ] %s: loss + gradient %.4f ms = %.0f GB/s on "
                "%.2f GB (one read, one write), %.0f%% of the %.3f ms floor "
                "at 2.97 TB/s\n",
                v.name, loss, bytes / (loss * 1e-3) / 1e9, bytes / 1e9,
                100.0 * floorMs / loss, floorMs);
  }
}

// GPT-2 124M's classifier at B 16, T 1024: [16384, 50304] bf16 logits, 50257
// real classes, ignore_index 0 for one target in 256. Fused and unfused must
// be bitwise equal, and the shared-memory row kernel (the default) and the
// cluster bitwise the L2 re-read; the f64 reference is checked on Gpt2Rows
// above (the same kernel, fewer rows). Prints each variant's times (read
// and write 2 x 1.65 GB). Measured on an H100 (session 8, docs/fusion.md
// "Cheaper exponentials"): 1.26 ms (88% of the floor) by default, 1.87 ms
// with expf; session 10's per-vector fold 1.149 ms (97%).
TEST(ClassifierGpuBandwidth, Gpt2Classifier) {
  LLMC_REQUIRE_GPU();
  const int64_t rows = 16384, cols = 50304;
  std::string ir = classifierIR(rows, cols, 50257, "bf16", "mean", 0, 256);
  checkFusedMatchesUnfused(ir);
  checkEnvVariantsBitwiseEqual(ir, "LLMC_CE_ROW_CACHE", nullptr, "none",
                               llmc::FusionConfig::exact());
  checkEnvVariantsBitwiseEqual(ir, "LLMC_CE_ROW_CACHE", "cluster", "none",
                               llmc::FusionConfig::exact());
  // The timings print even when a bitwise check above failed (it says
  // which), not after a fatal one.
  if (::testing::Test::HasFatalFailure())
    return;
  // Fused with the row in shared memory (the default), split over a
  // cluster of 2, 4 or 8 CTAs (LLMC_CE_ROW_CACHE=clusterN), in registers
  // (LLMC_CE_ROW_CACHE=registers: spills) and re-read from L2
  // (LLMC_CE_ROW_CACHE=none: the default before shared staging), and
  // unfused as before llmc-fuse-classifier; then the shared row, the
  // cluster of 4 and the unfused kernels with expf (LLMC_CE_EXP=expf, the
  // kernels before session 8: twice the instructions per logit).
  printVariantTimes(
      ir, rows, cols,
      {Variant{"fused, shared memory", true, nullptr, nullptr},
       Variant{"fused, cluster of 2", true, "cluster2", nullptr},
       Variant{"fused, cluster of 4", true, "cluster4", nullptr},
       Variant{"fused, cluster of 8", true, "cluster8", nullptr},
       Variant{"fused, registers", true, "registers", nullptr},
       Variant{"fused, L2 re-read", true, "none", nullptr},
       Variant{"unfused", false, nullptr, nullptr},
       Variant{"fused, shared memory, expf", true, nullptr, "expf"},
       Variant{"fused, cluster of 4, expf", true, "cluster4", "expf"},
       Variant{"unfused, expf", false, nullptr, "expf"}});
}

// Llama 3's vocabulary (128256 classes, bf16 rows of 251 KiB) over 4096
// positions: no room for two one-block rows an SM. A cluster of 4 or 8
// CTAs stages the row (64 or 32 KiB a CTA, 3 or 6 CTAs an SM; 2 CTAs would
// leave one an SM and fall back) and must be bitwise the L2 re-read. The
// default is the cluster of 4 since session 10: 0.783 ms against 1.069 for
// the re-read and 0.804 for 8 CTAs (H100; docs/fusion.md "The cluster row
// cache").
TEST(ClassifierGpuBandwidth, Llama3VocabClassifier) {
  LLMC_REQUIRE_GPU();
  const int64_t rows = 4096, cols = 128256;
  std::string ir = classifierIR(rows, cols, cols, "bf16", "mean", 0, cols);
  for (const char *variant : {"cluster4", "cluster8", static_cast<const char *>(nullptr)})
    checkEnvVariantsBitwiseEqual(ir, "LLMC_CE_ROW_CACHE", variant, "none",
                                 llmc::FusionConfig::exact());
  if (::testing::Test::HasFatalFailure())
    return;
  printVariantTimes(ir, rows, cols,
                    {Variant{"llama3 vocab, cluster of 4 (default)", true,
                             nullptr, nullptr},
                     Variant{"llama3 vocab, L2 re-read", true, "none",
                             nullptr},
                     Variant{"llama3 vocab, cluster of 4", true, "cluster4",
                             nullptr},
                     Variant{"llama3 vocab, cluster of 8", true, "cluster8",
                             nullptr}});
}

} // namespace
