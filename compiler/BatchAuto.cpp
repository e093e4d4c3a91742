//===- BatchAuto.cpp - `--batch auto` -------------------------------------===//
//
// BatchAuto.h. Each candidate is a whole compile without NVRTC, in a
// context of its own (its diagnostics kept for the error that needs them),
// so the peak is the plan `llmc compile` would write at that batch.
//
//===----------------------------------------------------------------------===//
#include "compiler/BatchAuto.h"

#include "runtime/CudaApi.h"
#include "runtime/DeviceMemory.h"

#include "dialects/llmc/LlmcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <algorithm>
#include <cstdio>
#include <set>

namespace llmc {

namespace {

// The H100's measured ceilings (BENCHMARKS.md, bench/sol.py), as
// ClassifierChunks.cpp models them: bf16 GEMMs, DRAM, a launch in a graph.
// f32 GEMMs (no tensor cores) at the datasheet's 67 TFLOP/s scaled by the
// measured/datasheet ratio of bf16 (770 / 989); TF32 at half of bf16.
constexpr double kBf16GemmFlopsPerSecond = 770e12;
constexpr double kTf32GemmFlopsPerSecond = 385e12;
constexpr double kF32GemmFlopsPerSecond = 52e12;
constexpr double kDramBytesPerSecond = 2.97e12;
constexpr double kLaunchSeconds = 2e-6;
// One 64 KiB module granule per kernel, as plannedPeak counts before NVRTC.
constexpr uint64_t kModuleGranule = 64ull << 10;
constexpr int64_t kMaxAutoBatch = 1 << 16;

double gemmRate(const MatmulStep &mm) {
  if (mm.typeA == DType::F32 && mm.typeB == DType::F32)
    return mm.tf32 ? kTf32GemmFlopsPerSecond : kF32GemmFlopsPerSecond;
  return kBf16GemmFlopsPerSecond;
}

/// The roofline time of steps [first, last) of `plan`, in seconds.
double sequenceSeconds(const Plan &plan, size_t first, size_t last) {
  auto bytesOf = [&](const std::string &name) -> double {
    const BufferInfo *b = plan.findBuffer(name);
    return b ? double(b->bytes) : 0.0;
  };
  double seconds = 0;
  for (size_t i = first; i < last; ++i) {
    const Step &step = plan.steps[i];
    double flops = 0, bytes = 0, rate = kBf16GemmFlopsPerSecond;
    if (const auto *mm = std::get_if<MatmulStep>(&step.op)) {
      flops = 2.0 * double(mm->m) * double(mm->n) * double(mm->k) *
              double(mm->batch);
      rate = gemmRate(*mm);
      for (const std::string *name :
           {&mm->a, &mm->b, &mm->c, &mm->d, &mm->bias, &mm->aux,
            &mm->biasGrad})
        bytes += bytesOf(*name);
    } else if (const auto *launch = std::get_if<LaunchStep>(&step.op)) {
      std::set<std::string> named;
      for (const KernelArg &a : launch->args)
        if (a.kind == KernelArg::Kind::Buffer && named.insert(a.name).second)
          bytes += bytesOf(a.name);
    } else {
      bytes = bytesOf(std::get<MemsetStep>(step.op).buffer);
    }
    seconds += std::max(flops / rate, bytes / kDramBytesPerSecond) +
               kLaunchSeconds;
  }
  return seconds;
}

/// GPU 0's free memory with its primary context retained (what a plan
/// loaded into that context can take); 0 without a GPU.
uint64_t detectFreeMemory(std::string &device) {
  const cuda::DriverApi *cu = nullptr;
  CUdevice dev;
  CUcontext ctx = nullptr;
  if (!cuda::loadDriver(cu) || cu->cuInit(0) != CUDA_SUCCESS ||
      cu->cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cu->cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS)
    return 0;
  size_t freeBytes = 0, total = 0;
  char name[256] = {};
  if (cu->cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
      cu->cuMemGetInfo(&freeBytes, &total) != CUDA_SUCCESS)
    freeBytes = 0;
  if (cu->cuDeviceGetName(name, sizeof name, dev) == CUDA_SUCCESS)
    device = name;
  cu->cuDevicePrimaryCtxRelease(dev);
  return freeBytes;
}

/// The batch `model` loads with when none is given: dim 0 of @forward's
/// first integer rank-2 input; 0 when it does not load or has none.
int64_t givenBatch(const std::string &model, ModelOptions options) {
  mlir::MLIRContext context;
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {
    return mlir::success();
  });
  options.batch.reset();
  auto module = loadModel(model, options, context);
  if (!module)
    return 0;
  auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward");
  if (!forward)
    return 0;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto t = mlir::dyn_cast<mlir::RankedTensorType>(
        forward.getArgument(i).getType());
    if (forward.getArgAttr(i, "llmc.input") && t && t.getRank() == 2 &&
        t.getElementType().isInteger() && t.hasStaticShape())
      return t.getDimSize(0);
  }
  return 0;
}

