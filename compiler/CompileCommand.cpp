//===- CompileCommand.cpp - `llmc compile`: a model to a .llmc bundle -----===//
//
//   llmc compile MODEL -o model.llmc [--batch B --seq T --shape N=V]
//                [--arch sm_XY] [--seed S] [--eval | optimizer options]
//                [--no-fuse=LIST] [--explain] [--explain-json FILE]
//
// Loads the model (ONNX, JSON or llmc IR; compiler/ModelLoader.h), builds
// the training step (with --eval: the forward and loss only), plans its
// memory, compiles its kernels with NVRTC and writes the bundle
// (runtime/Bundle.h). NVRTC needs no GPU, so this runs on any machine; the
// report says what the step holds and costs.
//
//===----------------------------------------------------------------------===//
#include "compiler/BatchAuto.h"
#include "compiler/Compile.h"
#include "compiler/CompileCache.h"
#include "compiler/Driver.h"
#include "compiler/ModelLoader.h"
#include "runtime/Bundle.h"
#include "runtime/ParseInteger.h"

#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

namespace llmc {

namespace {

constexpr const char *kUsage =
    "usage: llmc compile MODEL -o OUT.llmc [--batch B] [--seq T] "
    "[--shape NAME=VALUE] [--arch sm_XY] [--seed S] [--precision fp32|bf16|fp16|tf32] "
    "[--attention-backend auto|generated|cudnn] "
    "[--attention-backward deterministic|atomic] [--eval | optimizer options] "
    "[--memory-budget SIZE] "
    "[--tokens-per-step N] [--batch auto [--device-memory SIZE]] "
    "[--no-compile-cache] [--no-fuse=LIST] "
    "[--explain] [--explain-json FILE]\n";

int fail(const std::string &message, int code = 1) {
  llvm::errs() << "llmc compile: error: " << message << "\n";
  return code;
}

void printHelp() {
  llvm::outs()
      << kUsage
      << "\nBuilds the training step of MODEL (.onnx, .json or .mlir): the "
         "loss when the\nmodel outputs logits, the backward pass and the "
         "optimizer update; plans its\nmemory, compiles every kernel with "
         "NVRTC (no GPU needed) and writes a bundle\nthat `llmc train "
         "--device cuda` runs.\n\noptions:\n"
         "  -o OUT.llmc            the bundle to write (default: MODEL's "
         "stem + .llmc)\n"
         "  --arch sm_XY           target GPU (default: this machine's GPU, "
         "else sm_90)\n"
         "  --seed S               seed of the llmc.init_rule draws "
         "(default 0)\n"
         "  --eval                 the forward and loss only (no backward "
         "pass, no\n"
         "                         optimizer): a plan that computes the loss "
         "at fixed\n"
         "                         parameters, for graphs that cannot be "
         "differentiated\n"
         "  --attention-backward deterministic|atomic\n"
         "                         cuDNN attention's backward: the same bits "
         "every run\n"
         "                         (default), or dQ accumulated with float "
         "atomics\n"
         "                         (faster, less memory, not reproducible)\n"
         "  --no-compile-cache     compile even when the compile cache holds "
         "this model\n"
         "                         (kernels still come from the kernel "
         "cache)\n"
         "  --no-fuse=LIST         fusions to skip, comma-separated: "
         "elementwise,\n"
         "                         reductions, horizontal, norm-prologue,\n"
         "                         norm-epilogue, colsum, epilogues,\n"
         "                         gelu-epilogue, gelu-grad-epilogue,\n"
         "                         bias-grad-epilogue, strided, qkv-slices,\n"
         "                         classifier, all (docs/fusion.md)\n"
         "  --explain              print every op's precision and why "
         "(docs/precision.md),\n"
         "                         each kernel group, its ops and why the\n"
         "                         boundaries left are not fused\n"
         "  --explain-json FILE    the same as JSON\n"
         "  --tokens-per-step N    compile for gradient accumulation: the "
         "accumulate and\n"
         "                         apply steps in one plan (`llmc train "
         "--tokens-per-step N`\n"
         "                         runs N / (B x T) micro-batches per step; "
         "docs/memory.md)\n"
      << kBatchAutoHelp << kModelOptionsHelp << kPrecisionOptionsHelp << kRecomputeOptionsHelp
      << kOptimizerOptionsHelp;
}

} // namespace

int runCompile(const Args &args) {
  std::string model, out;
  ModelOptions modelOptions;
  CompileConfig config;
  std::string optimizerOption; // the first one given, for --eval's error
  bool explainText = false;
  std::string explainJson;
  BatchAutoConfig batchAuto;
  int64_t tokensPerStep = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    std::string error;
    if (a == "--help" || a == "-h") {
      printHelp();
      return 0;
    }
    // Before the model options, which take --batch B only.
    if (parseBatchAutoOption(args, i, batchAuto, error)) {
      if (!error.empty())
        return fail(error, 2);
      continue;
    }
    if (parseModelOption(args, i, modelOptions, error)) {
      if (!error.empty())
        return fail(error, 2);
      continue;
    }
    if (parseOptimizerOption(args, i, config.optimizer, error)) {
      if (!error.empty())
        return fail(error, 2);
      if (optimizerOption.empty())
        optimizerOption = a;
      continue;
    }
    if (parsePrecisionOption(args, i, config.precision, error)) {
      if (!error.empty())
        return fail(error, 2);
      continue;
    }
    if (parseRecomputeOption(args, i, config.recompute, error)) {
      if (!error.empty())
        return fail(error, 2);
      continue;
    }
    if (a == "--eval") {
      config.eval = true;
      continue;
    }
    if (a == "--no-compile-cache") {
      config.compileCache = false;
      continue;
    }
    if (a == "--explain") {
      explainText = true;
      continue;
    }
    if (parseNoFuseOption(args, i, config.fusion, error)) {
      if (!error.empty())
        return fail(error, 2);
      continue;
    }
    bool hasValue = i + 1 < args.size();
    if ((a == "-o" || a == "--arch" || a == "--seed" ||
         a == "--explain-json" || a == "--tokens-per-step") &&
        !hasValue)
      return fail(a + " needs a value; " + kUsage, 2);
    if (a == "-o") {
      out = args[++i];
    } else if (a == "--tokens-per-step") {
      uint64_t n = 0;
      if (!parseUnsigned64(args[++i], n) || n == 0 || n > (uint64_t(1) << 40))
        return fail("bad value '" + args[i] + "' for --tokens-per-step", 2);
      tokensPerStep = static_cast<int64_t>(n);
    } else if (a == "--explain-json") {
      explainJson = args[++i];
    } else if (a == "--arch") {
      config.arch = args[++i];
      if (!isValidArch(config.arch, error))
        return fail(error, 2);
    } else if (a == "--seed") {
      if (!parseUnsigned64(args[++i], config.seed))
        return fail("--seed needs an integer in [0, 18446744073709551615], "
                    "got '" + args[i] + "'",
                    2);
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      return fail("unknown option '" + a + "'; " + kUsage, 2);
    } else if (model.empty()) {
      model = a;
    } else {
      return fail(
          "expected one model file, got '" + model + "' and '" + a + "'", 2);
    }
  }
  if (model.empty())
    return fail(std::string("expected a model file; ") + kUsage, 2);
  // An option that would change nothing is a mistake worth naming.
  if (config.eval && !optimizerOption.empty())
    return fail(optimizerOption +
                    " is an optimizer option, and --eval compiles no "
                    "optimizer",
                2);
  if (config.eval && config.recompute.active())
    return fail("--memory-budget and --recompute recompute the backward's "
                "activations, and --eval compiles no backward",
                2);
  if (config.eval && tokensPerStep > 0)
    return fail("--tokens-per-step accumulates gradients, and --eval "
                "compiles no backward",
                2);
  if (batchAuto.deviceMemory > 0 && !batchAuto.enabled)
    return fail("--device-memory is the memory --batch auto fits into; "
                "pass --batch auto",
                2);
  if (batchAuto.enabled && modelOptions.batch)
    return fail("--batch auto and --batch " +
                    std::to_string(*modelOptions.batch) +
                    ": give one of them",
                2);
  config.optimizer.accumulate = tokensPerStep > 0;
  std::string stem = llvm::sys::path::stem(model).str();
  if (out.empty())
    out = stem + ".llmc";
  config.name = stem;
  config.explain = explainText || !explainJson.empty();

