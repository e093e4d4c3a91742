//===- DropoutGpuTest.cpp - llmc.dropout_mask on the GPU vs the evaluator -===//
//
// The device Philox (compiler/codegen/DropoutEmitter.cpp) must draw the mask
// the evaluator draws (compiler/common/Philox.h) bit for bit: the i1 keep
// flags are compared exactly, the f32/bf16 masks to f32 rounding. The step
// is random per run (LLMC_TEST_SEED repeats one), past 2^32 included, so the
// counter's high word is exercised.
//
//===----------------------------------------------------------------------===//
#include "GpuHarness.h"

#include <gtest/gtest.h>

using namespace llmc::test;

namespace {

constexpr const char *kDropoutIR = R"(
func.func @forward(%step: tensor<i64> {gpu_test.range = array<i64: 0, 8589934592>},
                   %x: tensor<33x1000xf32>)
    -> (tensor<33x1000xi1>, tensor<33x1000xf32>, tensor<33x1000xbf16>, tensor<33x1000xi1>) {
  %m = llmc.dropout_mask %step {ratio = 0.1 : f64, seed = 1234567890123 : i64, offset = 5 : i64} : (tensor<i64>) -> tensor<33x1000xf32>
  %zero = llmc.constant dense<0.0> : tensor<f32>
  %keep = llmc.compare ne, %m, %zero : (tensor<33x1000xf32>, tensor<f32>) -> tensor<33x1000xi1>
  %y = llmc.mul %x, %m : (tensor<33x1000xf32>, tensor<33x1000xf32>) -> tensor<33x1000xf32>
  %h = llmc.dropout_mask %step {ratio = 0.5 : f64, seed = 0 : i64, offset = 6 : i64} : (tensor<i64>) -> tensor<33x1000xbf16>
  %hz = llmc.constant dense<0.0> : tensor<bf16>
  %hkeep = llmc.compare ne, %h, %hz : (tensor<33x1000xbf16>, tensor<bf16>) -> tensor<33x1000xi1>
  return %keep, %y, %h, %hkeep : tensor<33x1000xi1>, tensor<33x1000xf32>, tensor<33x1000xbf16>, tensor<33x1000xi1>
}
)";

TEST(CodegenGpuDropout, MaskMatchesTheReferenceBitForBit) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(kDropoutIR);
}

TEST(CodegenGpuDropout, CompilesWithNvrtc) { checkCompiles(kDropoutIR); }

} // namespace
