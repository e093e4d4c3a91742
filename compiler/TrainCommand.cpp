//===- TrainCommand.cpp - `llmc train` ------------------------------------===//
//
// Parses the command line into a TrainConfig and runs it on the chosen
// device. The CPU path (runTrainCpu, here) trains in the reference
// evaluator: slow, exact, and the yardstick for the GPU path.
//
//===----------------------------------------------------------------------===//
#include "compiler/BatchAuto.h"
#include "compiler/Compile.h"
#include "compiler/CpuStepEngine.h"
#include "compiler/Driver.h"
#include "compiler/Train.h"
#include "runtime/DataLoader.h"
#include "runtime/MaskedDiffusion.h"
#include "runtime/ParseInteger.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace llmc {

static void printUsage(llvm::raw_ostream &os) {
  os << "usage: llmc train MODEL --data TRAIN.bin [options]\n\n"
        "Trains a model (ONNX, JSON graph, llmc IR, or a compiled .llmc "
        "bundle) on\ntoken shards (llm.c .bin format, docs/token-format.md; "
        "`llmc tokenize` makes\nthem from text). The model's first two "
        "integer inputs of shape [B, T] are\nthe token ids and the targets. "
        "--data and --val take a shard, a comma-separated\nlist, or a quoted "
        "glob ('train_*.bin'), read in name order as one stream.\n\n"
        "options:\n"
        "  --device cpu|cuda      where to train (default: cpu; the CPU runs the\n"
        "                         float64 reference evaluator)\n"
        "  --steps N              training steps (default 10)\n"
        "  --lr X                 peak learning rate (default 1e-3)\n"
        "  --warmup N             linear warmup steps (default 0)\n"
        "  --lr-decay constant|cosine|linear\n"
        "                         after warmup, decay to --min-lr at step\n"
        "                         --decay-steps (default constant)\n"
        "  --decay-steps N        where the decay ends (default: --steps)\n"
        "  --min-lr X             the floor of the decay (default 0)\n"
        "  --val VAL.bin          validation shard(s) (also --val-data)\n"
        "  --val-every N          validate every N steps (default: only at the end)\n"
        "  --val-batches N        batches per validation (default 4)\n"
        "  --seed N               seed of normal(std) parameter init (default 0)\n"
        "  --tokens-per-step N    tokens per optimizer step (the effective batch):\n"
        "                         a multiple of the micro-batch's B x T, whose\n"
        "                         gradients are accumulated (docs/memory.md)\n"
        "  --data-mode next-token|masked-diffusion\n"
        "                         next-token (default): the model's inputs are\n"
        "                         tokens and targets; masked-diffusion (LLaDA):\n"
        "                         tokens, a mask and p_mask, drawn per batch\n"
        "                         with t ~ U(eps, 1) per sequence (docs/trainer.md)\n"
        "  --mask-eps X           masked diffusion's eps (default 1e-3)\n"
        "  --optimizer adamw|sgd  (default adamw)\n"
        "  --beta1 X --beta2 X --eps X --weight-decay X --momentum X\n"
        "                         optimizer settings (defaults 0.9, 0.95, 1e-8,\n"
        "                         0.1, 0)\n"
        "  --clip-norm X          clip gradients to global norm X (default 1;\n"
        "                         0 disables)\n"
        "  --decay-min-rank N     decay only parameters of rank >= N (default 2)\n"
        "  --attention-backend auto|generated|cudnn\n"
        "                         attention through llmc's kernels or cuDNN's\n"
        "                         fused engines; auto (default) measures both\n"
        "                         on the GPU (docs/codegen.md)\n"
        "  --attention-backward deterministic|atomic\n"
        "                         cuDNN's backward: the same bits every run\n"
        "                         (default), or dQ with float atomics (faster,\n"
        "                         less memory, not bitwise reproducible)\n"
        "  --precision fp32|bf16|fp16|tf32\n"
        "                         bf16: autocast's mixed precision, fp32 master\n"
        "                         weights and optimizer (docs/precision.md;\n"
        "                         default fp32); fp16: the same in fp16 with\n"
        "                         dynamic loss scaling (the log shows the scale\n"
        "                         and the skipped steps); tf32: TF32 matmuls\n"
        "  --loss-scale-init S    fp16: the initial loss scale (default 65536)\n"
        "  --loss-scale-growth-interval N\n"
        "                         fp16: clean steps before it doubles (2000)\n"
        "  --no-pad               keep every dim as the model has it (no\n"
        "                         nice-number padding, docs/padding.md)\n"
        "  --memory-budget SIZE   recompute activations in the backward to fit "
        "SIZE\n"
        "                         (40GiB, 900MiB, bytes, or a fraction of the "
        "GPU's\n"
        "                         memory: 0.5; docs/memory.md)\n"
        "  --recompute all        recompute every saved activation\n"
        "  --profile              (cuda) time every kernel of the last step (a\n"
        "                         graph replay with events) and print the time\n"
        "                         by kernel family\n"
        "  --breakdown            (cuda) the last step's time by phase: data,\n"
        "                         forward, backward, optimizer, host, launch\n"
        "                         and gaps\n"
        "  --trace FILE.json      (cuda) the last step as a Chrome trace\n"
        "                         (Perfetto opens it), one slice per launch on\n"
        "                         a thread per phase; implies --profile\n"
        "  --checkpoint-dir DIR   write checkpoints there (docs/trainer.md): after\n"
        "                         every --save-every steps, the last step, and\n"
        "                         on SIGINT/SIGTERM\n"
        "  --save-every N         steps between checkpoints\n"
        "  --keep K               keep the last K checkpoints (default: all)\n"
        "  --resume DIR           continue from a checkpoint folder, or the\n"
        "                         newest one in a --checkpoint-dir\n"
        "  --on-nan stop|skip|reduce-lr|rollback\n"
        "                         a step whose loss or gradient norm is NaN or\n"
        "                         infinite: stop (default); skip its update;\n"
        "                         skip it and halve the learning rate; or skip\n"
        "                         it and, after --nan-patience such steps in a\n"
        "                         row (default 3), reload the last checkpoint\n"
        "  --detect-anomaly       on such a step, replay it from the state before\n"
        "                         it on the reference evaluator and name the\n"
        "                         first op (and ONNX node) whose result is NaN\n"
        "                         or infinite (on the GPU: a model file, and a\n"
        "                         copy of the state to the host every step)\n"
        "  --log-json FILE        one JSON object per step (and validation)\n"
        "  --progress, --no-progress\n"
        "                         the progress bar (default: on a terminal)\n"
        "  --peak-tflops X        MFU's denominator (default 989: H100 bf16)\n"
        "  --debug-slow-reader MS test the read-ahead: every read of the\n"
        "                         training data sleeps MS milliseconds first\n"
        "  --debug-inject-nan OP@STEP\n"
        "                         test the NaN policies: OP's output (an ONNX\n"
        "                         node name, or llmc.<op>#<n>) is NaN at STEP\n"
     << kBatchAutoHelp << kModelOptionsHelp;
}

