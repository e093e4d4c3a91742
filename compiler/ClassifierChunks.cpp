//===- ClassifierChunks.cpp - The classifier's chunks from the memory plan ===//
//
// Each candidate is planned for real (plannedPeak on a copy of the module),
// so the choice sees what fusion, in-place gradients and the planner's
// layout make of the chunks; only the time is modelled (ClassifierChunks.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/ClassifierChunks.h"

#include "dialects/llmc/LlmcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdio>

namespace llmc {
namespace {

using namespace mlir;

// The H100's measured ceilings (BENCHMARKS.md, bench/sol.py): bf16 GEMMs
// and DRAM; a launch inside the step's CUDA graph.
constexpr double kGemmFlopsPerSecond = 770e12;
constexpr double kDramBytesPerSecond = 2.97e12;
constexpr double kLaunchSeconds = 2e-6;
// What the default may spend on memory without a budget asking for it.
constexpr double kDefaultMaxShare = 0.01;

LogicalResult applyChunks(ModuleOp module, int64_t chunks) {
  PassManager pm(module->getContext());
  mlir::llmc::ChunkClassifierPassOptions o;
  o.chunks = chunks;
  pm.addNestedPass<func::FuncOp>(mlir::llmc::createChunkClassifierPass(o));
  return pm.run(module);
}

/// The floor of the step: its matmuls at the GEMM ceiling. The real step
/// is slower (BENCHMARKS.md: about 2x), so a share of it is an upper bound.
double stepFloorMs(func::FuncOp func) {
  double flops = 0;
  func.walk([&](mlir::llmc::MatmulOp mm) {
    auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
    auto out = cast<RankedTensorType>(mm.getType());
    int64_t k = mm.getTransposeLhs() ? lhs.getDimSize(lhs.getRank() - 2)
                                     : lhs.getShape().back();
    flops += 2.0 * double(out.getNumElements()) * double(k);
  });
  return 1e3 * flops / kGemmFlopsPerSecond;
}

/// The tokens of the step's classifier, 0 when none.
int64_t classifierTokens(func::FuncOp func) {
  int64_t tokens = 0;
  func.walk([&](mlir::llmc::CrossEntropyOp ce) {
    auto t = cast<RankedTensorType>(ce.getTargets().getType());
    if (ce.getReduction() != mlir::llmc::LossReduction::none)
      tokens = t.getNumElements();
  });
  return tokens;
}

/// The chunks' modelled time, from what the pass recorded on the function.
double chunkCostMs(func::FuncOp func) {
  auto d = func->getAttrOfType<DictionaryAttr>("llmc.chunked_classifier");
  if (!d)
    return 0;
  double bytes = double(d.getAs<IntegerAttr>("extra_bytes").getInt());
  double launches = double(d.getAs<IntegerAttr>("extra_launches").getInt());
  return 1e3 * (bytes / kDramBytesPerSecond + launches * kLaunchSeconds);
}

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f MiB", double(bytes) / (1 << 20));
  return text;
}

} // namespace

