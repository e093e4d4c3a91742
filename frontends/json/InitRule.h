//===- InitRule.h - Parameter initialization rules --------------*- C++ -*-===//
//
// The `init` of a JSON parameter is a rule ("normal(0.02)", "zeros", "ones")
// that becomes the `llmc.init_rule` argument attribute (docs/model-ir.md), or
// a tensor in a safetensors file. Rules are parsed here, without MLIR, and
// written back in one canonical spelling so that equal rules compare equal.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_FRONTENDS_JSON_INITRULE_H
#define LLMC_FRONTENDS_JSON_INITRULE_H

#include <optional>
#include <string>

namespace llmc::json {

struct InitRule {
  enum class Kind { Normal, Zeros, Ones };
  Kind kind = Kind::Zeros;
  double stddev = 0.0; // Normal only: N(0, stddev^2)

  static InitRule normal(double stddev) { return {Kind::Normal, stddev}; }
  static InitRule zeros() { return {Kind::Zeros, 0.0}; }
  static InitRule ones() { return {Kind::Ones, 0.0}; }

  /// The canonical spelling: "zeros", "ones", "normal(0.02)" (the shortest
  /// decimal that reads back as the same double).
  std::string str() const;
};

/// Parses a rule; whitespace around tokens is allowed. On failure returns
/// nullopt and sets `error` to what is wrong and what is accepted.
std::optional<InitRule> parseInitRule(const std::string &text,
                                      std::string &error);

/// The shortest "%g" spelling of `v` that parses back to exactly `v`.
std::string shortestDouble(double v);

} // namespace llmc::json

#endif // LLMC_FRONTENDS_JSON_INITRULE_H
