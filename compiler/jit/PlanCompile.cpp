//===- PlanCompile.cpp - The JIT's GPU plan, through the compile cache ----===//
#include "compiler/jit/PlanCompile.h"

#include "compiler/Compile.h"
#include "compiler/CompileCache.h"
#include "compiler/jit/ModelSource.h"

#include "llvm/Support/Path.h"

namespace llmc::jit {

namespace {

CompileConfig configOf(const Options &options, std::string name) {
  CompileConfig config;
  config.name = std::move(name);
  config.arch = options.arch;
  config.seed = options.seed;
  config.cacheDir = options.cacheDir;
  config.optimizer.kind = options.optimizer;
  config.optimizer.beta1 = options.beta1;
  config.optimizer.beta2 = options.beta2;
  config.optimizer.epsilon = options.epsilon;
  config.optimizer.weightDecay = options.weightDecay;
  config.optimizer.momentum = options.momentum;
  config.optimizer.clipNorm = options.clipNorm;
  config.optimizer.decayMinRank = options.decayMinRank;
  config.precision.precision = options.precision;
  config.precision.pad = options.padding != "off";
  config.precision.padAlways = options.padding == "always";
  config.precision.attentionBackend = options.attentionBackend;
  std::string error; // checked by checkOptions (Step.cpp)
  (void)recomputeFromText(options.memoryBudget, config.recompute, error);
  return config;
}

} // namespace

Status compileGpuPlan(const std::string &path, const std::string *jsonText,
                      const Options &options, Plan &plan,
                      CompileReport &report) {
  std::string name = modelName(path, jsonText);
  mlir::MLIRContext context;
  Diagnostics diagnostics(context);
  CompileConfig config =
      configOf(options, jsonText ? "graph" : llvm::sys::path::stem(path).str());
  mlir::FailureOr<CompiledModel> compiled = mlir::failure();
  CompileCacheOutcome outcome;
  if (jsonText) {
    auto module = loadJitModel(path, jsonText, options, context);
    if (!module)
      return diagnostics.failure("cannot load '" + name + "'");
    compiled = compileModule(*module, config);
    report.cache = "off: a JSON graph given as text";
  } else {
    compiled = compileModelFile(path, modelOptionsOf(options), config, context,
                                &outcome);
    report.cache = describeCacheOutcome(outcome);
    report.phases.insert(report.phases.end(), outcome.phases.phases.begin(),
                         outcome.phases.phases.end());
  }
  if (mlir::failed(compiled))
    return diagnostics.failure("cannot compile '" + name + "' for the GPU");
  const llmc::CompileReport &r = compiled->report;
  if (outcome.kind != CompileCacheOutcome::Hit)
    report.phases.push_back({"compile (import, pipeline, codegen, NVRTC)",
                             r.importSeconds + r.pipelineSeconds +
                                 r.codegenSeconds + r.nvrtcSeconds});
  report.arch = r.arch;
  report.nvrtcVersion = r.nvrtcVersion;
  report.parameters = r.params;
  report.tokens = r.tokens;
  report.vocab = r.vocab;
  report.kernels = r.kernels;
  report.matmuls = r.matmuls;
  report.launches = r.launches;
  report.cacheHits = r.cacheHits;
  report.modelFlops = r.modelFlops;
  report.padding = r.padding;
  plan = std::move(compiled->planned.plan);
  return Status::ok();
}

} // namespace llmc::jit
