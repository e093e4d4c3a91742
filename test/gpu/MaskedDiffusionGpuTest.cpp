//===- MaskedDiffusionGpuTest.cpp - Masked diffusion's draws on the GPU ---===//
//
// runtime/MaskedDiffusionDevice.h: the kernel that draws the masked-diffusion
// data mode's mask and p_mask into a plan's input buffers draws the host's
// drawMasking bit for bit (so the CPU and the GPU train on the same masks),
// at the rate the definition gives (t ~ U(eps, 1) per sequence, each token
// masked with p = (1 - eps) t + eps), the same for the same (seed, draw) and
// other for another. Skips with "no CUDA GPU: ..." without one.
//
//===----------------------------------------------------------------------===//
#include "runtime/MaskedDiffusion.h"
#include "runtime/MaskedDiffusionDevice.h"
#include "test/gpu/PlanBuilder.h"

#include <cstring>

using namespace llmc;
using namespace llmc::test;

namespace {

const char *kTouch = R"(
extern "C" __global__ void touch(float *x) {
  if (threadIdx.x == 0) x[0] += 0;
})";

/// A plan with the data mode's buffers: tokens, mask (`maskType`), p_mask.
Plan maskPlan(int64_t b, int64_t t, DType maskType) {
  PlanBuilder pb("masked-diffusion-draw");
  pb.buffer("idx", BufferRole::Input, {b, t}, DType::I64)
      .buffer("mask", BufferRole::Input, {b, t}, maskType)
      .buffer("p_mask", BufferRole::Input, {b, t}, DType::F32)
      .buffer("loss", BufferRole::Output, {1});
  uint32_t k = pb.kernel("touch", kTouch);
  pb.launch(k, 1, 32, {KernelArg::buffer("loss")});
  return pb.build();
}

struct Drawn {
  std::vector<int64_t> mask;
  std::vector<float> p;
};

Drawn readDraw(Executor &exec, DType maskType) {
  std::vector<uint8_t> m, p;
  Drawn d;
  EXPECT_TRUE(exec.readBuffer("mask", m).isOk());
  EXPECT_TRUE(exec.readBuffer("p_mask", p).isOk());
  d.p = toFloats(p);
  size_t n = d.p.size();
  d.mask.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (maskType == DType::I64) {
      std::memcpy(&d.mask[i], m.data() + 8 * i, 8);
    } else {
      int32_t v = 0;
      std::memcpy(&v, m.data() + 4 * i, 4);
      d.mask[i] = v;
    }
  }
  return d;
}

class MaskedDiffusionGpu : public GpuTest {};

// Bit for bit the host's draws, for both mask widths, several seeds and
// draw numbers, and a size that is not a multiple of the block.
TEST_F(MaskedDiffusionGpu, DrawsTheHostsMasksBitForBit) {
  const int64_t b = 7, t = 301;
  for (DType type : {DType::I64, DType::I32}) {
    std::unique_ptr<Executor> exec;
    ASSERT_TRUE(Executor::create(maskPlan(b, t, type), {}, exec).isOk());
    std::unique_ptr<DeviceMaskDrawer> drawer;
    Status s = DeviceMaskDrawer::create(*exec, "mask", "p_mask", drawer);
    ASSERT_TRUE(s.isOk()) << s.message();
    for (uint64_t seed : {0ull, 1234ull, 0xffffffffffffffffull})
      for (uint64_t draw : {0ull, 1ull, 977ull})
        for (double eps : {1e-3, 0.25}) {
          ASSERT_TRUE(drawer->draw(seed, draw, eps).isOk());
          Drawn gpu = readDraw(*exec, type);
          std::vector<int64_t> mask;
          std::vector<float> p;
          drawMasking(seed, draw, b, t, eps, mask, p);
          EXPECT_EQ(gpu.mask, mask) << seed << " " << draw << " " << eps;
          EXPECT_EQ(std::memcmp(gpu.p.data(), p.data(), p.size() * 4), 0)
              << seed << " " << draw << " " << eps;
        }
  }
}

// The rate: over many sequences, the masked fraction over p averages 1
// (E[masked / p] = tokens, what makes the loss's 1/p weight unbiased) and p
// is uniform on [(1 - eps) eps + eps, 1]. The same (seed, draw) gives the
// same masks; the next draw others.
TEST_F(MaskedDiffusionGpu, RateAndReproducibility) {
  const int64_t b = 64, t = 512;
  const double eps = 1e-3;
  std::unique_ptr<Executor> exec;
  ASSERT_TRUE(Executor::create(maskPlan(b, t, DType::I64), {}, exec).isOk());
  std::unique_ptr<DeviceMaskDrawer> drawer;
  ASSERT_TRUE(DeviceMaskDrawer::create(*exec, "mask", "p_mask", drawer).isOk());
  double maskedOverP = 0, pSum = 0;
  int64_t sequences = 0;
  for (uint64_t draw = 0; draw < 20; ++draw) {
    ASSERT_TRUE(drawer->draw(42, draw, eps).isOk());
    Drawn d = readDraw(*exec, DType::I64);
    for (int64_t s = 0; s < b; ++s) {
      int64_t count = 0;
      for (int64_t l = 0; l < t; ++l)
        count += d.mask[s * t + l];
      maskedOverP += count / (t * static_cast<double>(d.p[s * t]));
      pSum += d.p[s * t];
      ++sequences;
    }
  }
  double a = (1 - eps) * eps + eps;
  EXPECT_NEAR(pSum / sequences, (a + 1) / 2, 0.02);
  EXPECT_NEAR(maskedOverP / sequences, 1.0, 0.05);

  ASSERT_TRUE(drawer->draw(42, 3, eps).isOk());
  Drawn first = readDraw(*exec, DType::I64);
  ASSERT_TRUE(drawer->draw(42, 3, eps).isOk());
  Drawn again = readDraw(*exec, DType::I64);
  ASSERT_TRUE(drawer->draw(42, 4, eps).isOk());
  Drawn next = readDraw(*exec, DType::I64);
  EXPECT_EQ(first.mask, again.mask);
  EXPECT_EQ(first.p, again.p);
  EXPECT_NE(first.mask, next.mask);
  EXPECT_NE(first.p, next.p);
}

// A plan without the buffers the draw needs is an error that names them.
TEST_F(MaskedDiffusionGpu, MissingBuffersAreAnError) {
  std::unique_ptr<Executor> exec;
  ASSERT_TRUE(
      Executor::create(maskPlan(2, 8, DType::I64), {}, exec).isOk());
  std::unique_ptr<DeviceMaskDrawer> drawer;
  Status s = DeviceMaskDrawer::create(*exec, "mask", "nope", drawer);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("'nope'"), std::string::npos) << s.message();
  EXPECT_EQ(drawer, nullptr);
  s = DeviceMaskDrawer::create(*exec, "p_mask", "mask", drawer);
  EXPECT_FALSE(s.isOk());
}

} // namespace
