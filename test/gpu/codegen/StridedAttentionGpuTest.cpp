//===- StridedAttentionGpuTest.cpp - seq_major attention vs transposes ----===//
//
// llmc-fold-attention-transposes (docs/fusion.md) makes attention read q, k,
// v and the output cotangent as [B, T, H, D] and write its output and dq,
// dk, dv that way, instead of four transposes forward and four backward.
// Pure data movement: every kernel family (bf16 mma, 3xTF32 mma, SIMT),
// MHA and GQA, must give results bitwise equal to the transpose path, and
// match the CPU reference. llmc-fold-qkv-slices then makes the GPT blocks
// read q, k, v as head windows of the packed qkv and write one packed
// gradient (no split, no concat): bitwise equal to the split/concat path
// again, every family. The timing tests run GPT-2 124M's attention block
// (B 16, T 1024, 12 heads of 64, bf16) each way and print the per-launch
// times. Without a GPU only the NVRTC checks run.
//
//===----------------------------------------------------------------------===//
#include "test/gpu/codegen/GpuHarness.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

using namespace llmc::test;

namespace {

std::string dims(std::initializer_list<int64_t> shape, const std::string &t) {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + t + ">";
}

/// A GPT-2 attention block, forward and backward, as the bf16 step has it:
/// qkv [B, T, 3C] split, viewed [B, T, H, D], transposed to [B, H, T, D];
/// the output transposed and viewed back to [B, T, C]; the cotangent dy the
/// same way in, dq, dk, dv transposed back and concatenated to [B, T, 3C].
std::string gptBlock(int64_t B, int64_t T, int64_t H, int64_t D,
                     const std::string &t) {
  int64_t C = H * D;
  std::string btc = dims({B, T, C}, t), bt3c = dims({B, T, 3 * C}, t),
              bthd = dims({B, T, H, D}, t), bhtd = dims({B, H, T, D}, t),
              lse = dims({B, H, T}, "f32");
  std::string c = std::to_string(C);
  std::string s = "func.func @forward(%qkv: " + bt3c + ", %dy: " + btc +
                  ") -> (" + btc + ", " + bt3c + ") {\n";
  s += "  %q, %k, %v = llmc.split %qkv axis 2 sizes [" + c + ", " + c + ", " +
       c + "] : (" + bt3c + ") -> (" + btc + ", " + btc + ", " + btc + ")\n";
  for (const char *x : {"q", "k", "v", "dy"}) {
    std::string n = x;
    s += "  %" + n + "4 = llmc.reshape %" + n + " : " + btc + " -> " + bthd +
         "\n";
    s += "  %" + n + "t = llmc.transpose %" + n + "4 [0, 2, 1, 3] : (" + bthd +
         ") -> " + bhtd + "\n";
  }
  s += "  %o, %lse = llmc.attention_lse %qt, %kt, %vt {causal} : (" + bhtd +
       ", " + bhtd + ", " + bhtd + ") -> (" + bhtd + ", " + lse + ")\n";
  s += "  %ot = llmc.transpose %o [0, 2, 1, 3] : (" + bhtd + ") -> " + bthd +
       "\n";
  s += "  %y = llmc.reshape %ot : " + bthd + " -> " + btc + "\n";
  s += "  %dq, %dk, %dv = llmc.attention_grad %qt, %kt, %vt, %o, %lse, %dyt "
       "{causal} : (" +
       bhtd + ", " + bhtd + ", " + bhtd + ", " + bhtd + ", " + lse + ", " +
       bhtd + ") -> (" + bhtd + ", " + bhtd + ", " + bhtd + ")\n";
  for (const char *x : {"dq", "dk", "dv"}) {
    std::string n = x;
    s += "  %" + n + "t = llmc.transpose %" + n + " [0, 2, 1, 3] : (" + bhtd +
         ") -> " + bthd + "\n";
    s += "  %" + n + "r = llmc.reshape %" + n + "t : " + bthd + " -> " + btc +
         "\n";
  }
  s += "  %dqkv = llmc.concat %dqr, %dkr, %dvr axis 2 : (" + btc + ", " + btc +
       ", " + btc + ") -> " + bt3c + "\n";
  s += "  return %y, %dqkv : " + btc + ", " + bt3c + "\n}\n";
  return s;
}

/// Grouped-query attention from separate projections (Llama without RoPE):
/// q [B, T, H, D], k and v [B, T, Hkv, D], forward and backward.
std::string gqaBlock(int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                     const std::string &t) {
  std::string q = dims({B, T, H, D}, t), kv = dims({B, T, Hkv, D}, t),
              qt = dims({B, H, T, D}, t), kvt = dims({B, Hkv, T, D}, t),
              lse = dims({B, H, T}, "f32");
  std::string s = "func.func @forward(%q: " + q + ", %k: " + kv + ", %v: " +
                  kv + ", %dy: " + q + ") -> (" + q + ", " + q + ", " + kv +
                  ", " + kv + ") {\n";
  s += "  %qt = llmc.transpose %q [0, 2, 1, 3] : (" + q + ") -> " + qt + "\n";
  s += "  %kt = llmc.transpose %k [0, 2, 1, 3] : (" + kv + ") -> " + kvt + "\n";
  s += "  %vt = llmc.transpose %v [0, 2, 1, 3] : (" + kv + ") -> " + kvt + "\n";
  s += "  %dyt = llmc.transpose %dy [0, 2, 1, 3] : (" + q + ") -> " + qt + "\n";
  s += "  %o, %lse = llmc.attention_lse %qt, %kt, %vt {causal} : (" + qt +
       ", " + kvt + ", " + kvt + ") -> (" + qt + ", " + lse + ")\n";
  s += "  %y = llmc.transpose %o [0, 2, 1, 3] : (" + qt + ") -> " + q + "\n";
  s += "  %dq, %dk, %dv = llmc.attention_grad %qt, %kt, %vt, %o, %lse, %dyt "
       "{causal} : (" +
       qt + ", " + kvt + ", " + kvt + ", " + qt + ", " + lse + ", " + qt +
       ") -> (" + qt + ", " + kvt + ", " + kvt + ")\n";
  s += "  %a = llmc.transpose %dq [0, 2, 1, 3] : (" + qt + ") -> " + q + "\n";
  s += "  %b = llmc.transpose %dk [0, 2, 1, 3] : (" + kvt + ") -> " + kv + "\n";
  s += "  %c = llmc.transpose %dv [0, 2, 1, 3] : (" + kvt + ") -> " + kv + "\n";
  s += "  return %y, %a, %b, %c : " + q + ", " + q + ", " + kv + ", " + kv +
       "\n}\n";
  return s;
}

struct StridedCase {
  const char *name;
  std::string mlir;
};
void PrintTo(const StridedCase &c, std::ostream *os) { *os << c.name; }

std::vector<StridedCase> cases() {
  return {
      // bf16 mma.sync kernels (head dims multiples of 16), T not a tile
      // multiple.
      {"GptBf16", gptBlock(2, 200, 4, 64, "bf16")},
      {"GqaBf16", gqaBlock(2, 136, 8, 2, 32, "bf16")},
      // The same kernels on f16 mma tiles (the fp16 policy).
      {"GptF16", gptBlock(2, 200, 4, 64, "f16")},
      {"GqaF16", gqaBlock(2, 136, 8, 2, 32, "f16")},
      // 3xTF32 kernels (f32, head dims multiples of 8) and bf16 inputs with
      // a head dim of 24 (not bf16-eligible: the 3xTF32 scheme).
      {"GptF32", gptBlock(2, 130, 4, 64, "f32")},
      {"GqaBf16Dim24", gqaBlock(1, 70, 6, 3, 24, "bf16")},
      // SIMT kernels: a head dim that is not a multiple of 8.
      {"GptF32Dim20", gptBlock(2, 70, 3, 20, "f32")},
      {"GqaF32Dim12", gqaBlock(1, 50, 4, 1, 12, "f32")},
  };
}

llmc::FusionConfig withoutStrided() {
  llmc::FusionConfig c;
  c.strided = false;
  return c;
}

llmc::FusionConfig withoutQkvSlices() {
  llmc::FusionConfig c;
  c.qkvSlices = false;
  return c;
}

class StridedAttentionGpu : public ::testing::TestWithParam<StridedCase> {};

TEST_P(StridedAttentionGpu, BitwiseEqualToTransposes) {
  LLMC_REQUIRE_GPU();
  checkFusionConfigsMatch(GetParam().mlir, "forward", llmc::FusionConfig(),
                          withoutStrided());
}

TEST_P(StridedAttentionGpu, MatchesReference) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(GetParam().mlir);
}

