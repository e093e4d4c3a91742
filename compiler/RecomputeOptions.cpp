//===- RecomputeOptions.cpp - --memory-budget and --recompute -------------===//
//
// The activation checkpointing options shared by `llmc compile`, `train`
// and `verify` (docs/memory.md, "Rematerialization"): a budget as a size
// (`40GiB`, `900MiB`, `123456789`) or as a fraction of the GPU's memory
// (`0.5`), and `--recompute all` (every candidate, no planning: what
// `llmc verify` uses to check recomputation itself).
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile.h"
#include "runtime/Nvrtc.h"

#include <cmath>
#include <cstdlib>

namespace llmc {

const char *const kRecomputeOptionsHelp =
    "  --memory-budget SIZE   recompute forward values in the backward until "
    "the\n"
    "                         planned device memory fits SIZE: 40GiB, "
    "900MiB, bytes,\n"
    "                         or a fraction of the GPU's memory (0.5); "
    "docs/memory.md\n"
    "  --recompute all        recompute every saved activation the budget "
    "search\n"
    "                         could (tests: results must not change)\n"
    "  --classifier-chunks K  compute the classifier's logits K chunks of "
    "tokens at\n"
    "                         a time (1: whole; default: as the memory plan "
    "and the\n"
    "                         budget need, docs/memory.md)\n";

bool parseMemorySize(const std::string &text, uint64_t totalMemory,
                     uint64_t &bytes, std::string &error) {
  const char *begin = text.c_str();
  char *end = nullptr;
  double value = std::strtod(begin, &end);
  std::string unit(end ? end : "");
  bool number = end != begin && !text.empty() && std::isfinite(value) &&
                value > 0 && text[0] != '-' && text[0] != '+';
  static const std::pair<const char *, double> kUnits[] = {
      {"", 1},          {"B", 1},
      {"KiB", 1024.0},  {"MiB", 1024.0 * 1024},
      {"GiB", 1024.0 * 1024 * 1024}, {"TiB", 1024.0 * 1024 * 1024 * 1024},
      {"KB", 1e3},      {"MB", 1e6},
      {"GB", 1e9},      {"TB", 1e12}};
  double scale = 0;
  for (const auto &[name, factor] : kUnits)
    if (unit == name)
      scale = factor;
  if (!number || scale == 0) {
    error = "--memory-budget needs a size (40GiB, 900MiB, a number of "
            "bytes) or a fraction of the GPU's memory (0.5), got '" +
            text + "'";
    return false;
  }
  if (unit.empty() && value < 1) {
    if (totalMemory == 0) {
      error = "--memory-budget " + text +
              " is a fraction of the GPU's memory, and no GPU was found; "
              "give a size (40GiB)";
      return false;
    }
    value *= static_cast<double>(totalMemory);
    scale = 1;
  } else if (unit.empty() && value != std::floor(value)) {
    error = "--memory-budget " + text +
            ": a fraction of the GPU's memory is below 1 (0.5), and bytes "
            "are a whole number";
    return false;
  }
  double result = value * scale;
  if (result >= 18446744073709551615.0 || result < 1) {
    error = "--memory-budget " + text + " is out of range";
    return false;
  }
  bytes = static_cast<uint64_t>(result);
  return true;
}

bool recomputeFromText(const std::string &text, RecomputeConfig &r,
                       std::string &error) {
  r = RecomputeConfig();
  if (text.empty())
    return true;
  if (text == "all") {
    r.levels = INT64_MAX;
    return true;
  }
  bool fraction = text.find_first_not_of("0123456789.") == std::string::npos &&
                  std::strtod(text.c_str(), nullptr) < 1;
  return parseMemorySize(text, fraction ? detectTotalMemory() : 0, r.budget,
                         error);
}

bool parseRecomputeOption(const Args &args, size_t &i, RecomputeConfig &r,
                          std::string &error) {
  const std::string &a = args[i];
  if (a != "--memory-budget" && a != "--recompute" &&
      a != "--classifier-chunks")
    return false;
  if (i + 1 >= args.size()) {
    error = a + " needs a value";
    return true;
  }
  const std::string &value = args[++i];
  if (a == "--classifier-chunks") {
    char *end = nullptr;
    long long k = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || k < 1 || k > 4096)
      error = "--classifier-chunks takes a number of chunks from 1 (the "
              "whole classifier) to 4096, got '" + value + "'";
    else
      r.classifierChunks = k;
    return true;
  }
  if (a == "--recompute") {
    if (value != "all")
      error = "--recompute takes 'all' (every saved activation), got '" +
              value + "'; --memory-budget chooses by memory";
    else
      r.levels = INT64_MAX;
    return true;
  }
  (void)recomputeFromText(value, r, error);
  return true;
}

} // namespace llmc
