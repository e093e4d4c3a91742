//===- JitCacheTest.cpp - The JIT's GPU plan through the compile cache ----===//
//
// Device cuda compiles through the compile cache (compiler/jit/
// PlanCompile.h), so a second compile of the same model with the same
// options reads the plan from the cache and maps the weights (issue 17's
// warm start). NVRTC needs no GPU, so this runs in CI: the first compile
// stores, the second hits with the same plan and weights, another option
// misses, errors are statuses. The timing on a GPU is
// JitGpu.WarmStartInAFreshProcess. Also: parameters in the model's shapes
// when the plan stores them padded (ParameterLayout).
//
//===----------------------------------------------------------------------===//
#include "compiler/jit/ParameterLayout.h"
#include "compiler/jit/PlanCompile.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <unistd.h>

using namespace llmc;

namespace {

const std::string kTiny =
    std::string(LLMC_TEST_MODELS) + "/tiny_gpt_dynamo_loss_dyn.onnx";

/// One cache for the whole test binary: NVRTC compiles the tiny model's
/// kernels once (about 12 s on two cores), later compiles reuse them.
const std::string &cacheDir() {
  static const std::string dir = [] {
    std::string d = ::testing::TempDir() + "llmc-jit-cache-" +
                    std::to_string(::getpid());
    std::filesystem::remove_all(d);
    return d;
  }();
  return dir;
}

jit::Options options() {
  jit::Options o;
  o.batch = 2;
  o.seq = 16;
  o.arch = "sm_90";
  o.cacheDir = cacheDir();
  return o;
}

std::string keyOf(const std::string &outcome) {
  size_t at = outcome.find("(key ");
  return at == std::string::npos ? "" : outcome.substr(at + 5, 32);
}

TEST(JitCompileCache, SecondCompileHitsWithTheSamePlan) {
  Plan cold, warm;
  jit::CompileReport coldReport, warmReport;
  Status s = jit::compileGpuPlan(kTiny, nullptr, options(), cold, coldReport);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(coldReport.cache.rfind("miss, stored (key ", 0), 0u)
      << coldReport.cache;
  s = jit::compileGpuPlan(kTiny, nullptr, options(), warm, warmReport);
  ASSERT_TRUE(s) << s.message();
  ASSERT_EQ(warmReport.cache.rfind("hit (key ", 0), 0u) << warmReport.cache;
  EXPECT_EQ(keyOf(warmReport.cache), keyOf(coldReport.cache));
  EXPECT_EQ(warmReport.kernels, coldReport.kernels);
  EXPECT_EQ(warmReport.cacheHits, warmReport.kernels);
  EXPECT_EQ(warmReport.parameters, coldReport.parameters);
  EXPECT_EQ(warmReport.vocab, 512);
  // The warm path's split (llmc compile's "warm phases"): the lookup's
  // phases in order, each timed; the cold one's compile as one phase.
  std::vector<std::string> names;
  for (const auto &[name, seconds] : warmReport.phases) {
    names.push_back(name);
    EXPECT_GE(seconds, 0.0) << name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "map and scan", "binary identity",
                       "key (NVRTC version, options)", "cache entry",
                       "weights", "plan validation", "memory report"}));
  ASSERT_FALSE(coldReport.phases.empty());
  EXPECT_EQ(coldReport.phases.back().first,
            "compile (import, pipeline, codegen, NVRTC)");
  std::string json = warmReport.toJson();
  EXPECT_NE(json.find("\"phases\": {\"map and scan\": "), std::string::npos)
      << json;

  // The same plan: buffers, their initial data (the weights, mapped from
  // the model file on the hit), kernels and steps.
  ASSERT_EQ(warm.buffers.size(), cold.buffers.size());
  size_t weights = 0;
  for (size_t i = 0; i < cold.buffers.size(); ++i) {
    const BufferInfo &a = cold.buffers[i], &b = warm.buffers[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.shape, b.shape);
    EXPECT_EQ(a.offset, b.offset);
    ASSERT_EQ(a.initBytes(), b.initBytes()) << a.name;
    if (a.initBytes()) {
      ++weights;
      EXPECT_EQ(std::memcmp(a.initData(), b.initData(), a.initBytes()), 0)
          << a.name;
    }
  }
  EXPECT_GT(weights, 0u);
  ASSERT_EQ(warm.kernels.size(), cold.kernels.size());
  for (size_t i = 0; i < cold.kernels.size(); ++i)
    EXPECT_EQ(warm.kernels[i].cubin, cold.kernels[i].cubin);
  EXPECT_EQ(warm.steps.size(), cold.steps.size());
  EXPECT_EQ(warm.arenaBytes, cold.arenaBytes);
}

