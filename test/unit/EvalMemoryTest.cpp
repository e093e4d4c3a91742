//===- EvalMemoryTest.cpp - Host memory of the reference evaluator --------===//
//
// The evaluator refuses a tensor that would pass its memory limit before it
// allocates it, and frees values after their last use, so that a chain of
// large intermediates needs only the live ones at a time.
//
//===----------------------------------------------------------------------===//
#include "compiler/eval/EvalMemory.h"
#include "runtime/CheckedSize.h"
#include "test/unit/EvalTestUtils.h"

#include <cstdlib>

namespace llmc::test {
namespace {

/// Sets LLMC_EVAL_MEMORY_LIMIT for one test and restores the default.
class EvalMemory : public EvalTest {
protected:
  void limit(int64_t bytes) {
    setenv("LLMC_EVAL_MEMORY_LIMIT", std::to_string(bytes).c_str(), 1);
  }
  void TearDown() override { unsetenv("LLMC_EVAL_MEMORY_LIMIT"); }
};

// x -> neg -> neg -> neg -> neg: each value is 8 KiB as float64 (1024
// elements), and at most two are live at once (an op's operand and its
// result), plus the argument the caller passes.
const char *kChain = R"mlir(
func.func @f(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %0 = llmc.neg %x : tensor<1024xf32>
  %1 = llmc.neg %0 : tensor<1024xf32>
  %2 = llmc.neg %1 : tensor<1024xf32>
  %3 = llmc.neg %2 : tensor<1024xf32>
  return %3 : tensor<1024xf32>
}
)mlir";

TEST_F(EvalMemory, DefaultLimitIsPhysicalMemory) {
  unsetenv("LLMC_EVAL_MEMORY_LIMIT");
  EXPECT_EQ(hostMemoryLimit(), physicalMemoryBytes());
  limit(12345);
  EXPECT_EQ(hostMemoryLimit(), 12345);
  setenv("LLMC_EVAL_MEMORY_LIMIT", "1e9", 1); // not an integer: ignored
  EXPECT_EQ(hostMemoryLimit(), physicalMemoryBytes());
}

TEST_F(EvalMemory, AllocationErrorNamesShapeAndSizes) {
  limit(1 << 20);
  EXPECT_EQ(evalAllocationError({1024, 128}), "");
  EXPECT_EQ(evalAllocationError({1024, 128}, 1),
            "has shape [1024, 128] (131072 elements, 1.0 MiB as float64 on "
            "the host), more than the 1.0 MiB of host memory llmc may use "
            "(1 bytes already held); use a smaller batch or model");
  EXPECT_EQ(evalAllocationError({int64_t(1) << 32, int64_t(1) << 32}),
            "has shape [4294967296, 4294967296] (about 1.8e+19 elements, "
            "128 EiB as float64 on the host), more than the 1.0 MiB of "
            "host memory llmc may use; use a smaller batch or model");
}

TEST_F(EvalMemory, DeadValuesAreFreed) {
  std::vector<double> ones(1024, 1.0);
  // Argument + operand + result: 3 x 8 KiB. Without freeing, the fourth
  // neg would hold 5 values.
  limit(3 * 8192);
  RefTensor r = run1(kChain, {f32({1024}, ones)});
  ASSERT_EQ(r.floats.size(), 1024u) << diagnostics;
  EXPECT_EQ(r.floats[7], 1.0);
}

TEST_F(EvalMemory, RefusesBeforeAllocating) {
  std::vector<double> ones(1024, 1.0);
  limit(2 * 8192 - 1);
  EXPECT_TRUE(run(kChain, {f32({1024}, ones)}).empty());
  EXPECT_NE(diagnostics.find("reference evaluator: result #0 of 'llmc.neg' "
                             "has shape [1024] (1024 elements, 8.0 KiB as "
                             "float64 on the host), more than the 16.0 KiB of "
                             "host memory llmc may use (8.0 KiB already held)"),
            std::string::npos)
      << diagnostics;
  limit(8191);
  EXPECT_TRUE(run(kChain, {f32({1024}, ones)}).empty());
  EXPECT_NE(diagnostics.find("reference evaluator: argument #0 has shape "
                             "[1024]"),
            std::string::npos)
      << diagnostics;
}

} // namespace
} // namespace llmc::test
