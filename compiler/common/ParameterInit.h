//===- ParameterInit.h - How a parameter's initial value is drawn C++ -*-===//
//
// The initial value of a parameter is its `llmc.init` attribute or its
// `llmc.init_rule` ("zeros", "ones", "normal(STD)") drawn from a stream
// keyed by the seed and the parameter's name (docs/reference-evaluator.md).
// The reference evaluator (ModelArguments.h) draws it into doubles and
// codegen (DeviceBytes.h) straight into device bytes; both read the rule and
// draw the stream here, so that CPU and GPU training start from the same
// weights bit for bit (test/unit/CodegenDeviceBytesTest.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_COMMON_PARAMETERINIT_H
#define LLMC_COMPILER_COMMON_PARAMETERINIT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llmc {

/// The name argument `index` of `func` is known by in messages and by which
/// its stream is keyed: its `llmc.input` or `llmc.param`, else "#index".
std::string argumentName(mlir::func::FuncOp func, unsigned index);

/// The `llmc.real_shape` of argument `index`: the model's own shape of a
/// parameter that llmc-pad-shapes padded (docs/padding.md).
std::optional<std::vector<int64_t>> realShapeOf(mlir::func::FuncOp func,
                                                unsigned index);

/// An `llmc.init_rule`.
struct InitRule {
  enum class Kind { Zeros, Ones, Normal };
  Kind kind = Kind::Zeros;
  double stddev = 0; // Normal: N(0, stddev^2)
};

/// The rule `text` spells; nullopt when it is none of "zeros", "ones" and
/// "normal(STD)" with STD >= 0.
std::optional<InitRule> parseInitRule(llvm::StringRef text);

/// The message of a rule parseInitRule rejects, for parameter `name`.
std::string unknownInitRuleError(const std::string &name, llvm::StringRef text);

namespace detail {
inline uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
uint64_t fnv1a64(const std::string &s);
} // namespace detail

/// Calls `f(i, x)` for samples i in [begin, begin + count) (begin even) of
/// the N(0, 1) stream of parameter `name` under `seed`. The stream is
/// splitmix64 seeded with seed ^ fnv1a64(name); each pair of 53-bit uniforms
/// (u1, u2) gives sqrt(-2 ln(1 - u1)) * (cos, sin)(2 pi u2) (Box-Muller).
/// splitmix64's state after k draws is its seed plus k times its increment,
/// so any range is drawn without the ones before it (parallel fills).
/// Deterministic across platforms that have IEEE double and a correctly
/// rounded libm for log/sqrt/cos/sin within the usual ulp.
template <typename Fn>
void forEachNormalSample(uint64_t seed, const std::string &name, int64_t begin,
                         int64_t count, Fn f) {
  uint64_t state = (seed ^ detail::fnv1a64(name)) +
                   static_cast<uint64_t>(begin) * 0x9E3779B97F4A7C15ull;
  for (int64_t i = 0; i < count; i += 2) {
    double u1 = static_cast<double>(detail::splitmix64(state) >> 11) * 0x1p-53;
    double u2 = static_cast<double>(detail::splitmix64(state) >> 11) * 0x1p-53;
    double radius = std::sqrt(-2.0 * std::log(1.0 - u1));
    f(begin + i, radius * std::cos(2.0 * M_PI * u2));
    if (i + 1 < count)
      f(begin + i + 1, radius * std::sin(2.0 * M_PI * u2));
  }
}

/// Samples [begin, begin + count) of that stream (begin even) into `out`.
void normalSampleRange(uint64_t seed, const std::string &name, int64_t begin,
                       int64_t count, double *out);

/// The first `n` samples of that stream.
std::vector<double> normalSamples(uint64_t seed, const std::string &name,
                                  int64_t n);

} // namespace llmc

#endif // LLMC_COMPILER_COMMON_PARAMETERINIT_H
