//===- LargeIndexGpuTest.cpp - Kernels on tensors past 2^31 elements ------===//
//
// GPT-2's logits at batch 48, T 1024 are [49152, 50304]: 2.47e9 elements,
// past what a 32-bit offset reaches (row 42690 on). The kernels that touch
// them must index with 64-bit offsets (KernelSource::indexRange; the codegen
// side is test/lit/codegen/index-width.mlir). This runs the loss, its
// gradient and a row reduction on such logits and checks rows on both sides
// of the 2^31 boundary, and the last row, against float64 computed here:
// the reference evaluator would need ~60 GB of host memory for the whole
// tensor, and a few checked rows are what a wrapped offset gets wrong.
//
// Needs about 25 GB of GPU memory and 20 GB of host memory; skips without a
// GPU. Run: build/test/gpu/codegen/llmc-codegen-gpu-tests
//   --gtest_filter='LargeIndex*'
//
//===----------------------------------------------------------------------===//
#include "test/gpu/codegen/GpuHarness.h"

#include "compiler/Pipeline.h"
#include "compiler/codegen/FunctionLowering.h"
#include "compiler/codegen/PlanBuilder.h"
#include "dialects/llmc/LlmcDialect.h"
#include "runtime/Executor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

using namespace mlir;

namespace llmc::test {
namespace {

constexpr int64_t kRows = 48 * 1024, kCols = 50304;

/// Deterministic logits in [-1, 1), different in every row, so that a row
/// read at a wrapped offset gives a different loss.
float logitAt(int64_t r, int64_t c) {
  return static_cast<float>((r * 7 + c * 13) % 101) / 50.0f - 1.0f;
}
int64_t targetOf(int64_t r) { return (r * 31) % kCols; }

const char *kModel = R"mlir(
func.func @forward(%logits: tensor<49152x50304xf32>, %t: tensor<49152xi64>,
                   %g: tensor<f32>)
    -> (tensor<49152xf32>, tensor<49152x50304xf32>, tensor<49152xf32>) {
  %0 = llmc.cross_entropy none %logits, %t : (tensor<49152x50304xf32>, tensor<49152xi64>) -> tensor<49152xf32>
  %1 = llmc.cross_entropy_grad sum %logits, %t, %g : (tensor<49152x50304xf32>, tensor<49152xi64>, tensor<f32>) -> tensor<49152x50304xf32>
  %2 = llmc.reduce_max %logits axes [1] : (tensor<49152x50304xf32>) -> tensor<49152xf32>
  return %0, %1, %2 : tensor<49152xf32>, tensor<49152x50304xf32>, tensor<49152xf32>
}
)mlir";

TEST(LargeIndex, LossGradientAndRowMaxPast2To31Elements) {
  LLMC_REQUIRE_GPU();
  ASSERT_GT(kRows * kCols, int64_t(1) << 31);
  MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
  auto module = parseSourceString<ModuleOp>(kModel, &context);
  ASSERT_TRUE(module) << "the test model does not parse";
  auto func = module->lookupSymbol<func::FuncOp>("forward");
  ASSERT_TRUE(succeeded(runKernelPipeline(*module))) << "kernel formation failed";
  codegen::CodegenOptions options;
  auto lowered = codegen::lowerFunction(func, options);
  ASSERT_TRUE(succeeded(lowered)) << "code generation failed";
  auto plan = codegen::buildUnplannedPlan(func, *lowered);
  ASSERT_TRUE(succeeded(plan)) << "plan building failed";

  std::unique_ptr<Executor> exec;
  ExecutorOptions eo;
  eo.source = "LargeIndex";
  eo.syncEachStep = true;
  Status s = Executor::create(plan->plan, eo, exec);
  ASSERT_TRUE(s) << s.message();
  {
    std::vector<float> logits(static_cast<size_t>(kRows * kCols));
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t c = 0; c < kCols; ++c)
        logits[r * kCols + c] = logitAt(r, c);
    s = exec->writeBuffer(plan->argumentBuffers[0], logits.data(),
                          logits.size() * sizeof(float));
    ASSERT_TRUE(s) << s.message();
  }
  std::vector<int64_t> targets(kRows);
  for (int64_t r = 0; r < kRows; ++r)
    targets[r] = targetOf(r);
  s = exec->writeBuffer(plan->argumentBuffers[1], targets.data(),
                        targets.size() * sizeof(int64_t));
  ASSERT_TRUE(s) << s.message();
  float one = 1.0f;
  s = exec->writeBuffer(plan->argumentBuffers[2], &one, sizeof one);
  ASSERT_TRUE(s) << s.message();
  s = exec->runPlain();
  ASSERT_TRUE(s) << s.message();

  std::vector<uint8_t> loss, dlogits, rowMax;
  ASSERT_TRUE(exec->readBuffer(plan->resultBuffers[0], loss));
  ASSERT_TRUE(exec->readBuffer(plan->resultBuffers[2], rowMax));
  ASSERT_TRUE(exec->readBuffer(plan->resultBuffers[1], dlogits));
  ASSERT_EQ(dlogits.size(), static_cast<size_t>(kRows * kCols) * 4);
  auto f32At = [](const std::vector<uint8_t> &bytes, int64_t i) {
    float v;
    std::memcpy(&v, bytes.data() + i * 4, 4);
    return v;
  };

  // Rows below, at and above the first whose offset passes 2^31, and last.
  const int64_t boundary = ((int64_t(1) << 31) + kCols - 1) / kCols;
  for (int64_t r : {int64_t(0), boundary - 1, boundary, boundary + 1,
                    int64_t(45000), kRows - 1}) {
    double mx = -INFINITY;
    for (int64_t c = 0; c < kCols; ++c)
      mx = std::max(mx, double(logitAt(r, c)));
    double sum = 0;
    for (int64_t c = 0; c < kCols; ++c)
      sum += std::exp(double(logitAt(r, c)) - mx);
    double lse = mx + std::log(sum);
    double expected = lse - logitAt(r, targetOf(r));
    EXPECT_NEAR(f32At(loss, r), expected, 1e-5 * std::fabs(expected))
        << "loss of row " << r;
    EXPECT_EQ(f32At(rowMax, r), static_cast<float>(mx)) << "max of row " << r;
    for (int64_t c : {int64_t(0), targetOf(r), kCols - 1}) {
      double p = std::exp(double(logitAt(r, c)) - lse);
      double d = p - (c == targetOf(r) ? 1.0 : 0.0);
      EXPECT_NEAR(f32At(dlogits, r * kCols + c), d, 1e-6 + 1e-5 * std::fabs(d))
          << "dlogits[" << r << ", " << c << "]";
    }
  }
}

} // namespace
} // namespace llmc::test
