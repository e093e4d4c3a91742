//===- ShareKernels.cpp - One kernel for launches with the same code ------===//
#include "compiler/codegen/ShareKernels.h"

#include <map>
#include <tuple>
#include <variant>

namespace llmc::codegen {

namespace {

bool isIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_';
}

} // namespace

std::string canonicalKernelSource(const std::string &source,
                                  const std::string &entry) {
  // The header comment names the op and its node; it says nothing NVRTC
  // compiles.
  size_t pos = 0;
  while (pos < source.size()) {
    size_t first = source.find_first_not_of(" \t", pos);
    if (first == std::string::npos || source.compare(first, 2, "//") != 0)
      break;
    size_t end = source.find('\n', first);
    pos = end == std::string::npos ? source.size() : end + 1;
  }
  std::string out;
  out.reserve(source.size() - pos);
  for (size_t i = pos; i < source.size();) {
    bool atWord = !entry.empty() && source.compare(i, entry.size(), entry) == 0 &&
                  (i == 0 || !isIdentChar(source[i - 1])) &&
                  (i + entry.size() >= source.size() ||
                   !isIdentChar(source[i + entry.size()]));
    if (atWord) {
      out += "__llmc_kernel__";
      i += entry.size();
    } else {
      out += source[i++];
    }
  }
  return out;
}

size_t shareIdenticalKernels(Plan &plan) {
  using Key = std::tuple<std::string, bool, std::vector<std::string>>;
  std::map<Key, uint32_t> firstOf; // canonical form -> index in `kept`
  std::vector<KernelInfo> kept;
  std::vector<uint32_t> newIndex(plan.kernels.size());
  std::vector<size_t> sharers;
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    KernelInfo &k = plan.kernels[i];
    // A kernel without source (a hand-made plan holding only a cubin) is
    // kept as it is: nothing says what it computes.
    if (k.source.empty()) {
      newIndex[i] = static_cast<uint32_t>(kept.size());
      kept.push_back(std::move(k));
      sharers.push_back(1);
      continue;
    }
    Key key{canonicalKernelSource(k.source, k.entry), k.fastMath, k.options};
    auto [it, inserted] =
        firstOf.try_emplace(std::move(key), static_cast<uint32_t>(kept.size()));
    newIndex[i] = it->second;
    if (inserted) {
      kept.push_back(std::move(k));
      sharers.push_back(1);
    } else {
      ++sharers[it->second];
    }
  }
  size_t removed = plan.kernels.size() - kept.size();
  for (size_t i = 0; i < kept.size(); ++i)
    if (sharers[i] > 1)
      kept[i].origin += " (code shared by " + std::to_string(sharers[i]) +
                        " launches; each step's label names its op)";
  plan.kernels = std::move(kept);
  for (Step &step : plan.steps)
    if (auto *launch = std::get_if<LaunchStep>(&step.op))
      launch->kernel = newIndex[launch->kernel];
  return removed;
}

} // namespace llmc::codegen