TEST_P(StridedAttentionGpu, CompilesWithNvrtc) {
  checkCompiles(GetParam().mlir);
}

INSTANTIATE_TEST_SUITE_P(Kernels, StridedAttentionGpu,
                         ::testing::ValuesIn(cases()),
                         [](const auto &info) {
                           return std::string(info.param.name);
                         });

/// The GPT blocks (one packed projection), one per kernel family: bf16/f16 mma,
/// 3xTF32 mma, SIMT (head dim 20: no vector loads); odd T.
std::vector<StridedCase> packedCases() {
  return {
      {"GptBf16", gptBlock(2, 200, 4, 64, "bf16")},
      {"GptBf16Dim32", gptBlock(1, 77, 6, 32, "bf16")},
      {"GptF16", gptBlock(2, 200, 4, 64, "f16")},
      {"GptF32", gptBlock(2, 130, 4, 64, "f32")},
      {"GptBf16Dim24", gptBlock(1, 70, 3, 24, "bf16")},
      {"GptF32Dim20", gptBlock(2, 70, 3, 20, "f32")},
  };
}

class PackedQkvGpu : public ::testing::TestWithParam<StridedCase> {};

// Two launches fewer (the split and the concat), the same bits.
TEST_P(PackedQkvGpu, BitwiseEqualToSplitConcat) {
  LLMC_REQUIRE_GPU();
  checkFusionConfigsMatch(GetParam().mlir, "forward", llmc::FusionConfig(),
                          withoutQkvSlices());
}

