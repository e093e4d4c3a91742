//===- FusionEvalTest.cpp - Grouped and fused IR evaluate as the step ----===//
//
// The reference evaluator runs a kernel group as its ops (docs/kernel-ir.md),
// so a fusion rewrite that is exact leaves every result of gpt2-tiny's bf16
// training step bitwise unchanged on the CPU: with every fusion, with none
// (one op per group) and ungrouped. A rewrite that moves a rounding (a cast
// across a reshape, a narrowing cast joined to a result that others read
// un-rounded, a bf16 linear layer's bias add split from its matmul) changes
// a result here without a GPU.
//
//===----------------------------------------------------------------------===//
#include "compiler/Pipeline.h"
#include "compiler/eval/Evaluator.h"
#include "compiler/eval/RefTensor.h"
#include "dialects/llmc/LlmcDialect.h"
#include "dialects/llmc/LlmcOps.h"
#include "test/unit/TrainStepFixture.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

namespace llmc::test {
namespace {

using namespace mlir;


std::vector<RefTensor> evaluateStep(ModuleOp module,
                                    const std::vector<RefTensor> &args) {
  auto func = module.lookupSymbol<func::FuncOp>("train_step");
  auto results = evaluate(func, args);
  if (failed(results))
    return {};
  return *results;
}

/// Indices of the results that differ in any bit (value or NaN-ness).
std::vector<size_t> differing(const std::vector<RefTensor> &a,
                              const std::vector<RefTensor> &b) {
  std::vector<size_t> out;
  for (size_t i = 0; i < a.size(); ++i) {
    bool same = a[i].shape == b[i].shape && a[i].ints == b[i].ints &&
                a[i].floats.size() == b[i].floats.size();
    for (size_t e = 0; same && e < a[i].floats.size(); ++e) {
      double x = a[i].floats[e], y = b[i].floats[e];
      same = (x == y && std::signbit(x) == std::signbit(y)) ||
             (std::isnan(x) && std::isnan(y));
    }
    if (!same)
      out.push_back(i);
  }
  return out;
}

/// Every default fusion but the GELU and DGELU epilogues, the ones that
/// move a rounding (FusionEvalGelu below).
FusionConfig exactFusions() {
  FusionConfig c;
  c.geluEpilogue = c.geluGradEpilogue = false;
  return c;
}

struct FusionCase {
  const char *name;
  FusionConfig config;
};
void PrintTo(const FusionCase &c, std::ostream *os) { *os << c.name; }

class FusionEval : public ::testing::TestWithParam<FusionCase> {};

TEST_P(FusionEval, Gpt2TinyBf16StepUnchangedByGrouping) {
  MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return success();
  });
  OwningOpRef<ModuleOp> plain = gpt2TinyStep(context, "bf16");
  ASSERT_TRUE(plain) << diagnostics;
  OwningOpRef<ModuleOp> grouped = plain->clone();
  ASSERT_TRUE(succeeded(runKernelPipeline(*grouped, GetParam().config)))
      << diagnostics;

  auto args = stepArguments(plain->lookupSymbol<func::FuncOp>("train_step"), 7);
  std::vector<RefTensor> want = evaluateStep(*plain, args);
  std::vector<RefTensor> got = evaluateStep(*grouped, args);
  ASSERT_FALSE(want.empty()) << diagnostics;
  ASSERT_EQ(got.size(), want.size()) << diagnostics;
  auto func = plain->lookupSymbol<func::FuncOp>("train_step");
  std::string names;
  for (size_t i : differing(got, want)) {
    auto n = func.getResultAttrOfType<StringAttr>(i, "llmc.output");
    auto s = func.getResultAttrOfType<StringAttr>(i, "llmc.next");
    names += " #" + std::to_string(i) + " " +
             (n   ? n.getValue().str()
              : s ? s.getValue().str()
                  : "");
  }
  EXPECT_TRUE(names.empty()) << "results changed by grouping:" << names;
}

