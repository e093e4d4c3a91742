//===- RowKernelsGpuTest.cpp - Row kernels at GPT-2 124M shapes -----------===//
//
// The row-reduction families of a GPT-2 124M bf16 step (B 16, T 1024: 16384
// rows of d 768), each checked against the CPU reference evaluator on a
// smaller batch of the same width and timed at full size: the best of 20
// graph replays, printed with the bytes the kernel must move and the share
// of the H100's measured 2.97 TB/s (docs/codegen.md; BENCHMARKS.md). The
// bytes are the floor: each input read once, each output written once.
//
//===----------------------------------------------------------------------===//
#include "test/gpu/codegen/GpuHarness.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace llmc::test;

namespace {

constexpr double kDeviceBytesPerSecond = 2.97e12;

void reportRowKernel(const char *what, const std::string &mlir, double bytes) {
  double ms = bestReplayMs(mlir, 20);
  ASSERT_GT(ms, 0.0) << "the timing run failed";
  double floorMs = bytes / kDeviceBytesPerSecond * 1e3;
  std::printf("[ row kernel ] %s: %.1f MB in %.4f ms = %.0f GB/s, %.0f%% of "
              "2.97 TB/s (floor %.4f ms)\n",
              what, bytes / 1e6, ms, bytes / (ms * 1e-3) / 1e9,
              100.0 * floorMs / ms, floorMs);
}

/// Replaces every "ROWS" in `pattern` with `rows`.
std::string withRows(std::string pattern, const std::string &rows) {
  for (size_t at; (at = pattern.find("ROWS")) != std::string::npos;)
    pattern.replace(at, 4, rows);
  return pattern;
}

// The forward layer norm of a bf16 block: the f32 residual stream in, f32
// weight and bias, the bf16 output the next matmul reads (the cast rides in
// the kernel's store). Moves 4 + 2 bytes per element.
const char *kLayerNorm =
    R"(func.func @forward(%x: tensor<ROWSx768xf32>, %w: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<ROWSx768xbf16> {
  %0 = llmc.layer_norm %x weight %w bias %b : (tensor<ROWSx768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<ROWSx768xf32>
  %1 = llmc.cast %0 : tensor<ROWSx768xf32> -> tensor<ROWSx768xbf16>
  return %1 : tensor<ROWSx768xbf16>
})";

// The forward layer norm with the residual add in its loads (GPT-2's step:
// the bf16 projection output widened and added to the f32 stream, the sum
// written f32 and normalized to bf16): reads 2 + 4, writes 4 + 2 bytes.
const char *kResidualLayerNorm =
    R"(func.func @forward(%mm: tensor<ROWSx768xbf16>, %res: tensor<ROWSx768xf32>, %w: tensor<768xf32>, %b: tensor<768xf32>) -> (tensor<ROWSx768xf32>, tensor<ROWSx768xbf16>) {
  %0 = llmc.cast %mm : tensor<ROWSx768xbf16> -> tensor<ROWSx768xf32>
  %1 = llmc.add %res, %0 : (tensor<ROWSx768xf32>, tensor<ROWSx768xf32>) -> tensor<ROWSx768xf32>
  %2 = llmc.layer_norm %1 weight %w bias %b : (tensor<ROWSx768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<ROWSx768xf32>
  %3 = llmc.cast %2 : tensor<ROWSx768xf32> -> tensor<ROWSx768xbf16>
  return %1, %3 : tensor<ROWSx768xf32>, tensor<ROWSx768xbf16>
})";

// Its gradient: x (f32) and the bf16 cotangent in, the bf16 dx out, f32
// weight and bias gradients. Moves 4 + 2 + 2 bytes per element.
const char *kLayerNormGrad =
    R"(func.func @forward(%x: tensor<ROWSx768xf32>, %dy: tensor<ROWSx768xbf16>, %w: tensor<768xf32>) -> (tensor<ROWSx768xbf16>, tensor<768xf32>, tensor<768xf32>) {
  %0 = llmc.cast %dy : tensor<ROWSx768xbf16> -> tensor<ROWSx768xf32>
  %1:3 = llmc.layer_norm_grad %x, %0 weight %w {bias_grad} : (tensor<ROWSx768xf32>, tensor<ROWSx768xf32>, tensor<768xf32>) -> (tensor<ROWSx768xf32>, tensor<768xf32>, tensor<768xf32>)
  %2 = llmc.cast %1#0 : tensor<ROWSx768xf32> -> tensor<ROWSx768xbf16>
  return %2, %1#1, %1#2 : tensor<ROWSx768xbf16>, tensor<768xf32>, tensor<768xf32>
})";

// A bias gradient of the MLP's first linear layer: a bf16 [B*T, 4d]
// cotangent summed over the tokens. Moves 2 bytes per element.
const char *kBiasGradSum =
    R"(func.func @forward(%g: tensor<ROWSx3072xbf16>) -> tensor<3072xbf16> {
  %0 = llmc.reduce_sum %g axes [0] : (tensor<ROWSx3072xbf16>) -> tensor<3072xbf16>
  return %0 : tensor<3072xbf16>
})";