/// One candidate: its plan's peak and modelled window. False with `error`
/// when it does not compile for another reason than its size.
bool measure(const std::string &model, ModelOptions options,
             CompileConfig config, BatchCandidate &c, std::string &error) {
  mlir::MLIRContext context;
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler keep(&context, [&](mlir::Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return mlir::success();
  });
  options.batch = c.batch;
  auto module = loadModel(model, options, context);
  if (!module) {
    error = "--batch auto: cannot load '" + model + "' at batch " +
            std::to_string(c.batch) + ": " + diagnostics;
    return false;
  }
  auto compiled = compileModule(*module, config);
  if (mlir::failed(compiled)) {
    error = "--batch auto: cannot compile '" + model + "' at batch " +
            std::to_string(c.batch) + ": " + diagnostics;
    return false;
  }
  const Plan &plan = compiled->planned.plan;
  if (int64_t b = planBatch(plan); b != c.batch) {
    error = "--batch auto: '" + model + "' has a static batch of " +
            std::to_string(b) +
            " (its token ids do not take --batch); --batch auto needs a "
            "model whose batch is a symbolic dim";
    return false;
  }
  c.peakBytes =
      planDeviceMemory(plan, DeviceFacts(), plan.kernels.size() * kModuleGranule)
          .total();
  size_t split = plan.accumulateSteps;
  double seconds =
      double(c.microBatches) * sequenceSeconds(plan, 0, split) +
      sequenceSeconds(plan, split, plan.steps.size());
  c.windowMs = 1e3 * seconds;
  double tokens = double(compiled->report.tokens) * double(c.microBatches);
  c.tokensPerSecond = seconds > 0 ? tokens / seconds : 0;
  return true;
}

} // namespace

const char *const kBatchAutoHelp =
    "  --batch auto           the batch (with --tokens-per-step: the "
    "micro-batch)\n"
    "                         whose planned memory fits and whose modelled\n"
    "                         tokens/s is highest (docs/memory.md)\n"
    "  --device-memory SIZE   the memory --batch auto fits into (default: "
    "GPU 0's\n"
    "                         free memory; --memory-budget wins)\n";

bool parseBatchAutoOption(const Args &args, size_t &i, BatchAutoConfig &c,
                          std::string &error) {
  const std::string &a = args[i];
  if (a == "--batch" && i + 1 < args.size() && args[i + 1] == "auto") {
    c.enabled = true;
    ++i;
    return true;
  }
  if (a != "--device-memory")
    return false;
  if (i + 1 >= args.size()) {
    error = "--device-memory needs a size (40GiB, 900MiB, bytes)";
    return true;
  }
  std::string why;
  if (!parseMemorySize(args[++i], 0, c.deviceMemory, why) ||
      c.deviceMemory == 0)
    error = "--device-memory: " +
            (why.empty() ? "the size must be above 0" : why);
  return true;
}

