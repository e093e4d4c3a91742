//===- MatmulTune.cpp - Timing cuBLASLt's candidate algorithms -----------===//
//
// cuBLASLt's heuristic ranks algorithms by a model; its first answer is not
// always the fastest on the device (docs/runtime.md, "Matmul tuning"). tune()
// runs each candidate the heuristic offered on the step's own operands and
// keeps the fastest. Each candidate runs twice untimed (lazy module loads,
// clocks), then kRuns times between two events; the mean decides.
//
//===----------------------------------------------------------------------===//
#include "runtime/Matmul.h"

#include "runtime/AtomicFile.h"
#include "runtime/Executor.h"
#include "runtime/Hash.h"
#include "runtime/KernelCache.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

namespace llmc {
namespace {
constexpr int kWarmRuns = 2, kRuns = 5;
} // namespace

Status PreparedMatmul::tune(const cuda::DriverApi &cu, cublasLtHandle_t handle,
                            CUstream stream, CUdeviceptr workspace,
                            uint64_t workspaceBytes, double &heuristicMs,
                            double &bestMs, int &chosen) {
  heuristicMs = bestMs = 0;
  chosen = 0;
  if (candidates_.empty())
    return Status::ok();
  CUevent start = nullptr, stop = nullptr;
  LLMC_CU(cu.cuEventCreate(&start, CU_EVENT_DEFAULT), context_);
  LLMC_CU(cu.cuEventCreate(&stop, CU_EVENT_DEFAULT), context_);
  struct Destroy {
    const cuda::DriverApi &cu;
    CUevent a, b;
    ~Destroy() {
      cu.cuEventDestroy(a);
      cu.cuEventDestroy(b);
    }
  } destroy{cu, start, stop};
  const cublasLtMatmulAlgo_t first = candidates_[0];
  double best = -1;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    algo_ = candidates_[i];
    bool failed = false;
    for (int r = 0; r < kWarmRuns && !failed; ++r)
      failed = !run(handle, stream, workspace, workspaceBytes).isOk();
    if (failed)
      continue; // a candidate that cannot run is not a choice
    LLMC_CU(cu.cuEventRecord(start, stream), context_);
    for (int r = 0; r < kRuns; ++r)
      LLMC_RETURN_IF_ERROR(run(handle, stream, workspace, workspaceBytes));
    LLMC_CU(cu.cuEventRecord(stop, stream), context_);
    LLMC_CU(cu.cuEventSynchronize(stop), context_);
    float ms = 0;
    LLMC_CU(cu.cuEventElapsedTime(&ms, start, stop), context_);
    double mean = ms / kRuns;
    if (i == 0)
      heuristicMs = mean;
    if (best < 0 || mean < best) {
      best = mean;
      chosen = static_cast<int>(i);
    }
  }
  algo_ = best < 0 ? first : candidates_[static_cast<size_t>(chosen)];
  bestMs = best < 0 ? heuristicMs : best;
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// The executor's tuning pass
//===----------------------------------------------------------------------===//

namespace {

// The heuristic's first 8 answers: on GPT-2 124M's 15 shapes (H100) the
// fastest was among them for all 15 (docs/runtime.md, "Matmul tuning").
constexpr int kDefaultCandidates = 8;

/// The cache entry of one key: the chosen candidate's rank in the
/// heuristic's answer, which is the same for the same library, GPU, key and
/// candidate count, so a second process picks the same algorithm without
/// timing (bitwise resume depends on it: docs/runtime.md).
std::string tunePath(const std::string &dir, const std::string &device,
                     int version, int candidates, const std::string &key) {
  // "splitk": ranks past the heuristic's answers name its split-K variants
  // (a cache written before them holds ranks of the heuristic's list only).
  std::string what = device + "|" + std::to_string(version) + "|" +
                     std::to_string(candidates) + "|splitk|" + key;
  char name[40];
  std::snprintf(name, sizeof(name), "%016llx",
                static_cast<unsigned long long>(
                    fnv1a(what.data(), what.size(), 14695981039346656037ull)));
  return dir + "/matmul-tune/" + name;
}

} // namespace

int Executor::matmulCandidates() const {
  int n = options_.matmulCandidates < 0 ? kDefaultCandidates
                                        : options_.matmulCandidates;
  if (const char *env = std::getenv("LLMC_MATMUL_TUNE"); env && *env)
    n = std::atoi(env);
  // Without a cache a second process could time its way to another
  // algorithm; the heuristic's answer is then the reproducible choice.
  if (tuneDir().empty())
    return 1;
  return n > 1 ? std::min(n, 32) : 1;
}

std::string Executor::tuneDir() const {
  return options_.cacheDir.empty() ? KernelCache::defaultDir()
                                   : options_.cacheDir;
}

Status Executor::tuneMatmuls() {
  const int candidates = matmulCandidates();
  if (candidates <= 1)
    return Status::ok();
  const std::string dir = tuneDir();
  const int version = static_cast<int>(lt_ ? lt_->cublasLtGetVersion() : 0);
  std::map<std::string, size_t> tuned; // key -> the step that holds it
  size_t timedShapes = 0, cachedShapes = 0, splitShapes = 0;
  double heuristicTotal = 0, bestTotal = 0;
  for (size_t i = 0; i < matmuls_.size(); ++i) {
    if (!matmuls_[i])
      continue;
    PreparedMatmul &mm = *matmuls_[i];
    auto [it, fresh] = tuned.emplace(mm.key(), i);
    if (!fresh) {
      mm.setAlgo(matmuls_[it->second]->algo());
      continue;
    }
    // The heuristic's list, once per key (150 matmuls, 15 keys in GPT-2).
    LLMC_RETURN_IF_ERROR(mm.fetchCandidates(ltHandle_, candidates));
    if (mm.candidateCount() <= 1)
      continue;
    const std::string path =
        tunePath(dir, deviceName_, version, candidates, mm.key());
    int rank = -1;
    if (std::ifstream in(path); in >> rank && rank >= 0 &&
                                static_cast<size_t>(rank) < mm.candidateCount()) {
      mm.setCandidate(static_cast<size_t>(rank));
      ++cachedShapes;
      splitShapes += mm.candidateSplit(static_cast<size_t>(rank)) > 0;
      continue;
    }
    double heuristicMs = 0, bestMs = 0;
    int chosen = 0;
    LLMC_RETURN_IF_ERROR(mm.tune(*cu_, ltHandle_, stream_, workspace_,
                                 plan_.workspaceBytes, heuristicMs, bestMs,
                                 chosen));
    ++timedShapes;
    size_t uses = 0;
    for (size_t j = i; j < matmuls_.size(); ++j)
      uses += matmuls_[j] && matmuls_[j]->key() == mm.key();
    std::error_code ec;
    std::filesystem::create_directories(dir + "/matmul-tune", ec);
    // Unrecorded, a timed choice could differ in the next process: without
    // a cache entry the heuristic's first answer is the reproducible one.
    if (!writeFileAtomically(path, std::to_string(chosen) + "\n").isOk()) {
      mm.setCandidate(0);
      chosen = 0;
      bestMs = heuristicMs;
    }
    splitShapes += mm.candidateSplit(static_cast<size_t>(chosen)) > 0;
    heuristicTotal += heuristicMs * uses;
    bestTotal += bestMs * uses;

    if (std::getenv("LLMC_MATMUL_TUNE_LOG"))
      std::fprintf(stderr,
                   "matmul tune: %s x%zu: %zu candidates, heuristic %.4f ms, "
                   "best #%d (split-K %d) %.4f ms\n",
                   mm.key().c_str(), uses, mm.candidateCount(), heuristicMs,
                   chosen, mm.candidateSplit(static_cast<size_t>(chosen)),
                   bestMs);
  }
  char line[200];
  std::snprintf(line, sizeof(line),
                "%zu matmul shapes: %zu timed (step's matmuls %.3f -> %.3f "
                "ms), %zu from the cache; %zu split over K",
                tuned.size(), timedShapes, heuristicTotal, bestTotal,
                cachedShapes, splitShapes);
  matmulTuning_ = line;
  return Status::ok();
}

} // namespace llmc
