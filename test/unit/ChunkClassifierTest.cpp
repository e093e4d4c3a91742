//===- ChunkClassifierTest.cpp - Chunked classifier = whole classifier ----===//
//
// llmc-chunk-classifier (docs/memory.md, "The chunked classifier"):
//
// - gpt2-tiny's whole training step (loss, updated parameters, optimizer
//   state) on the reference evaluator with the classifier in 2 and 4
//   chunks against the whole classifier: in fp32 within f32 rounding (the
//   loss and the weight gradient are sums in another order), in bf16
//   within the rounding of the partial weight gradients to bf16; and the
//   chunked step grouped and fused (the classifier groups included)
//   evaluates bitwise as the chunked step ungrouped.
// - The choice on GPT-2 124M (bf16, B 16 x 1024, the `llmc recipe`): by
//   default the plan takes the chunks that lower the peak under 1% of the
//   step's floor, the peak falls by at least half the logits' bytes, and a
//   budget between two candidates' peaks takes the fewest chunks that fit.
//
//===----------------------------------------------------------------------===//
#include "compiler/ClassifierChunks.h"
#include "compiler/ModelLoader.h"
#include "compiler/Pipeline.h"
#include "compiler/eval/Evaluator.h"
#include "compiler/eval/RefTensor.h"
#include "dialects/llmc/LlmcDialect.h"
#include "dialects/llmc/LlmcOps.h"
#include "frontends/json/recipes/Recipes.h"
#include "test/unit/TrainStepFixture.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