/// Groups of `module` whose `llmc.epilogue` is `name`.
int epilogueGroups(ModuleOp module, StringRef name) {
  int n = 0;
  module->walk([&](Operation *g) {
    auto e = g->getAttrOfType<StringAttr>("llmc.epilogue");
    n += e && e.getValue() == name;
  });
  return n;
}

/// gpt2-tiny's bf16 step under `fusion` evaluates bitwise as the ungrouped
/// step plus only addRoundingFusions(fusion), which forms `geluGroups`
/// gelu and `geluGradGroups` gelu_grad groups; and differs from `other`'s.
void checkRoundingFusions(const FusionConfig &fusion, int geluGroups,
                          int geluGradGroups, const FusionConfig &other) {
  MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return success();
  });
  OwningOpRef<ModuleOp> plain = gpt2TinyStep(context, "bf16");
  ASSERT_TRUE(plain) << diagnostics;
  OwningOpRef<ModuleOp> fused = plain->clone();
  ASSERT_TRUE(succeeded(runKernelPipeline(*fused, fusion))) << diagnostics;
  PrecisionConfig bf16;
  bf16.precision = "bf16";
  auto rounding = [&](const FusionConfig &config) {
    OwningOpRef<ModuleOp> m = plain->clone();
    PassManager pm(&context);
    addRoundingFusions(pm, bf16, config);
    EXPECT_TRUE(succeeded(pm.run(*m))) << diagnostics;
    return m;
  };
  OwningOpRef<ModuleOp> rounded = rounding(fusion);
  OwningOpRef<ModuleOp> otherRounded = rounding(other);
  EXPECT_EQ(epilogueGroups(*rounded, "gelu"), geluGroups);
  EXPECT_EQ(epilogueGroups(*rounded, "gelu_grad"), geluGradGroups);

  auto args = stepArguments(plain->lookupSymbol<func::FuncOp>("train_step"), 7);
  std::vector<RefTensor> want = evaluateStep(*rounded, args);
  std::vector<RefTensor> got = evaluateStep(*fused, args);
  std::vector<RefTensor> unlike = evaluateStep(*otherRounded, args);
  ASSERT_FALSE(want.empty()) << diagnostics;
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(unlike.size(), want.size());
  EXPECT_TRUE(differing(got, want).empty());
  EXPECT_FALSE(differing(unlike, want).empty());
}

// The GELU and DGELU epilogues are the default fusions that are not exact:
// their gelu and gelu_grad read the unrounded product (docs/precision.md).
// The whole default kernel pipeline then evaluates as the ungrouped step
// plus only those groups (addRoundingFusions, what the CPU trainer of
// `llmc verify` adds), bitwise; and that step differs from the step
// without them.
TEST(FusionEvalGelu, Gpt2TinyBf16StepIsTheRoundingFusions) {
  checkRoundingFusions(FusionConfig(), 1, 1, FusionConfig::exact());
}

// DGELU (FusionConfig::geluGradEpilogue, on by default) moves a rounding of
// its own: the default step differs from the step with the GELU group
// alone, which is the rounding fusions without the gelu_grad group.
TEST(FusionEvalGelu, Gpt2TinyBf16StepWithDGelu) {
  FusionConfig geluOnly;
  geluOnly.geluGradEpilogue = false;
  checkRoundingFusions(geluOnly, 1, 0, FusionConfig());
}