TEST_P(PackedQkvGpu, MatchesReference) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(GetParam().mlir);
}

TEST_P(PackedQkvGpu, CompilesWithNvrtc) { checkCompiles(GetParam().mlir); }

INSTANTIATE_TEST_SUITE_P(Kernels, PackedQkvGpu,
                         ::testing::ValuesIn(packedCases()),
                         [](const auto &info) {
                           return std::string(info.param.name);
                         });

void printSteps(const char *what,
                const std::vector<std::pair<std::string, double>> &steps) {
  double total = 0;
  for (const auto &[label, ms] : steps) {
    std::printf("[ strided ] %s: %-40s %.4f ms\n", what, label.c_str(), ms);
    total += ms;
  }
  std::printf("[ strided ] %s: %zu launches, %.4f ms\n", what, steps.size(),
              total);
}

// GPT-2 124M's attention block, one layer (x 12 per step): the transpose
// path launches 8 transposes besides the split, the concat and the three
// attention kernels. Prints the whole block's best replay both ways and
// each launch's time.
TEST(StridedAttentionGpuTiming, Gpt2Block) {
  LLMC_REQUIRE_GPU();
  std::string mlir = gptBlock(16, 1024, 12, 64, "bf16");
  checkFusionConfigsMatch(mlir, "forward", llmc::FusionConfig(),
                          withoutStrided());
  double strided = bestReplayMs(mlir, 20);
  double transposed = bestReplayMs(mlir, 20, withoutStrided());
  ASSERT_GT(strided, 0.0);
  ASSERT_GT(transposed, 0.0);
  std::printf("[ strided ] GPT-2 attention block [16, 1024, 12, 64] bf16: "
              "strided %.4f ms, transposes %.4f ms (x 12 layers: %.2f ms "
              "saved per step)\n",
              strided, transposed, 12 * (transposed - strided));
  printSteps("strided", stepReplayMs(mlir, 10));
  printSteps("transposes", stepReplayMs(mlir, 10, withoutStrided()));
}

// The same block with and without the packed qkv (both seq_major): the
// split and the concat each move 2 x 16 x 1024 x 2304 x 2 bytes (151 MB,
// ~51 us at 2.95 TB/s); the attention kernels now read q, k, v rows 4608
// bytes apart instead of 1536, still 128 contiguous bytes per head row.
TEST(StridedAttentionGpuTiming, Gpt2BlockPackedQkv) {
  LLMC_REQUIRE_GPU();
  std::string mlir = gptBlock(16, 1024, 12, 64, "bf16");
  checkFusionConfigsMatch(mlir, "forward", llmc::FusionConfig(),
                          withoutQkvSlices());
  double packed = bestReplayMs(mlir, 20);
  double split = bestReplayMs(mlir, 20, withoutQkvSlices());
  ASSERT_GT(packed, 0.0);
  ASSERT_GT(split, 0.0);
  std::printf("[ strided ] GPT-2 attention block [16, 1024, 12, 64] bf16: "
              "packed qkv %.4f ms, split/concat %.4f ms (x 12 layers: %.2f "
              "ms saved per step)\n",
              packed, split, 12 * (split - packed));
  printSteps("packed", stepReplayMs(mlir, 10));
  printSteps("split/concat", stepReplayMs(mlir, 10, withoutQkvSlices()));
}

} // namespace
