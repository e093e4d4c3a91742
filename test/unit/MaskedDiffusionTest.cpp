//===- MaskedDiffusionTest.cpp - The masked-diffusion data mode's draws ---===//
//
// runtime/MaskedDiffusion.h: the draws' statistics against their definition
// (t ~ U(eps, 1) per sequence, p = (1 - eps) t + eps, mask ~ Bernoulli(p)),
// their determinism, and the engine wrapper's feeding and checkpointed draw
// count, with a recording engine in place of a real step.
//
//===----------------------------------------------------------------------===//
#include "runtime/MaskedDiffusion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace llmc;

TEST(MaskedDiffusion, DrawsFollowTheDefinition) {
  const int64_t b = 64, t = 256;
  const double eps = 1e-3;
  double pSum = 0, pSq = 0, maskedOverP = 0;
  int64_t sequences = 0;
  for (uint64_t draw = 0; draw < 40; ++draw) {
    std::vector<int64_t> mask;
    std::vector<float> p;
    drawMasking(5, draw, b, t, eps, mask, p);
    ASSERT_EQ(mask.size(), static_cast<size_t>(b * t));
    for (int64_t s = 0; s < b; ++s) {
      float ps = p[s * t];
      ASSERT_GE(ps, static_cast<float>((1 - eps) * eps + eps));
      ASSERT_LE(ps, 1.0f);
      int64_t count = 0;
      for (int64_t l = 0; l < t; ++l) {
        ASSERT_EQ(p[s * t + l], ps); // one p per sequence
        ASSERT_TRUE(mask[s * t + l] == 0 || mask[s * t + l] == 1);
        count += mask[s * t + l];
      }
      pSum += ps;
      pSq += ps * ps;
      maskedOverP += count / (t * static_cast<double>(ps));
      ++sequences;
    }
  }
  double n = static_cast<double>(sequences);
  // t ~ U(eps, 1): p = (1 - eps) t + eps is uniform on [a, 1] with
  // a = (1 - eps) eps + eps; mean (a + 1) / 2, variance (1 - a)^2 / 12.
  double a = (1 - eps) * eps + eps;
  EXPECT_NEAR(pSum / n, (a + 1) / 2, 0.02);
  EXPECT_NEAR(pSq / n - (pSum / n) * (pSum / n), (1 - a) * (1 - a) / 12,
              0.01);
  // E[masked tokens / p] = tokens: the loss's 1/p weight is unbiased.
  EXPECT_NEAR(maskedOverP / n, 1.0, 0.05);
}

TEST(MaskedDiffusion, DrawsAreAFunctionOfSeedAndDrawNumber) {
  std::vector<int64_t> m1, m2, m3;
  std::vector<float> p1, p2, p3;
  drawMasking(1, 7, 4, 32, 1e-3, m1, p1);
  drawMasking(1, 7, 4, 32, 1e-3, m2, p2);
  EXPECT_EQ(m1, m2);
  EXPECT_EQ(p1, p2);
  drawMasking(1, 8, 4, 32, 1e-3, m3, p3);
  EXPECT_NE(p1, p3);
  drawMasking(2, 7, 4, 32, 1e-3, m3, p3);
  EXPECT_NE(p1, p3);
}

namespace {

/// Records what the wrapper feeds; one state tensor of its own.
struct Recorder : StepEngine {
  std::vector<int64_t> lastTargets;
  std::vector<float> lastP;
  std::string description() const override { return "a recorder"; }
  int64_t batch() const override { return 2; }
  int64_t seq() const override { return 8; }
  int64_t vocab() const override { return 0; }
  double flopsPerToken() const override { return 0; }
  bool canSkipUpdate() const override { return true; }
  std::vector<std::string> floatInputs() const override { return {"p_mask"}; }
  Status setFloatInput(const std::string &name,
                       const std::vector<float> &values) override {
    if (name != "p_mask")
      return StepEngine::setFloatInput(name, values);
    lastP = values;
    return Status::ok();
  }
  Status step(const std::vector<int64_t> &, const std::vector<int64_t> &y,
              double, int64_t, bool, StepResult &r) override {
    lastTargets = y;
    r.loss = 1;
    return Status::ok();
  }
  Status evalLoss(const std::vector<int64_t> &, const std::vector<int64_t> &y,
                  double &loss) override {
    lastTargets = y;
    loss = 1;
    return Status::ok();
  }
  std::vector<StateTensor> stateTensors() const override {
    return {{"w", false, DType::F32, {1}}};
  }
  Status readState(const StateTensor &, std::vector<uint8_t> &b) override {
    b.assign(4, 0);
    return Status::ok();
  }
  Status writeState(const StateTensor &, const std::vector<uint8_t> &) override {
    return Status::ok();
  }
};

} // namespace

