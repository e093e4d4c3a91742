//===- DimBindings.cpp - Values of a graph's symbolic dims ----------------===//
#include "frontends/json/DimBindings.h"
#include "runtime/ParseInteger.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace llmc::json {

bool isDimName(const std::string &name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return false;
  return true;
}

std::optional<DimOverride> parseDimOverride(const std::string &spec,
                                            std::string &error) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos) {
    error = "expected NAME=VALUE, got '" + spec + "'";
    return std::nullopt;
  }
  DimOverride o;
  o.name = spec.substr(0, eq);
  std::string value = spec.substr(eq + 1);
  if (!isDimName(o.name)) {
    error = "'" + o.name + "' is not a dim name (letters, digits and _)";
    return std::nullopt;
  }
  // Strict: strtoll would take " 5" and "+5"; a dim past 2^40 makes a
  // tensor past kMaxTensorBytes whatever its other dims.
  int64_t v = 0;
  if (!::llmc::parseInteger(value, 1, int64_t(1) << 40, v)) {
    error = "the value of " + o.name + " must be a positive integer, got '" +
            value + "'";
    return std::nullopt;
  }
  o.value = v;
  return o;
}

bool DimBindings::addDefault(const std::string &name, int64_t value,
                             std::string &error) {
  if (!isDimName(name)) {
    error = "'" + name + "' is not a dim name (letters, digits and _)";
    return false;
  }
  if (value <= 0) {
    error = "must be a positive integer, got " + std::to_string(value);
    return false;
  }
  defaults[name] = value;
  return true;
}

std::optional<int64_t> DimBindings::resolve(const std::string &name) {
  used.insert(name);
  if (auto it = overrides.find(name); it != overrides.end())
    return it->second;
  if (auto it = defaults.find(name); it != defaults.end())
    return it->second;
  return std::nullopt;
}

std::vector<std::string> DimBindings::unusedOverrides() const {
  std::vector<std::string> result;
  for (const auto &[name, value] : overrides)
    if (!defaults.count(name) && !used.count(name))
      result.push_back(name);
  return result;
}

std::vector<std::string> DimBindings::knownNames() const {
  std::set<std::string> names(used);
  for (const auto &[name, value] : defaults)
    names.insert(name);
  return {names.begin(), names.end()};
}

std::map<std::string, int64_t> DimBindings::usedValues() const {
  std::map<std::string, int64_t> result;
  for (const std::string &name : used) {
    if (auto it = overrides.find(name); it != overrides.end())
      result[name] = it->second;
    else if (auto it = defaults.find(name); it != defaults.end())
      result[name] = it->second;
  }
  return result;
}

} // namespace llmc::json