mlir::FailureOr<BatchChoice> chooseBatch(const std::string &model,
                                         const ModelOptions &options,
                                         const CompileConfig &config,
                                         int64_t tokensPerStep,
                                         const BatchAutoConfig &autoConfig,
                                         std::string &error) {
  BatchChoice choice;
  std::string device;
  if (config.recompute.budget > 0) {
    choice.available = config.recompute.budget;
    choice.availableFrom = "--memory-budget";
  } else if (autoConfig.deviceMemory > 0) {
    choice.available = autoConfig.deviceMemory;
    choice.availableFrom = "--device-memory";
  } else if ((choice.available = detectFreeMemory(device)) > 0) {
    choice.availableFrom = "GPU 0's free memory (" + device + ")";
  } else {
    error = "--batch auto needs the memory to fit into: a GPU (none was "
            "found), --device-memory SIZE or --memory-budget SIZE";
    return mlir::failure();
  }
  if (tokensPerStep > 0 && !options.seq) {
    error = "--batch auto with --tokens-per-step needs --seq T (the "
            "micro-batches are --tokens-per-step / (B x T))";
    return mlir::failure();
  }
  int64_t seq = options.seq.value_or(1);
  if (tokensPerStep > 0 && tokensPerStep % seq != 0) {
    error = "--tokens-per-step " + std::to_string(tokensPerStep) +
            " is not a multiple of --seq " + std::to_string(seq);
    return mlir::failure();
  }
  int64_t rows = tokensPerStep > 0 ? tokensPerStep / seq : kMaxAutoBatch;
  std::set<int64_t> batches;
  for (int64_t b = 1; b <= rows; b *= 2)
    if (tokensPerStep == 0 || rows % b == 0)
      batches.insert(b);
  if (int64_t given = givenBatch(model, options);
      given > 0 && given <= rows && (tokensPerStep == 0 || rows % given == 0))
    batches.insert(given);

  // The candidates as compiled: no kernels, no cache, and no recomputation
  // under a budget (a candidate that needs it does not fit; the chosen one
  // is compiled with the budget, which then recomputes nothing).
  CompileConfig candidateConfig = config;
  candidateConfig.compileKernels = false;
  candidateConfig.compileCache = false;
  candidateConfig.explain = false;
  candidateConfig.recompute.budget = 0;
  candidateConfig.optimizer.accumulate = tokensPerStep > 0;
  // Up to what fits: the plan grows with the batch, so the first that
  // does not fit ends the search.
  for (int64_t b : batches) {
    BatchCandidate c;
    c.batch = b;
    c.microBatches = tokensPerStep > 0 ? rows / b : 1;
    if (!measure(model, options, candidateConfig, c, error))
      return mlir::failure();
    c.fits = c.peakBytes <= choice.available;
    choice.candidates.push_back(c);
    if (!c.fits)
      break;
  }
  bool any = false;
  for (size_t i = 0; i < choice.candidates.size(); ++i) {
    const BatchCandidate &c = choice.candidates[i];
    if (c.fits && (!any || c.tokensPerSecond >
                               choice.candidates[choice.chosen].tokensPerSecond)) {
      choice.chosen = i;
      any = true;
    }
  }
  if (!any) {
    const BatchCandidate &first = choice.candidates.front();
    error = "--batch auto: not even batch " + std::to_string(first.batch) +
            " fits: its plan needs " + formatMemoryBytes(first.peakBytes) +
            " (" + std::to_string(first.peakBytes) + " bytes) and " +
            choice.availableFrom + " is " +
            formatMemoryBytes(choice.available) + " (" +
            std::to_string(choice.available) +
            " bytes); shorten --seq, use --precision bf16, or give more "
            "memory";
    return mlir::failure();
  }
  return choice;
}

std::vector<std::string> batchChoiceLines(const BatchChoice &choice) {
  std::vector<std::string> lines;
  const BatchCandidate &c = choice.candidates[choice.chosen];
  char text[512];
  std::string micro =
      c.microBatches > 1 || choice.candidates.front().microBatches > 1
          ? " x " + std::to_string(c.microBatches) +
                (c.microBatches == 1 ? " micro-batch" : " micro-batches")
          : "";
  std::snprintf(text, sizeof text,
                "B %lld%s: the most modelled tokens/s that fits %s (%s)",
                static_cast<long long>(c.batch), micro.c_str(),
                formatMemoryBytes(choice.available).c_str(),
                choice.availableFrom.c_str());
  lines.push_back(text);
  for (const BatchCandidate &k : choice.candidates) {
    std::string m = k.microBatches > 1 || !micro.empty()
                        ? " x " + std::to_string(k.microBatches)
                        : "";
    std::snprintf(text, sizeof text,
                  "  B %lld%s: planned peak %s, modelled %.3f ms per step, "
                  "%.0f tokens/s%s",
                  static_cast<long long>(k.batch), m.c_str(),
                  formatMemoryBytes(k.peakBytes).c_str(), k.windowMs,
                  k.tokensPerSecond,
                  !k.fits ? " (does not fit)"
                  : &k == &c ? " (chosen)"
                             : "");
    lines.push_back(text);
  }
  return lines;
}

} // namespace llmc