static int usageError(const std::string &msg) {
  llvm::errs() << "llmc train: error: " << msg
               << "; `llmc train --help` shows the usage\n";
  return 2;
}

/// At most 10^12 steps (or batches): a million steps a second would take
/// eleven days, so more is a typo, and step arithmetic stays far from 2^63.
static constexpr int64_t kMaxSteps = 1000000000000;

static bool parseNumber(const std::string &text, double &out) {
  char *end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0' && std::isfinite(out);
}

int runTrain(const Args &args) {
  TrainConfig cfg;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    std::string error;
    BatchAutoConfig batchAuto;
    if (parseBatchAutoOption(args, i, batchAuto, error)) {
      if (!error.empty())
        return usageError(error);
      cfg.batchAuto |= batchAuto.enabled;
      if (batchAuto.deviceMemory)
        cfg.deviceMemory = batchAuto.deviceMemory;
      continue;
    }
    if (parseModelOption(args, i, cfg.modelOptions, error)) {
      if (!error.empty())
        return usageError(error);
      continue;
    }
    if (a == "--help" || a == "-h") {
      printUsage(llvm::outs());
      return 0;
    }
    if (a == "--profile") {
      cfg.profile = true;
      continue;
    }
    if (a == "--breakdown") {
      cfg.breakdown = true;
      continue;
    }
    if (a == "--detect-anomaly") {
      cfg.detectAnomaly = true;
      continue;
    }
    if (a == "--progress" || a == "--no-progress") {
      cfg.progress = a == "--progress";
      continue;
    }
    if (parseRecomputeOption(args, i, cfg.recompute, error)) {
      if (!error.empty())
        return usageError(error);
      continue;
    }
    if (a == "--no-pad" || a == "--pad-always") { // docs/padding.md
      (a == "--no-pad" ? cfg.precision.pad : cfg.precision.padAlways) =
          a != "--no-pad";
      continue;
    }
    if (a == "--pad-dims") { // docs/padding.md: forced sizes (tests)
      if (i + 1 >= args.size())
        return usageError("--pad-dims needs a list FROM:TO,... (e.g. 40:48)");
      cfg.precision.padDims = args[++i];
      continue;
    }
    if (a.size() > 1 && a[0] == '-') {
      if (i + 1 >= args.size())
        return usageError(a + " needs a value");
      std::string v = args[++i];
      double x = 0;
      bool number = parseNumber(v, x);
      // Counts are integers, parsed strictly (runtime/ParseInteger.h):
      // "1e19" or "2^63-1" steps is a mistake, never 0 steps.
      std::string range;
      auto count = [&](int64_t &dst, int64_t min, int64_t max) {
        range = integerRangeText(min, max);
        return parseInteger(v, min, max, dst);
      };
      auto real = [&](double &dst, double min) {
        if (!number || x < min)
          return false;
        dst = x;
        return true;
      };
      bool ok = true;
      if (a == "--device")
        ok = (v == "cpu" || v == "cuda") && (cfg.device = v, true);
      else if (a == "--data")
        cfg.data = v;
      else if (a == "--val" || a == "--val-data")
        cfg.val = v;
      else if (a == "--lr-decay")
        ok = parseDecay(v, cfg.decay);
      else if (a == "--decay-steps")
        ok = count(cfg.decaySteps, 1, kMaxSteps);
      else if (a == "--min-lr")
        ok = real(cfg.minLr, 0);
      else if (a == "--checkpoint-dir")
        ok = !v.empty() && (cfg.checkpointDir = v, true);
      else if (a == "--save-every")
        ok = count(cfg.saveEvery, 1, kMaxSteps);
      else if (a == "--keep")
        ok = count(cfg.keep, 1, 1000000);
      else if (a == "--resume")
        ok = !v.empty() && (cfg.resume = v, true);
      else if (a == "--on-nan")
        ok = parseNanPolicy(v, cfg.onNan) ||
             (range = "stop, skip, reduce-lr or rollback", false);
      else if (a == "--nan-patience")
        ok = count(cfg.nanPatience, 1, kMaxSteps);
      else if (a == "--log-json")
        ok = !v.empty() && (cfg.logJson = v, true);
      else if (a == "--debug-slow-reader")
        ok = (real(cfg.slowReaderMs, 0) && cfg.slowReaderMs <= 60000) ||
             (range = "milliseconds in [0, 60000]", false);
      else if (a == "--debug-inject-nan") {
        // OP@STEP: the op's output is NaN at that (1-based) step.
        size_t at = v.rfind('@');
        ok = at != std::string::npos && at > 0 &&
             parseInteger(v.substr(at + 1), 1, kMaxSteps, cfg.injectNanStep);
        if (ok)
          cfg.injectNanOp = v.substr(0, at);
        else
          range = "OP@STEP, e.g. llmc.gelu#0@3";
      } else if (a == "--trace")
        ok = !v.empty() && (cfg.trace = v, cfg.profile = true);
      else if (a == "--peak-tflops")
        ok = real(cfg.peakTflops, 0) && cfg.peakTflops > 0;
      else if (a == "--steps")
        ok = count(cfg.steps, 1, kMaxSteps);
      else if (a == "--tokens-per-step")
        ok = count(cfg.tokensPerStep, 1, int64_t(1) << 40);
      else if (a == "--warmup")
        ok = count(cfg.warmup, 0, kMaxSteps);
      else if (a == "--val-every")
        ok = count(cfg.valEvery, 0, kMaxSteps);
      else if (a == "--val-batches")
        ok = count(cfg.valBatches, 1, kMaxSteps);
      else if (a == "--seed")
        ok = parseUnsigned64(v, cfg.seed) ||
             (range = "an integer in [0, 18446744073709551615]", false);
      else if (a == "--lr")
        ok = real(cfg.lr, 0) && cfg.lr > 0;
      else if (a == "--data-mode")
        ok = (v == "next-token" || v == "masked-diffusion") &&
             (cfg.maskedDiffusion = v == "masked-diffusion", true);
      else if (a == "--mask-eps")
        ok = (number && x > 0 && x < 1 && (cfg.maskEps = x, true)) ||
             (range = "a number in (0, 1)", false);
      else if (a == "--optimizer")
        ok = (v == "adamw" || v == "sgd") && (cfg.optimizer.kind = v, true);
      else if (a == "--beta1")
        ok = real(cfg.optimizer.beta1, 0) && x < 1;
      else if (a == "--beta2")
        ok = real(cfg.optimizer.beta2, 0) && x < 1;
      else if (a == "--eps")
        ok = real(cfg.optimizer.epsilon, 0);
      else if (a == "--weight-decay")
        ok = real(cfg.optimizer.weightDecay, 0);
      else if (a == "--momentum")
        ok = real(cfg.optimizer.momentum, 0);
      else if (a == "--clip-norm")
        ok = real(cfg.optimizer.clipNorm, 0);
      else if (a == "--decay-min-rank")
        ok = count(cfg.optimizer.decayMinRank, 0, 63);
      else if (a == "--precision")
        ok = (v == "fp32" || v == "bf16" || v == "fp16" || v == "tf32") &&
             (cfg.precision.precision = v, true);
      else if (a == "--attention-backend")
        ok = (v == "auto" || v == "generated" || v == "cudnn") &&
             (cfg.precision.attentionBackend = v, true);
      else if (a == "--attention-backward")
        ok = (v == "deterministic" || v == "atomic") &&
             (cfg.precision.deterministicAttention = v == "deterministic", true);
      else if (a == "--loss-scale-init")
        ok = real(cfg.precision.lossScaleInit, 0) &&
             cfg.precision.lossScaleInit > 0 &&
             cfg.precision.lossScaleInit < 3.0e38;
      else if (a == "--loss-scale-growth-interval")
        ok = count(cfg.precision.lossScaleGrowthInterval, 1, kMaxSteps);
      else
        return usageError("unknown option '" + a + "'");
      if (!ok)
        return usageError("bad value '" + v + "' for " + a +
                          (range.empty() ? "" : ": expected " + range));
      continue;
    }
    if (!cfg.model.empty())
      return usageError("more than one model ('" + cfg.model + "', '" + a +
                        "')");
    cfg.model = a;
  }
  if (cfg.model.empty())
    return usageError("expected a model");
  if (cfg.data.empty())
    return usageError("expected --data TRAIN.bin");
  if ((cfg.saveEvery > 0 || cfg.keep > 0) && cfg.checkpointDir.empty())
    return usageError(std::string(cfg.saveEvery > 0 ? "--save-every"
                                                    : "--keep") +
                      " needs --checkpoint-dir DIR");
  if (cfg.minLr > cfg.lr)
    return usageError("--min-lr is above --lr");
  if ((cfg.profile || cfg.breakdown) && cfg.device != "cuda")
    return usageError(std::string(!cfg.trace.empty() ? "--trace"
                                  : cfg.profile      ? "--profile"
                                                     : "--breakdown") +
                      " times the GPU kernels: pass --device cuda");
  if (cfg.tokensPerStep > 0 && cfg.precision.precision == "fp16")
    return usageError("--tokens-per-step (gradient accumulation) does not "
                      "combine with --precision fp16's loss scaling yet; use "
                      "--precision bf16");
  if (cfg.tokensPerStep > 0 && cfg.device == "cuda" && cfg.detectAnomaly)
    return usageError("--detect-anomaly does not combine with "
                      "--tokens-per-step on the GPU yet (the replay on the "
                      "reference evaluator is of one batch); drop one of "
                      "them");
  if (cfg.tokensPerStep > 0 && cfg.maskedDiffusion)
    return usageError("--data-mode masked-diffusion does not combine with "
                      "--tokens-per-step yet (one draw per micro-batch is "
                      "not built)");
  if (cfg.detectAnomaly && cfg.maskedDiffusion && cfg.device == "cuda")
    return usageError("--detect-anomaly on the GPU does not replay the "
                      "masked-diffusion data mode's draws yet; run it with "
                      "--device cpu");
  bool bundle = llvm::StringRef(cfg.model).ends_with(".llmc");
  if (cfg.deviceMemory > 0 && !cfg.batchAuto)
    return usageError("--device-memory is the memory --batch auto fits into; "
                      "pass --batch auto");
  if (cfg.batchAuto && cfg.modelOptions.batch)
    return usageError("--batch auto and --batch " +
                      std::to_string(*cfg.modelOptions.batch) +
                      ": give one of them");
  if (cfg.batchAuto && cfg.device != "cuda")
    return usageError("--batch auto sizes the batch for the GPU: pass "
                      "--device cuda (`llmc compile --batch auto "
                      "--device-memory SIZE` shows the choice without one)");
  if (cfg.batchAuto && bundle)
    return usageError("--batch auto compiles the model at each candidate "
                      "batch: pass the model file that '" + cfg.model +
                      "' was compiled from");
  if (bundle && cfg.detectAnomaly)
    return usageError("--detect-anomaly replays a bad step on the reference "
                      "evaluator, which needs the model: pass the model file "
                      "that '" + cfg.model + "' was compiled from instead of "
                      "the bundle");
  if (bundle && cfg.device == "cpu")
    return usageError("'" + cfg.model + "' is a compiled bundle, which runs "
                      "on the GPU: pass --device cuda, or train the model "
                      "file on the CPU");
  return cfg.device == "cpu" ? runTrainCpu(cfg) : runTrainCuda(cfg);
}