TEST(JitCompileCache, AnotherOptionMisses) {
  Plan plan;
  jit::CompileReport report;
  jit::Options o = options();
  o.weightDecay = 0.05;
  Status s = jit::compileGpuPlan(kTiny, nullptr, o, plan, report);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(report.cache.rfind("miss, stored (key ", 0), 0u) << report.cache;
  s = jit::compileGpuPlan(kTiny, nullptr, o, plan, report);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(report.cache.rfind("hit (key ", 0), 0u) << report.cache;
}

TEST(JitCompileCache, CompileErrorsAreStatuses) {
  Plan plan;
  jit::CompileReport report;
  Status s = jit::compileGpuPlan(std::string(LLMC_TEST_MODELS) + "/missing.onnx",
                                 nullptr, options(), plan, report);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("missing.onnx"), std::string::npos)
      << s.message();
}

// A parameter the plan stores padded (vocab 5 as 8 rows) is seen, read and
// written in the model's shape; loading writes zero padding.
TEST(ParameterLayout, PaddedParametersHaveTheModelsShape) {
  BufferInfo b;
  b.name = "wte";
  b.dtype = DType::F32;
  b.shape = {8, 3};
  b.realShape = {5, 3};
  jit::ParameterLayout layout = jit::parameterLayout(b);
  EXPECT_EQ(layout.logical, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(layout.stored, (std::vector<int64_t>{8, 3}));
  EXPECT_FALSE(layout.identity());

  std::vector<float> logical(15);
  for (size_t i = 0; i < logical.size(); ++i)
    logical[i] = 1.0f + i;
  std::vector<uint8_t> stored, back;
  ASSERT_TRUE(jit::pad(layout, reinterpret_cast<uint8_t *>(logical.data()),
                       stored));
  ASSERT_EQ(stored.size(), 24u * 4);
  const float *f = reinterpret_cast<const float *>(stored.data());
  for (size_t i = 0; i < 24; ++i)
    EXPECT_EQ(f[i], i < 15 ? logical[i] : 0.0f) << i;
  ASSERT_TRUE(jit::unpad(layout, stored.data(), back));
  ASSERT_EQ(back.size(), 15u * 4);
  EXPECT_EQ(std::memcmp(back.data(), logical.data(), back.size()), 0);

  b.realShape.clear(); // not padded: the buffer's shape
  EXPECT_TRUE(jit::parameterLayout(b).identity());
  EXPECT_EQ(jit::parameterLayout(b).logical, b.shape);
}

} // namespace

