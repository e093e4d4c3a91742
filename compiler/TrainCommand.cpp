//===- TrainCommand.cpp - `llmc train` ------------------------------------===//
//
// Parses the command line into a TrainConfig and runs it on the chosen
// device. The CPU path (runTrainCpu, here) trains in the reference
// evaluator: slow, exact, and the yardstick for the GPU path.
//
//===----------------------------------------------------------------------===//
#include "compiler/CpuTrainer.h"
#include "compiler/Driver.h"
#include "compiler/Train.h"
#include "compiler/TrainLog.h"
#include "runtime/DataLoader.h"
#include "runtime/ParseInteger.h"

#include "mlir/IR/MLIRContext.h"
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
        "  --val VAL.bin          validation shard(s)\n"
        "  --val-every N          validate every N steps (default: only at the end)\n"
        "  --val-batches N        batches per validation (default 4)\n"
        "  --seed N               seed of normal(std) parameter init (default 0)\n"
        "  --optimizer adamw|sgd  (default adamw)\n"
        "  --beta1 X --beta2 X --eps X --weight-decay X --momentum X\n"
        "                         optimizer settings (defaults 0.9, 0.95, 1e-8,\n"
        "                         0.1, 0)\n"
        "  --clip-norm X          clip gradients to global norm X (default 1;\n"
        "                         0 disables)\n"
        "  --decay-min-rank N     decay only parameters of rank >= N (default 2)\n"
        "  --precision fp32|bf16  bf16: autocast's mixed precision, fp32 master\n"
        "                         weights and optimizer (docs/precision.md;\n"
        "                         default fp32)\n"
        "  --no-pad               keep every dim as the model has it (no\n"
        "                         nice-number padding, docs/padding.md)\n"
        "  --profile              (cuda) time every kernel of the last step and\n"
        "                         print the breakdown by kernel family\n"
     << kModelOptionsHelp;
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
    if (a == "--no-pad" || a == "--pad-always") { // docs/padding.md
      (a == "--no-pad" ? cfg.precision.pad : cfg.precision.padAlways) =
          a != "--no-pad";
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
      else if (a == "--val")
        cfg.val = v;
      else if (a == "--steps")
        ok = count(cfg.steps, 1, kMaxSteps);
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
        ok = (v == "fp32" || v == "bf16") && (cfg.precision.precision = v, true);
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
  if (cfg.profile && cfg.device != "cuda")
    return usageError("--profile times the GPU kernels: pass --device cuda");
  bool bundle = llvm::StringRef(cfg.model).ends_with(".llmc");
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

/// The token-id and target inputs: the first two integer [B, T] inputs.
static bool tokenInputs(const std::vector<StepInput> &inputs,
                        std::string &tokens, std::string &targets,
                        int64_t &batch, int64_t &seq, std::string &error) {
  std::vector<const StepInput *> ints;
  for (const StepInput &in : inputs) {
    if (in.type.isFloat() || in.type.rank() != 2) {
      error = "input '" + in.name + "' (" + in.type.typeString() +
              ") is not token ids or targets; `llmc train` feeds models "
              "whose data inputs are [B, T] token ids and targets only";
      return false;
    }
    ints.push_back(&in);
  }
  if (ints.size() != 2 || ints[0]->type.shape != ints[1]->type.shape) {
    error = "the model needs exactly two integer inputs of one shape [B, T] "
            "(token ids, then targets); it has " +
            std::to_string(ints.size());
    return false;
  }
  tokens = ints[0]->name;
  targets = ints[1]->name;
  batch = ints[0]->type.shape[0];
  seq = ints[0]->type.shape[1];
  return true;
}

static RefTensor tokenTensor(const RefTensor &type,
                             const std::vector<int64_t> &values) {
  return RefTensor::fromInts(type.kind, type.shape, values);
}

int runTrainCpu(const TrainConfig &cfg) {
  mlir::MLIRContext context;
  installCliDiagnostics(context, "train", cfg.model);
  auto module = loadModel(cfg.model, cfg.modelOptions, context);
  if (!module)
    return 1;
  auto trainer =
      CpuTrainer::create(*module, &cfg.optimizer, cfg.seed, cfg.precision);
  if (mlir::failed(trainer))
    return 1;
  std::string tokens, targets, error;
  int64_t batch = 0, seq = 0;
  if (!tokenInputs((*trainer)->inputs(), tokens, targets, batch, seq, error))
    return fail(error);
  const RefTensor &type = (*trainer)->inputs().front().type;

  DataLoader train, val;
  int64_t vocab = (*trainer)->vocabulary();
  Status s = train.open(cfg.data, batch, seq, vocab);
  if (!s)
    return fail(s.message());
  if (!cfg.val.empty() && !(s = val.open(cfg.val, batch, seq, vocab)))
    return fail(s.message());
  llvm::outs() << "llmc train: " << cfg.model << " on the CPU reference "
               << "evaluator | " << (*trainer)->parameterCount()
               << " parameters | batch " << batch << " x " << seq << " | "
               << train.numTokens() << " training tokens";
  if (cfg.precision.precision != "fp32")
    llvm::outs() << " | precision " << cfg.precision.precision
                 << " (autocast)";
  llvm::outs() << "\n";
  llvm::outs().flush();

  auto validate = [&](int64_t step) -> bool {
    val.reset();
    double sum = 0;
    std::vector<int64_t> x, y;
    for (int64_t b = 0; b < cfg.valBatches; ++b) {
      if (Status s = val.next(x, y); !s) {
        fail(s.message());
        return false;
      }
      auto loss = (*trainer)->evalLoss(
          {{tokens, tokenTensor(type, x)}, {targets, tokenTensor(type, y)}});
      if (mlir::failed(loss))
        return false;
      sum += *loss;
    }
    printValidationLine(step - 1, sum / cfg.valBatches);
    return true;
  };

  std::vector<int64_t> x, y;
  for (int64_t step = 0; step < cfg.steps; ++step) {
    if (Status s = train.next(x, y); !s)
      return fail(s.message());
    double lr = learningRateAt(cfg, step);
    auto start = std::chrono::steady_clock::now();
    auto loss = (*trainer)->step(
        {{tokens, tokenTensor(type, x)}, {targets, tokenTensor(type, y)}}, lr);
    if (mlir::failed(loss))
      return 1;
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    if (!std::isfinite(*loss))
      return fail("the loss is " + std::to_string(*loss) + " at step " +
                  std::to_string(step + 1) +
                  ": lower --lr, raise --warmup or --clip-norm");
    printStepLine({step, *loss, lr, ms, batch * seq});
    if (!cfg.val.empty() && cfg.valEvery > 0 && (step + 1) % cfg.valEvery == 0 &&
        !validate(step + 1))
      return 1;
  }
  if (!cfg.val.empty() && (cfg.valEvery == 0 || cfg.steps % cfg.valEvery != 0) &&
      !validate(cfg.steps))
    return 1;
  return 0;
}

} // namespace llmc