TEST(RowKernelsGpu, LayerNormMatchesReference) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(withRows(kLayerNorm, "515"));
}

TEST(RowKernelsGpu, LayerNormGradMatchesReference) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(withRows(kLayerNormGrad, "515"));
}

TEST(RowKernelsGpu, ResidualLayerNormMatchesReference) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(withRows(kResidualLayerNorm, "515"));
  setenv("LLMC_LAYER_NORM_KERNEL", "persistent", 1);
  checkAgainstReference(withRows(kLayerNorm, "5000"));
  checkAgainstReference(withRows(kResidualLayerNorm, "5000"));
  unsetenv("LLMC_LAYER_NORM_KERNEL");
}

TEST(RowKernelsGpu, BiasGradSumMatchesReference) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(withRows(kBiasGradSum, "515"));
}

TEST(RowKernelsGpu, CompileWithNvrtc) {
  setenv("LLMC_LAYER_NORM_KERNEL", "persistent", 1);
  checkCompiles(withRows(kLayerNorm, "515"));
  checkCompiles(withRows(kResidualLayerNorm, "515"));
  unsetenv("LLMC_LAYER_NORM_KERNEL");
  checkCompiles(withRows(kLayerNorm, "515"));
  checkCompiles(withRows(kResidualLayerNorm, "515"));
  checkCompiles(withRows(kLayerNormGrad, "515"));
  checkCompiles(withRows(kBiasGradSum, "515"));
}

TEST(RowKernelsGpuBandwidth, LayerNorm) {
  LLMC_REQUIRE_GPU();
  reportRowKernel("layer_norm f32 -> bf16 [16384, 768]",
                  withRows(kLayerNorm, "16384"), 16384.0 * 768 * (4 + 2));
}

TEST(RowKernelsGpuBandwidth, LayerNormGrad) {
  LLMC_REQUIRE_GPU();
  reportRowKernel("layer_norm_grad x f32, dy bf16 -> dx bf16 [16384, 768]",
                  withRows(kLayerNormGrad, "16384"),
                  16384.0 * 768 * (4 + 2 + 2));
}

// LLMC_LAYER_NORM_KERNEL=persistent (NormEmitters.cpp): at most 528 blocks
// striding over the rows with an L2 prefetch of each warp's next row, the
// same arithmetic. Bitwise equal to the default at 1000 rows (fewer than
// the persistent grid's warps) and GPT-2's 16384, and timed against it as
// a share of the measured copy bandwidth.
TEST(RowKernelsGpuBandwidth, LayerNormPersistent) {
  LLMC_REQUIRE_GPU();
  double copy = measuredCopyGBs();
  ASSERT_GT(copy, 0.0) << "the copy bandwidth was not measured";
  struct Graph {
    const char *what, *mlir;
    double bytes; // per element
  } graphs[] = {{"layer_norm f32 -> bf16", kLayerNorm, 6},
                {"cast+add+layer_norm+cast", kResidualLayerNorm, 12}};
  for (const Graph &g : graphs) {
    for (const char *rows : {"1000", "16384"})
      checkEnvVariantsBitwiseEqual(withRows(g.mlir, rows),
                                   "LLMC_LAYER_NORM_KERNEL", nullptr,
                                   "persistent");
    std::string mlir = withRows(g.mlir, "16384");
    double bytes = 16384.0 * 768 * g.bytes;
    for (const char *v : {"default", "persistent"}) {
      if (std::string(v) == "default")
        unsetenv("LLMC_LAYER_NORM_KERNEL");
      else
        setenv("LLMC_LAYER_NORM_KERNEL", v, 1);
      double ms = bestReplayMs(mlir, 20);
      unsetenv("LLMC_LAYER_NORM_KERNEL");
      ASSERT_GT(ms, 0.0) << "the timing run failed";
      double gbs = bytes / (ms * 1e-3) / 1e9;
      std::printf("[ row kernel ] %s [16384, 768] %s: %.1f MB in %.4f ms = "
                  "%.0f GB/s, %.1f%% of the measured copy (%.0f GB/s)\n",
                  g.what, v, bytes / 1e6, ms, gbs, 100.0 * gbs / copy, copy);
    }
  }
}

// One launch (ReduceEmitters.cpp: partial sums, then the last block of each
// column group adds them); the floor counts the tensor only, the partials
// (4 bytes x columns x rows / 128, through L2) add 1.6%.
TEST(RowKernelsGpuBandwidth, BiasGradSum) {
  LLMC_REQUIRE_GPU();
  reportRowKernel("reduce_sum bf16 [16384, 3072] -> [3072]",
                  withRows(kBiasGradSum, "16384"), 16384.0 * 3072 * 2);
  for (const char *cols : {"768", "2304"}) {
    std::string mlir = withRows(kBiasGradSum, "16384");
    for (size_t at; (at = mlir.find("3072")) != std::string::npos;)
      mlir.replace(at, 4, cols);
    std::string what = std::string("reduce_sum bf16 [16384, ") + cols +
                       "] -> [" + cols + "]";
    reportRowKernel(what.c_str(), mlir, 16384.0 * std::stod(cols) * 2);
  }
}

} // namespace