FailureOr<ClassifierChunkChoice>
runClassifierChunks(ModuleOp module, const RecomputeConfig &recompute,
                    const FusionConfig &fusion) {
  ClassifierChunkChoice choice;
  auto func = module.lookupSymbol<func::FuncOp>("train_step");
  if (!func || recompute.classifierChunks == 1)
    return choice;
  choice.tokens = classifierTokens(func);
  if (choice.tokens == 0)
    return choice;
  choice.stepFloorMs = stepFloorMs(func);
  if (recompute.classifierChunks > 1) {
    if (failed(applyChunks(module, recompute.classifierChunks)))
      return failure();
    choice.chunks = recompute.classifierChunks;
    ClassifierChunkCandidate c;
    c.chunks = choice.chunks;
    c.costMs = chunkCostMs(func);
    c.costShare = c.costMs / choice.stepFloorMs;
    choice.candidates.push_back(c);
    choice.why = "--classifier-chunks";
    return choice;
  }

  // Auto: 1, 2, 4, ... chunks of at least 512 tokens each, every one
  // planned on a copy; nothing to plan when the tokens make one chunk.
  std::vector<int64_t> counts;
  for (int64_t k = 1; k <= 64 && choice.tokens % k == 0 &&
                      (k == 1 || choice.tokens / k >= 512);
       k *= 2)
    counts.push_back(k);
  if (counts.size() < 2)
    return choice;
  for (int64_t k : counts) {
    OwningOpRef<ModuleOp> copy = module.clone();
    if (k > 1 && failed(applyChunks(*copy, k)))
      return failure();
    ClassifierChunkCandidate c;
    c.chunks = k;
    c.costMs = chunkCostMs(copy->lookupSymbol<func::FuncOp>("train_step"));
    c.costShare = c.costMs / choice.stepFloorMs;
    auto peak = plannedPeak(*copy, "train_step", fusion);
    if (failed(peak))
      return failure();
    c.peak = *peak;
    choice.candidates.push_back(c);
  }
  const ClassifierChunkCandidate *best = &choice.candidates.front();
  if (recompute.budget != 0) {
    const ClassifierChunkCandidate *fits = nullptr;
    for (const ClassifierChunkCandidate &c : choice.candidates) {
      if (!fits && c.peak <= recompute.budget)
        fits = &c;
      if (c.peak < best->peak)
        best = &c;
    }
    if (fits)
      best = fits;
    choice.why = fits ? "the fewest chunks whose peak fits the budget " +
                            mib(recompute.budget)
                      : "the lowest peak: none fits the budget " +
                            mib(recompute.budget) + " alone";
  } else {
    for (const ClassifierChunkCandidate &c : choice.candidates)
      if (c.costShare < kDefaultMaxShare && c.peak < best->peak)
        best = &c;
    choice.why = best->chunks == 1
                     ? "no count under 1% of the step lowers the peak"
                     : "the lowest peak among the counts that cost under 1% "
                       "of the step";
  }
  choice.chunks = best->chunks;
  if (choice.chunks > 1 && failed(applyChunks(module, choice.chunks)))
    return failure();
  return choice;
}

std::vector<std::string> classifierChunkLines(const ClassifierChunkChoice &c,
                                              bool candidates) {
  std::vector<std::string> lines;
  if (c.tokens == 0 || (c.chunks == 1 && c.candidates.empty()))
    return lines;
  char text[512];
  const ClassifierChunkCandidate *whole = nullptr, *chosen = nullptr;
  for (const ClassifierChunkCandidate &k : c.candidates) {
    if (k.chunks == 1)
      whole = &k;
    if (k.chunks == c.chunks)
      chosen = &k;
  }
  if (whole && chosen) {
    std::snprintf(text, sizeof text,
                  "%lld chunk%s of %lld tokens: planned peak %s -> %s, "
                  "modelled cost %.3f ms (%.2f%% of the step's %.1f ms "
                  "floor); %s",
                  static_cast<long long>(c.chunks), c.chunks == 1 ? "" : "s",
                  static_cast<long long>(c.tokens / c.chunks),
                  mib(whole->peak).c_str(), mib(chosen->peak).c_str(),
                  chosen->costMs, 100 * chosen->costShare, c.stepFloorMs,
                  c.why.c_str());
  } else {
    std::snprintf(text, sizeof text, "%lld chunk%s of %lld tokens (%s)",
                  static_cast<long long>(c.chunks), c.chunks == 1 ? "" : "s",
                  static_cast<long long>(c.tokens / c.chunks), c.why.c_str());
  }
  lines.push_back(text);
  if (!candidates)
    return lines;
  for (const ClassifierChunkCandidate &k : c.candidates) {
    if (k.peak == 0)
      continue;
    std::snprintf(text, sizeof text,
                  "  candidate %lld chunk%s: planned peak %s, modelled cost "
                  "%.3f ms (%.2f%%)",
                  static_cast<long long>(k.chunks), k.chunks == 1 ? "" : "s",
                  mib(k.peak).c_str(), k.costMs, 100 * k.costShare);
    lines.push_back(text);
  }
  return lines;
}

} // namespace llmc
