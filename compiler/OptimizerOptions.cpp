//===- OptimizerOptions.cpp - Optimizer flags of compile and train --------===//
//
// `llmc compile` and `llmc train` take the same optimizer flags; defaults are
// TrainConfig's (compiler/Train.h), which follow nanoGPT/llm.c.
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile.h"

#include "runtime/ParseInteger.h"

#include "llvm/ADT/StringRef.h"

namespace llmc {

const char *const kOptimizerOptionsHelp =
    "  --optimizer adamw|sgd  the update rule (default adamw)\n"
    "  --beta1 X --beta2 X    AdamW moment decays (default 0.9, 0.95)\n"
    "  --epsilon X            AdamW denominator term (default 1e-8)\n"
    "  --weight-decay X       decoupled weight decay (default 0.1)\n"
    "  --decay-min-rank N     decay only params of rank >= N (default 2)\n"
    "  --momentum X           SGD momentum (default 0)\n"
    "  --clip-norm X          global gradient-norm clip; 0: none (default "
    "1)\n";

bool parseOptimizerOption(const Args &args, size_t &i, OptimizerConfig &opt,
                          std::string &error) {
  const std::string &a = args[i];
  struct Number {
    const char *flag;
    double *value;
    double min, max; // allowed [min, max)
    const char *range;
  };
  Number numbers[] = {
      {"--beta1", &opt.beta1, 0, 1, "a number in [0, 1)"},
      {"--beta2", &opt.beta2, 0, 1, "a number in [0, 1)"},
      {"--epsilon", &opt.epsilon, 0, 1e300, "a number >= 0"},
      {"--weight-decay", &opt.weightDecay, 0, 1e300, "a number >= 0"},
      {"--momentum", &opt.momentum, 0, 1e300, "a number >= 0"},
      {"--clip-norm", &opt.clipNorm, 0, 1e300, "a number >= 0"},
  };
  if (a == "--decay-min-rank") {
    // A rank is an integer: "2.5" or "1e1" is a typo, not rank 2 or 10.
    if (i + 1 >= args.size() ||
        !parseInteger(args[i + 1], 0, 63, opt.decayMinRank))
      error = a + " needs " + integerRangeText(0, 63);
    else
      ++i;
    return true;
  }
  if (a == "--optimizer") {
    if (i + 1 >= args.size() ||
        (args[i + 1] != "adamw" && args[i + 1] != "sgd"))
      error = "--optimizer needs adamw or sgd";
    else
      opt.kind = args[++i];
    return true;
  }
  for (Number &n : numbers) {
    if (a != n.flag)
      continue;
    double v = 0;
    if (i + 1 >= args.size() || llvm::StringRef(args[i + 1]).getAsDouble(v) ||
        !(v >= n.min && v < n.max)) {
      error = a + " needs " + n.range;
      return true;
    }
    *n.value = v;
    ++i;
    return true;
  }
  return false;
}

const char *const kPrecisionOptionsHelp =
    "  --precision fp32|bf16|fp16|tf32\n"
    "                         bf16: PyTorch autocast's mixed precision "
    "(matmuls\n"
    "                         and attention in bf16, the rest and the "
    "optimizer in\n"
    "                         fp32; docs/precision.md); fp16: the same in "
    "fp16 with\n"
    "                         dynamic loss scaling; tf32: f32 tensors, TF32 "
    "matmuls;\n"
    "                         default fp32\n"
    "  --loss-scale-init S    fp16: the initial loss scale (default 65536)\n"
    "  --loss-scale-growth-interval N\n"
    "                         fp16: clean steps before the scale doubles "
    "(2000)\n"
    "  --no-pad               keep every dim as the model has it (no\n"
    "                         nice-number padding, docs/padding.md)\n";

bool parsePrecisionOption(const Args &args, size_t &i, PrecisionConfig &p,
                          std::string &error) {
  const std::string &a = args[i];
  if (a == "--no-pad" || a == "--pad-always") {
    // --pad-always is for tests: pad every dim the ops allow, even where
    // the cost model says it does not pay (docs/padding.md); not in --help.
    (a == "--no-pad" ? p.pad : p.padAlways) = a != "--no-pad";
    return true;
  }
  if (a == "--pad-dims") {
    // Also for tests: sizes padded whatever the cost model says, where the
    // ops allow (docs/padding.md); the pass checks the list.
    if (i + 1 >= args.size())
      error = "--pad-dims needs a list FROM:TO,... (e.g. 40:48,200:256)";
    else
      p.padDims = args[++i];
    return true;
  }
  if (a == "--loss-scale-init" || a == "--loss-scale-growth-interval") {
    double v = 0;
    bool interval = a == "--loss-scale-growth-interval";
    if (i + 1 >= args.size() || llvm::StringRef(args[i + 1]).getAsDouble(v) ||
        !(v > 0 && v < 3.0e38) || (interval && v != static_cast<int64_t>(v))) {
      error = a + (interval ? " needs a whole number of steps >= 1"
                            : " needs a scale > 0 (a finite f32)");
      return true;
    }
    ++i;
    if (interval)
      p.lossScaleGrowthInterval = static_cast<int64_t>(v);
    else
      p.lossScaleInit = v;
    return true;
  }
  if (a == "--attention-backend") {
    const std::string v = i + 1 < args.size() ? args[i + 1] : "";
    if (v != "auto" && v != "generated" && v != "cudnn")
      error = "--attention-backend needs auto, generated or cudnn" +
              (i + 1 < args.size() ? ", got '" + v + "'" : std::string());
    else
      p.attentionBackend = v;
    i += i + 1 < args.size() ? 1 : 0;
    return true;
  }
  if (a == "--attention-backward") {
    const std::string v = i + 1 < args.size() ? args[i + 1] : "";
    if (v != "deterministic" && v != "atomic")
      error = "--attention-backward needs deterministic or atomic" +
              (i + 1 < args.size() ? ", got '" + v + "'" : std::string());
    else
      p.deterministicAttention = v == "deterministic";
    i += i + 1 < args.size() ? 1 : 0;
    return true;
  }
  // --precision-mutation is for the mutation test only (docs/precision.md):
  // it plants a known mistake in the policy and is not in --help.
  if (a != "--precision" && a != "--precision-mutation")
    return false;
  if (i + 1 >= args.size()) {
    error = a + " needs a value";
    return true;
  }
  const std::string &v = args[++i];
  if (a == "--precision-mutation") {
    p.mutation = v;
    return true;
  }
  if (v != "fp32" && v != "bf16" && v != "fp16" && v != "tf32")
    error = "--precision needs fp32, bf16, fp16 or tf32, got '" + v + "'";
  else
    p.precision = v;
  return true;
}

} // namespace llmc
