//===- InputFiles.cpp - Batch files for `llmc run --inputs` ---------------===//
//
// JSON: `{"idx": [[1, 2], [3, 4]], "tgt": ...}`, nested lists keyed by input
// name; the nesting gives the shape and must be rectangular. Float inputs
// accept numbers and the strings "nan", "inf", "-inf"; integer inputs need
// integers; i1 inputs take true/false or 0/1.
// safetensors: each tensor's dtype must be of the same class (float, integer,
// bool) as the input's element type; values convert exactly within a class
// (floats round to the input's format).
//
//===----------------------------------------------------------------------===//
#include "compiler/eval/ModelArguments.h"

#include "runtime/Safetensors.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

namespace llmc {

namespace {

/// Flattens nested JSON lists into `t`, recording the shape from the first
/// element at each depth.
bool flattenJson(const nlohmann::json &j, size_t depth, RefTensor &t,
                 std::vector<double> &floats, std::string &error) {
  if (j.is_array()) {
    if (depth == t.shape.size())
      t.shape.push_back(static_cast<int64_t>(j.size()));
    else if (depth > t.shape.size() ||
             t.shape[depth] != static_cast<int64_t>(j.size())) {
      error = "nested lists are not rectangular (a list of " +
              std::to_string(j.size()) + " at depth " + std::to_string(depth) +
              ")";
      return false;
    }
    for (const auto &e : j)
      if (!flattenJson(e, depth + 1, t, floats, error))
        return false;
    return true;
  }
  if (depth != t.shape.size()) {
    error = "nested lists are not rectangular (a value at depth " +
            std::to_string(depth) + ")";
    return false;
  }
  if (t.kind == ElementKind::I1 && j.is_boolean()) {
    t.ints.push_back(j.get<bool>());
  } else if (!t.isFloat()) {
    if (!j.is_number_integer()) {
      error = "expected an integer for " + std::string(kindName(t.kind)) +
              ", got " + j.dump();
      return false;
    }
    int64_t v = j.get<int64_t>();
    if (wrapToKind(v, t.kind) != v) {
      error = "value " + j.dump() + " does not fit " + kindName(t.kind);
      return false;
    }
    t.ints.push_back(v);
  } else if (j.is_number()) {
    floats.push_back(j.get<double>());
  } else if (j.is_string() && (j == "nan" || j == "inf" || j == "-inf")) {
    floats.push_back(j == "nan"   ? std::numeric_limits<double>::quiet_NaN()
                     : j == "inf" ? std::numeric_limits<double>::infinity()
                                  : -std::numeric_limits<double>::infinity());
  } else {
    error = "expected a number for " + std::string(kindName(t.kind)) +
            ", got " + j.dump();
    return false;
  }
  return true;
}

std::optional<InputMap>
readJsonInputs(const std::string &path,
               const std::map<std::string, RefTensor> &expected,
               std::string &error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot open '" + path + "'";
    return std::nullopt;
  }
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    error = "'" + path + "' is not a JSON object of inputs";
    return std::nullopt;
  }
  InputMap inputs;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    auto want = expected.find(it.key());
    if (want == expected.end()) {
      error = "the inputs file has '" + it.key() +
              "', which is not an input of the model";
      return std::nullopt;
    }
    RefTensor t;
    t.kind = want->second.kind;
    std::vector<double> floats;
    if (!flattenJson(it.value(), 0, t, floats, error)) {
      error = "input '" + it.key() + "': " + error;
      return std::nullopt;
    }
    if (t.isFloat())
      t = RefTensor::fromFloats(t.kind, t.shape, std::move(floats));
    inputs[it.key()] = std::move(t);
  }
  return inputs;
}

/// Decodes one safetensors tensor into `kind` (same class only).
bool convertSafeTensor(const SafeTensor &s, ElementKind kind, RefTensor &t,
                       std::string &error) {
  bool srcFloat = s.dtype[0] == 'F' || s.dtype == "BF16";
  bool srcBool = s.dtype == "BOOL";
  bool dstBool = kind == ElementKind::I1;
  if (srcFloat != isFloatKind(kind) || srcBool != dstBool) {
    error = "has dtype " + s.dtype + " but the model expects " + kindName(kind);
    return false;
  }
  t = RefTensor(kind, s.shape);
  size_t width = safetensorsDtypeSize(s.dtype);
  for (int64_t i = 0, n = t.numElements(); i < n; ++i) {
    uint64_t raw = 0;
    for (size_t b = 0; b < width; ++b)
      raw |= static_cast<uint64_t>(s.data[i * width + b]) << (8 * b);
    if (srcFloat) {
      double v;
      if (s.dtype == "F64")
        std::memcpy(&v, &raw, 8);
      else
        v = bitsToFloat(static_cast<uint32_t>(raw),
                        s.dtype == "F32"       ? FloatFormat::F32
                        : s.dtype == "F16"     ? FloatFormat::F16
                        : s.dtype == "BF16"    ? FloatFormat::BF16
                        : s.dtype == "F8_E4M3" ? FloatFormat::F8E4M3FN
                                               : FloatFormat::F8E5M2);
      t.floats[i] = roundToFormat(v, floatFormatOf(kind));
      continue;
    }
    int64_t v;
    if (s.dtype[0] == 'U' || srcBool)
      v = static_cast<int64_t>(raw);
    else // sign-extend from the dtype's width
      v = static_cast<int64_t>(raw << (64 - 8 * width)) >> (64 - 8 * width);
    if (wrapToKind(v, kind) != v) {
      error = "value " + std::to_string(v) + " (element " + std::to_string(i) +
              ") does not fit " + kindName(kind);
      return false;
    }
    t.ints[i] = v;
  }
  return true;
}

std::optional<InputMap>
readSafetensorsInputs(const std::string &path,
                      const std::map<std::string, RefTensor> &expected,
                      std::string &error) {
  std::vector<SafeTensor> tensors;
  Status s = readSafetensors(path, tensors);
  if (!s) {
    error = s.message();
    return std::nullopt;
  }
  InputMap inputs;
  for (const SafeTensor &st : tensors) {
    auto want = expected.find(st.name);
    if (want == expected.end()) {
      error = "the inputs file has '" + st.name +
              "', which is not an input of the model";
      return std::nullopt;
    }
    RefTensor t;
    if (!convertSafeTensor(st, want->second.kind, t, error)) {
      error = "input '" + st.name + "' " + error;
      return std::nullopt;
    }
    inputs[st.name] = std::move(t);
  }
  return inputs;
}

} // namespace

std::optional<InputMap>
readInputFile(const std::string &path,
              const std::map<std::string, RefTensor> &expected,
              std::string &error) {
  auto endsWith = [&](const std::string &suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) ==
               0;
  };
  if (endsWith(".safetensors"))
    return readSafetensorsInputs(path, expected, error);
  return readJsonInputs(path, expected, error);
}

} // namespace llmc