namespace {

/// Token ids and targets for `step`'s inputs, below `vocab`.
std::vector<std::vector<int64_t>> batchFor(const jit::Step &step, int seed,
                                           int64_t vocab) {
  std::vector<std::vector<int64_t>> data;
  for (const jit::TensorInfo &in : step.inputs()) {
    int64_t n = 1;
    for (int64_t d : in.shape)
      n *= d;
    std::vector<int64_t> v(n);
    for (int64_t i = 0; i < n; ++i)
      v[i] = (seed * 7919 + i * 104729 + data.size() * 13) % vocab;
    data.push_back(std::move(v));
  }
  return data;
}

std::vector<jit::TensorView> views(const jit::Step &step,
                                   const std::vector<std::vector<int64_t>> &d) {
  std::vector<jit::TensorView> out;
  for (size_t i = 0; i < d.size(); ++i)
    out.push_back(jit::TensorView::host(d[i].data(), step.inputs()[i].shape));
  return out;
}

// The padding option on the CPU path: vocab 8063 padded to 8064 trains as
// unpadded, bit for bit, and its parameters have the model's shapes both
// ways (read, and loaded with zero padding).
TEST(JitPadding, PaddedStepSpeaksTheModelsShapes) {
  const std::string model =
      std::string(LLMC_TEST_MODELS) + "/odd_gpt2_v8063_dynamo_loss.onnx";
  jit::Step padded, plain;
  jit::Options o;
  o.padding = "always";
  Status s = jit::compile(model, o, padded);
  ASSERT_TRUE(s) << s.message();
  o.padding = "off";
  ASSERT_TRUE(s = jit::compile(model, o, plain)) << s.message();
  ASSERT_EQ(padded.parameterInfo().size(), plain.parameterInfo().size());
  bool sawHead = false;
  for (size_t i = 0; i < plain.parameterInfo().size(); ++i) {
    EXPECT_EQ(padded.parameterInfo()[i].shape, plain.parameterInfo()[i].shape)
        << plain.parameterInfo()[i].name;
    if (plain.parameterInfo()[i].name == "m.lm_head.weight") {
      sawHead = true;
      EXPECT_EQ(plain.parameterInfo()[i].shape,
                (std::vector<int64_t>{8063, 80}));
    }
  }
  EXPECT_TRUE(sawHead);
  ASSERT_EQ(padded.report().padding.size(), 1u);
  EXPECT_EQ(padded.report().padding[0].rfind("8063 -> 8064, ", 0), 0u)
      << padded.report().padding[0];
  EXPECT_NE(padded.report().toJson().find("\"padding\": [\"8063 -> 8064"),
            std::string::npos)
      << padded.report().toJson();
  EXPECT_TRUE(plain.report().padding.empty());

  for (int k = 0; k < 2; ++k) {
    auto data = batchFor(plain, k, 8063);
    double a = 0, b = 0;
    ASSERT_TRUE(s = padded.run(views(padded, data), 1e-3, a)) << s.message();
    ASSERT_TRUE(s = plain.run(views(plain, data), 1e-3, b)) << s.message();
    EXPECT_EQ(a, b) << "step " << k;
  }
  std::vector<jit::HostTensor> pa, pb;
  ASSERT_TRUE(s = padded.parameters(pa)) << s.message();
  ASSERT_TRUE(s = plain.parameters(pb)) << s.message();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].shape, pb[i].shape) << pa[i].name;
    EXPECT_EQ(pa[i].bytes, pb[i].bytes) << pa[i].name;
  }

  // The unpadded step's weights load into the padded one (zero padding):
  // both then compute the same loss.
  std::vector<jit::NamedTensor> values;
  for (const jit::HostTensor &t : pb)
    values.push_back({t.name, jit::TensorView::host(
                                  reinterpret_cast<const float *>(t.bytes.data()),
                                  t.shape)});
  ASSERT_TRUE(s = padded.loadParameters(values)) << s.message();
  auto data = batchFor(plain, 5, 8063);
  double a = 0, b = 0;
  ASSERT_TRUE(s = padded.evaluate(views(padded, data), a)) << s.message();
  ASSERT_TRUE(s = plain.evaluate(views(plain, data), b)) << s.message();
  EXPECT_EQ(a, b);
}

TEST(JitPadding, UnknownSettingIsRefused) {
  jit::Step step;
  jit::Options o;
  o.padding = "sometimes";
  Status s = jit::compile(kTiny, o, step);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("padding 'sometimes' is not one of auto, off, "
                             "always"),
            std::string::npos)
      << s.message();
}

} // namespace
