//===- DimBindings.h - Values of a graph's symbolic dims --------*- C++ -*-===//
//
// A JSON graph writes shapes with symbolic dims ("batch", "seq"). The graph's
// "dims" object gives each a default and `--shape NAME=VALUE` overrides it;
// the importer binds every symbol, so the imported IR has static shapes.
// This file is free of MLIR so that its rules are unit-tested on their own.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_FRONTENDS_JSON_DIMBINDINGS_H
#define LLMC_FRONTENDS_JSON_DIMBINDINGS_H

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace llmc::json {

/// One `--shape NAME=VALUE` option.
struct DimOverride {
  std::string name;
  int64_t value = 0;
};

/// Parses "NAME=VALUE" (VALUE a positive integer, NAME an identifier). On
/// failure returns nullopt and sets `error`.
std::optional<DimOverride> parseDimOverride(const std::string &spec,
                                            std::string &error);

/// True for names a symbolic dim may have: [A-Za-z_][A-Za-z0-9_]*.
bool isDimName(const std::string &name);

class DimBindings {
public:
  /// Records the graph's default for `name`; false (with `error`) when the
  /// name is not an identifier or the value is not positive.
  bool addDefault(const std::string &name, int64_t value, std::string &error);

  /// Records a `--shape` override; a later override of the same name wins.
  void addOverride(const DimOverride &o) { overrides[o.name] = o.value; }

  /// The value of `name`: its override, else its default. Marks it used.
  std::optional<int64_t> resolve(const std::string &name);

  /// Overrides that name no dim the graph declares or uses; call after the
  /// whole graph is read. A typo in --shape must not pass silently.
  std::vector<std::string> unusedOverrides() const;

  /// Declared and used dim names, sorted, for messages.
  std::vector<std::string> knownNames() const;

  /// The bound values of the dims the graph used, by name.
  std::map<std::string, int64_t> usedValues() const;

private:
  std::map<std::string, int64_t> defaults;
  std::map<std::string, int64_t> overrides;
  std::set<std::string> used;
};

} // namespace llmc::json

#endif // LLMC_FRONTENDS_JSON_DIMBINDINGS_H