// The default kernel pipeline gives gpt2-tiny's attention the packed qkv
// (llmc-fold-qkv-slices): no split or concat is left, so the "Fused" case
// above evaluates qkv_heads attention against the ungrouped split/concat.
TEST(FusionEvalPacked, Gpt2TinyStepReadsPackedQkv) {
  MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = gpt2TinyStep(context, "bf16");
  ASSERT_TRUE(module);
  int splits = 0, packed = 0;
  module->walk([&](Operation *op) {
    splits += (op->getName().getStringRef() == "llmc.split");
    packed += op->hasAttr("qkv_heads");
  });
  ASSERT_GT(splits, 0);
  ASSERT_TRUE(succeeded(runKernelPipeline(*module, FusionConfig())));
  splits = 0;
  int concats = 0;
  module->walk([&](Operation *op) {
    splits += (op->getName().getStringRef() == "llmc.split");
    concats += (op->getName().getStringRef() == "llmc.concat");
    packed += op->hasAttr("qkv_heads");
  });
  EXPECT_EQ(splits, 0);
  EXPECT_EQ(concats, 0);
  EXPECT_GT(packed, 0);
  FusionConfig off;
  off.qkvSlices = false;
  OwningOpRef<ModuleOp> plain = gpt2TinyStep(context, "bf16");
  ASSERT_TRUE(succeeded(runKernelPipeline(*plain, off)));
  packed = 0;
  plain->walk([&](Operation *op) { packed += op->hasAttr("qkv_heads"); });
  EXPECT_EQ(packed, 0);
}

// Llama's bf16 step (the tiny recipe: RMS norms over rows of 64, RoPE,
// SwiGLU): every exact fusion, the RMS norm prologues and SwiGLU's
// recomputed silu(gate) among them (issue 19), leaves every result bitwise
// the ungrouped step's; and both are there: each RMS norm but the first
// (whose input is the embedding gather) shares its group with the residual
// add before it, and each layer's backward computes silu(gate) again.
TEST(FusionEvalLlama, TinyBf16StepUnchangedByRmsNormPrologues) {
  MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return success();
  });
  OwningOpRef<ModuleOp> plain = llamaTinyStep(context, "bf16");
  ASSERT_TRUE(plain) << diagnostics;
  auto args = stepArguments(plain->lookupSymbol<func::FuncOp>("train_step"), 7);
  std::vector<RefTensor> want = evaluateStep(*plain, args);
  ASSERT_FALSE(want.empty()) << diagnostics;
  for (bool prologues : {true, false}) {
    FusionConfig config = exactFusions();
    config.normPrologue = prologues;
    OwningOpRef<ModuleOp> grouped = plain->clone();
    ASSERT_TRUE(succeeded(runKernelPipeline(*grouped, config))) << diagnostics;
    int norms = 0, withAdd = 0, silus = 0;
    grouped->walk([&](mlir::llmc::SiluOp) { ++silus; });
    grouped->walk([&](mlir::llmc::RmsNormOp norm) {
      ++norms;
      for (Operation *op = norm->getPrevNode(); op; op = op->getPrevNode())
        withAdd += isa<mlir::llmc::AddOp>(op) &&
                   llvm::is_contained(norm->getOperands(), op->getResult(0));
    });
    EXPECT_EQ(norms, 5); // two layers x two, and the final norm
    EXPECT_EQ(withAdd, prologues ? 4 : 0);
    // SwiGLU's silu(gate) recomputed in each layer's backward kernel.
    EXPECT_EQ(silus, 4);
    std::vector<RefTensor> got = evaluateStep(*grouped, args);
    ASSERT_EQ(got.size(), want.size()) << diagnostics;
    EXPECT_TRUE(differing(got, want).empty())
        << "prologues " << prologues << ": " << differing(got, want).size()
        << " results changed by grouping";
  }
}

// FusionConfig is {epilogues, elementwise, reductions, horizontal}.
INSTANTIATE_TEST_SUITE_P(
    Fusion, FusionEval,
    ::testing::Values(
        FusionCase{"Fused", exactFusions()},
        FusionCase{"NoFusion", {false, false, false, false}},
        FusionCase{"NoEpilogues", {false, true, true, true}},
        FusionCase{"OnlyElementwise", {false, true, false, false}},
        FusionCase{"OnlyReductions", {false, false, true, false}},
        FusionCase{"OnlyHorizontal", {false, false, false, true}}),
    [](const auto &info) { return std::string(info.param.name); });

} // namespace
} // namespace llmc::test