//===----------------------------------------------------------------------===//
// The CPU path
//===----------------------------------------------------------------------===//

static int fail(const std::string &msg) {
  llvm::errs() << "llmc train: error: " << msg << "\n";
  return 1;
}

int64_t microBatchesFor(int64_t tokensPerStep, int64_t microTokens,
                        std::string &error) {
  if (microTokens > 0 && tokensPerStep % microTokens == 0)
    return tokensPerStep / microTokens;
  int64_t fits =
      microTokens > 0
          ? std::max<int64_t>(1, tokensPerStep / microTokens) * microTokens
          : 0;
  error = "--tokens-per-step " + std::to_string(tokensPerStep) +
          " is not a multiple of the micro-batch's " +
          std::to_string(microTokens) + " tokens (B x T); use " +
          std::to_string(fits) + " or change --batch";
  return 0;
}

int runTrainCpu(const TrainConfig &cfg) {
  mlir::MLIRContext context;
  installCliDiagnostics(context, "train", cfg.model);
  auto module = loadModel(cfg.model, cfg.modelOptions, context);
  if (!module)
    return 1;
  OptimizerConfig optimizer = cfg.optimizer;
  optimizer.accumulate = cfg.tokensPerStep > 0;
  auto trainer = CpuTrainer::create(*module, &optimizer, cfg.seed,
                                   cfg.precision, cfg.injectNanOp,
                                   cfg.recompute);
  if (mlir::failed(trainer))
    return 1;
  int64_t microBatches = 1;
  if (cfg.tokensPerStep > 0) {
    const auto &in = (*trainer)->inputs();
    int64_t micro = 0;
    if (!in.empty() && in[0].type.rank() == 2)
      micro = in[0].type.shape[0] * in[0].type.shape[1];
    std::string error;
    microBatches = microBatchesFor(cfg.tokensPerStep, micro, error);
    if (microBatches == 0)
      return fail(error);
    if (mlir::failed((*trainer)->setMicroBatches(microBatches)))
      return 1;
  }
  int64_t parameters = (*trainer)->parameterCount();
  std::unique_ptr<CpuStepEngine> engine;
  if (Status s = CpuStepEngine::create(std::move(*trainer), engine); !s)
    return fail(s.message());
  std::unique_ptr<MaskedDiffusionEngine> masked;
  if (Status s = withDataMode(cfg, *engine, masked); !s)
    return fail(s.message());
  StepEngine &stepEngine =
      masked ? static_cast<StepEngine &>(*masked) : *engine;

  DataLoader train, val;
  int64_t batch = engine->batch(), seq = engine->seq();
  Status s = train.open(cfg.data, batch, seq, engine->vocab());
  if (!s)
    return fail(s.message());
  train.readDelayMs = cfg.slowReaderMs;
  if (!cfg.val.empty() && !(s = val.open(cfg.val, batch, seq, engine->vocab())))
    return fail(s.message());
  llvm::outs() << "llmc train: " << cfg.model << " on the CPU reference "
               << "evaluator | " << parameters << " parameters | batch "
               << batch << " x " << seq;
  if (microBatches > 1)
    llvm::outs() << " (" << microBatches << " micro-batches of "
                 << batch / microBatches << " x " << seq
                 << ", gradients accumulated)";
  llvm::outs() << " | " << train.numTokens()
               << " training tokens";
  if (cfg.precision.precision != "fp32")
    llvm::outs() << " | precision " << cfg.precision.precision
                 << (cfg.precision.precision == "tf32"   ? " (TF32 matmuls)"
                     : cfg.precision.precision == "fp16" ? " (autocast, loss "
                                                           "scale "
                                                         : " (autocast)");
  if (cfg.precision.precision == "fp16")
    llvm::outs() << llvm::format("%g", cfg.precision.lossScaleInit) << ")";
  if (masked)
    llvm::outs() << " | data mode masked-diffusion (eps "
                 << llvm::format("%g", cfg.maskEps) << ")";
  llvm::outs() << "\n";
  // What --recompute / --memory-budget recomputed (the step is rewritten in
  // place, so the module holds the decision).
  for (const std::string &line : recomputeLines(*module, /*values=*/false))
    llvm::outs() << "llmc train: recompute " << line << "\n";
  llvm::outs().flush();
  return runTrainLoop(stepEngine, train, cfg.val.empty() ? nullptr : &val,
                      loopOptions(cfg));
}

} // namespace llmc