  std::vector<std::string> batchLines;
  if (batchAuto.enabled) {
    std::string error;
    auto choice = chooseBatch(model, modelOptions, config, tokensPerStep,
                              batchAuto, error);
    if (mlir::failed(choice))
      return fail(error);
    modelOptions.batch = choice->candidates[choice->chosen].batch;
    batchLines = batchChoiceLines(*choice);
  }
  mlir::MLIRContext context;
  installCliDiagnostics(context, "compile", model);
  CompileCacheOutcome cache;
  auto compiled =
      compileModelFile(model, modelOptions, config, context, &cache);
  if (mlir::failed(compiled))
    return 1;
  if (!explainJson.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(explainJson, ec);
    if (ec)
      return fail("cannot write '" + explainJson + "': " + ec.message());
    os << compiled->explanation.json;
  }
  if (explainText)
    llvm::outs() << compiled->explanation.text;
  auto t0 = std::chrono::steady_clock::now();
  cache.phases.restart();
  // A compile cache hit into the bundle an earlier compile wrote finds it
  // unchanged: comparing it costs a read of the weights, rewriting it a
  // 500 MB write and fsync (GPT-2 124M).
  bool unchanged = false;
  if (Status s = writeBundle(out, compiled->planned.plan, &unchanged); !s)
    return fail("cannot write the bundle: " + s.message());
  compiled->report.writeSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  llvm::outs() << "wrote " << out << ": " << compiled->planned.plan.name << "\n"
               << formatReport(compiled->report);
  if (compiled->planned.plan.accumulateSteps > 0)
    llvm::outs() << "accumulation    " << compiled->planned.plan.accumulateSteps
                 << " accumulate steps per micro-batch, "
                 << compiled->planned.plan.steps.size() -
                        compiled->planned.plan.accumulateSteps
                 << " apply steps per window (one arena)\n";
  for (const std::string &l : batchLines)
    llvm::outs() << "batch auto      " << l << "\n";
  llvm::outs() << "compile cache   " << describeCacheOutcome(cache) << "\n";
  if (unchanged)
    llvm::outs() << "bundle          unchanged: " << out
                 << " already held this bundle, byte for byte (not "
                    "rewritten)\n";
  // Where a warm compile's time goes (issue 19's warm <= 0.5 s).
  if (cache.kind == CompileCacheOutcome::Hit) {
    cache.phases.mark(unchanged ? "bundle compare" : "bundle write");
    llvm::outs() << "warm phases     " << cache.phases.text() << "\n";
  }
  return 0;
}

} // namespace llmc