namespace llmc::test {
namespace {

using namespace mlir;

/// The fixture's arguments with one target ignored (-100): the loss is
/// normalized by the whole batch's count, chunked or not.
std::vector<RefTensor> argumentsIgnoringATarget(func::FuncOp func,
                                                uint64_t seed) {
  std::vector<RefTensor> args = stepArguments(func, seed);
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto input = func.getArgAttrOfType<StringAttr>(i, "llmc.input");
        input && input.getValue() == "targets")
      args[i].ints[3] = -100;
  return args;
}

/// The largest |a - b| over the tensor's largest |b|.
double relativeDifference(const RefTensor &a, const RefTensor &b) {
  if (a.shape != b.shape || a.ints != b.ints)
    return INFINITY;
  double diff = 0, scale = 0;
  for (size_t e = 0; e < b.floats.size(); ++e) {
    diff = std::max(diff, std::fabs(a.floats[e] - b.floats[e]));
    scale = std::max(scale, std::fabs(b.floats[e]));
  }
  return scale == 0 ? diff : diff / scale;
}

size_t countLosses(ModuleOp m) {
  size_t n = 0;
  m.walk([&](mlir::llmc::CrossEntropyOp) { ++n; });
  return n;
}

struct Diagnostics {
  explicit Diagnostics(MLIRContext &context)
      : handler(&context, [this](Diagnostic &d) {
          text += d.str() + "\n";
          return success();
        }) {}
  std::string text;
  ScopedDiagnosticHandler handler;
};

func::FuncOp step(ModuleOp m) {
  return m.lookupSymbol<func::FuncOp>("train_step");
}

class ChunkEval : public ::testing::TestWithParam<const char *> {};

TEST_P(ChunkEval, Gpt2TinyStepMatchesTheWholeClassifier) {
  bool bf16 = std::string(GetParam()) == "bf16";
  MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
  Diagnostics diag(context);
  OwningOpRef<ModuleOp> whole = gpt2TinyStep(context, GetParam());
  ASSERT_TRUE(whole) << diag.text;
  auto args = argumentsIgnoringATarget(step(*whole), 5);
  auto want = evaluate(step(*whole), args);
  ASSERT_TRUE(succeeded(want)) << diag.text;

  for (int64_t k : {2, 4}) {
    OwningOpRef<ModuleOp> chunked = whole->clone();
    RecomputeConfig r;
    r.classifierChunks = k;
    auto choice = runClassifierChunks(*chunked, r);
    ASSERT_TRUE(succeeded(choice)) << diag.text;
    EXPECT_EQ(choice->chunks, k);
    EXPECT_EQ(choice->tokens, 32);
    EXPECT_EQ(countLosses(*chunked), size_t(k)) << "one loss per chunk";
    auto got = evaluate(step(*chunked), args);
    ASSERT_TRUE(succeeded(got)) << diag.text;
    ASSERT_EQ(got->size(), want->size());
    double worst = 0;
    for (size_t i = 0; i < want->size(); ++i) {
      double d = relativeDifference((*got)[i], (*want)[i]);
      worst = std::max(worst, d);
      // f32: sums in another order. bf16: each chunk's weight gradient is
      // rounded to bf16 before the f32 sum (2^-9 relative each), which the
      // optimizer state carries; the loss is f32 in both precisions.
      double tolerance = i == 0 ? 1e-6 : bf16 ? 1e-2 : 1e-5;
      EXPECT_LE(d, tolerance) << "result #" << i << " with " << k
                              << " chunks";
    }
    std::printf("%s, %lld chunks: largest relative difference %.3g\n",
                GetParam(), static_cast<long long>(k), worst);

    // Grouped and fused (each chunk's loss and gradient one classifier
    // group, the gradient over the logits) as the chunked step ungrouped;
    // without the GELU and DGELU epilogues, the fusions that move a
    // rounding (FusionEvalGelu).
    OwningOpRef<ModuleOp> grouped = chunked->clone();
    FusionConfig exact;
    exact.geluEpilogue = exact.geluGradEpilogue = false;
    ASSERT_TRUE(succeeded(runKernelPipeline(*grouped, exact))) << diag.text;
    size_t classifiers = 0;
    grouped->walk([&](mlir::llmc::KernelOp g) {
      classifiers += g->hasAttr("llmc.overwrites");
    });
    EXPECT_GE(classifiers, size_t(k)) << "each chunk's gradient in place";
    auto fused = evaluate(step(*grouped), args);
    ASSERT_TRUE(succeeded(fused)) << diag.text;
    for (size_t i = 0; i < got->size(); ++i)
      EXPECT_TRUE(bitwiseEqual((*fused)[i], (*got)[i]))
          << "result #" << i << " changed by kernel formation";
  }
}

INSTANTIATE_TEST_SUITE_P(Precision, ChunkEval,
                         ::testing::Values("fp32", "bf16"));

// The forced count must divide the tokens: a clear error, no rewrite.
TEST(ChunkClassifier, UnevenChunksAreRefused) {
  MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
  Diagnostics diag(context);
  OwningOpRef<ModuleOp> m = gpt2TinyStep(context, "fp32");
  ASSERT_TRUE(m) << diag.text;
  RecomputeConfig r;
  r.classifierChunks = 3;
  EXPECT_TRUE(failed(runClassifierChunks(*m, r)));
  EXPECT_NE(diag.text.find("3 chunks do not divide the 32 tokens"),
            std::string::npos)
      << diag.text;
}

//===----------------------------------------------------------------------===//
// The choice on GPT-2 124M
//===----------------------------------------------------------------------===//

class ChunkChoice : public ::testing::Test {
protected:
  FailureOr<ClassifierChunkChoice> choose(MLIRContext &context,
                                          const RecomputeConfig &r) {
    auto graph = json::buildGpt2("124M");
    if (!graph)
      return failure();
    std::string path = ::testing::TempDir() + "/chunk-gpt2-124M.json";
    std::ofstream(path) << json::dump(*graph);
    ModelOptions options;
    options.batch = 16;
    options.seq = 1024;
    auto module = loadModel(path, options, context);
    PrecisionConfig p;
    p.precision = "bf16";
    if (!module || failed(runTrainingPipeline(*module, OptimizerConfig(), p)))
      return failure();
    return runClassifierChunks(*module, r);
  }
};

TEST_F(ChunkChoice, Gpt2DefaultLowersThePeakUnderOnePercent) {
  MLIRContext context;
  Diagnostics diag(context);
  auto c = choose(context, RecomputeConfig());
  ASSERT_TRUE(succeeded(c)) << diag.text;
  for (const std::string &line : classifierChunkLines(*c, true))
    std::printf("%s\n", line.c_str());
  ASSERT_GE(c->candidates.size(), 3u);
  ASSERT_EQ(c->candidates.front().chunks, 1);
  EXPECT_EQ(c->tokens, 16 * 1024);
  uint64_t whole = c->candidates.front().peak;
  const ClassifierChunkCandidate *chosen = nullptr;
  for (const ClassifierChunkCandidate &k : c->candidates)
    if (k.chunks == c->chunks)
      chosen = &k;
  ASSERT_TRUE(chosen);
  EXPECT_GT(c->chunks, 1);
  EXPECT_LT(chosen->costShare, 0.01);
  // The bf16 logits are 16384 x 50304 x 2 bytes; k chunks keep 1/k of them
  // and, next to a chunk's logits, the previous chunks' partial weight
  // gradient (50304 x 768 bf16) that the sum still needs.
  uint64_t logits = 16384ull * 50304 * 2, partial = 50304ull * 768 * 2;
  uint64_t predicted = logits - logits / c->chunks - partial;
  std::printf("saved %llu bytes, predicted %llu\n",
              static_cast<unsigned long long>(whole - chosen->peak),
              static_cast<unsigned long long>(predicted));
  EXPECT_GE(whole - chosen->peak, predicted * 9 / 10)
      << "the chunks saved less than the logits they no longer keep";
}

TEST_F(ChunkChoice, Gpt2BudgetTakesTheFewestChunksThatFit) {
  MLIRContext context;
  Diagnostics diag(context);
  auto all = choose(context, RecomputeConfig());
  ASSERT_TRUE(succeeded(all)) << diag.text;
  ASSERT_GE(all->candidates.size(), 3u);
  // Between the peaks of 2 and 4 chunks: 4 is the fewest that fits.
  const ClassifierChunkCandidate &two = all->candidates[1];
  const ClassifierChunkCandidate &four = all->candidates[2];
  ASSERT_LT(four.peak, two.peak);
  RecomputeConfig r;
  r.budget = (two.peak + four.peak) / 2;
  auto c = choose(context, r);
  ASSERT_TRUE(succeeded(c)) << diag.text;
  EXPECT_EQ(c->chunks, 4);
  // An ample budget needs no chunks.
  r.budget = all->candidates.front().peak;
  c = choose(context, r);
  ASSERT_TRUE(succeeded(c)) << diag.text;
  EXPECT_EQ(c->chunks, 1);
}

} // namespace
} // namespace llmc::test