TEST(MaskedDiffusion, EngineFeedsTheDrawsAndCheckpointsTheirCount) {
  Recorder inner;
  MaskedDiffusionEngine md(inner, "p_mask", 3, 1e-3);
  std::vector<int64_t> tokens(16, 5), nextToken(16, 6);
  StepResult r;
  ASSERT_TRUE(md.step(tokens, nextToken, 1e-3, 0, false, r).isOk());
  std::vector<int64_t> mask;
  std::vector<float> p;
  drawMasking(3, 0, 2, 8, 1e-3, mask, p);
  EXPECT_EQ(inner.lastTargets, mask); // the mask, not the loader's targets
  EXPECT_EQ(inner.lastP, p);
  ASSERT_TRUE(md.step(tokens, nextToken, 1e-3, 1, false, r).isOk());
  EXPECT_EQ(md.draws(), 2u);

  // The draw count is a state tensor after the inner engine's.
  std::vector<StateTensor> state = md.stateTensors();
  ASSERT_EQ(state.size(), 2u);
  EXPECT_EQ(state[1].name, MaskedDiffusionEngine::kDrawsTensor);
  EXPECT_TRUE(state[1].optimizer);
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(md.readState(state[1], bytes).isOk());
  int64_t draws = 0;
  std::memcpy(&draws, bytes.data(), 8);
  EXPECT_EQ(draws, 2);

  // A restored count draws what the saved run drew next.
  MaskedDiffusionEngine resumed(inner, "p_mask", 3, 1e-3);
  ASSERT_TRUE(resumed.writeState(state[1], bytes).isOk());
  ASSERT_TRUE(resumed.step(tokens, nextToken, 1e-3, 2, false, r).isOk());
  drawMasking(3, 2, 2, 8, 1e-3, mask, p);
  EXPECT_EQ(inner.lastP, p);
  std::vector<uint8_t> bad(4, 0);
  EXPECT_FALSE(resumed.writeState(state[1], bad).isOk());

  // Validation restarts its own stream with every pass.
  ASSERT_TRUE(md.beginValidation().isOk());
  double loss = 0;
  ASSERT_TRUE(md.evalLoss(tokens, nextToken, loss).isOk());
  std::vector<float> firstVal = inner.lastP;
  ASSERT_TRUE(md.endValidation().isOk());
  ASSERT_TRUE(md.beginValidation().isOk());
  ASSERT_TRUE(md.evalLoss(tokens, nextToken, loss).isOk());
  EXPECT_EQ(inner.lastP, firstVal);
  EXPECT_EQ(md.draws(), 2u); // validation takes no training draw
}

TEST(MaskedDiffusion, DataInputsMatchTheMode) {
  Recorder withP;
  std::string name;
  EXPECT_TRUE(checkDataInputs(withP, true, name).isOk());
  EXPECT_EQ(name, "p_mask");
  Status s = checkDataInputs(withP, false, name);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("--data-mode masked-diffusion"),
            std::string::npos);
}

namespace {

/// An engine that draws its own masks (as the GPU's does): records the
/// draws it is told and the targets the step gets.
struct DeviceRecorder : Recorder {
  struct Draw {
    uint64_t seed, draw;
    double eps;
  };
  std::vector<Draw> draws;
  bool canDrawMasks() const override { return true; }
  Status drawMasksOnDevice(const std::string &pMask, uint64_t seed,
                           uint64_t draw, double eps) override {
    if (pMask != "p_mask")
      return Status::error("wrong input " + pMask);
    draws.push_back({seed, draw, eps});
    return Status::ok();
  }
};

} // namespace

// On an engine that draws on the device the wrapper draws nothing on the
// host: it names the draw (the training stream's seed and count, or the
// validation stream's), and the step gets no mask and no p_mask upload.
TEST(MaskedDiffusion, DeviceEngineIsToldTheDraw) {
  DeviceRecorder inner;
  MaskedDiffusionEngine md(inner, "p_mask", 3, 1e-3);
  std::vector<int64_t> tokens(16, 5), nextToken(16, 6);
  StepResult r;
  for (int64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(md.step(tokens, nextToken, 1e-3, i, false, r).isOk());
    EXPECT_TRUE(inner.lastTargets.empty());
  }
  EXPECT_TRUE(inner.lastP.empty()); // setFloatInput never called
  ASSERT_EQ(inner.draws.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(inner.draws[i].seed, 3u);
    EXPECT_EQ(inner.draws[i].draw, i);
    EXPECT_EQ(inner.draws[i].eps, 1e-3);
  }
  double loss = 0;
  for (int pass = 0; pass < 2; ++pass) {
    ASSERT_TRUE(md.beginValidation().isOk());
    ASSERT_TRUE(md.evalLoss(tokens, nextToken, loss).isOk());
    ASSERT_TRUE(md.endValidation().isOk());
    EXPECT_TRUE(inner.lastTargets.empty());
  }
  ASSERT_EQ(inner.draws.size(), 5u);
  // Validation's stream is its own, and restarts with each pass.
  EXPECT_NE(inner.draws[3].seed, 3u);
  EXPECT_EQ(inner.draws[3].seed, inner.draws[4].seed);
  EXPECT_EQ(inner.draws[3].draw, 0u);
  EXPECT_EQ(inner.draws[4].draw, 0u);
  EXPECT_EQ(md.draws(), 3u);
}
