//===- ModelArguments.cpp - Parameters and inputs of a model function -----===//
//
// Parameters: `llmc.init` is read through AttrTensors (dense or resource
// blob); `llmc.init_rule` is generated here with the seeded normal stream
// that docs/reference-evaluator.md specifies. Inputs are matched by their
// `llmc.input` name and must have the argument's exact shape.
//
//===----------------------------------------------------------------------===//
#include "compiler/eval/ModelArguments.h"
#include "compiler/eval/AttrTensors.h"
#include "compiler/eval/EvalMemory.h"
#include "compiler/eval/Evaluator.h"
#include "runtime/Padding.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <cstdlib>

using namespace mlir;

namespace llmc {

namespace {

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a64(const std::string &s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s)
    h = (h ^ c) * 0x100000001B3ull;
  return h;
}

std::string argName(func::FuncOp func, unsigned i) {
  for (StringRef attr : {"llmc.input", "llmc.param"})
    if (auto name = func.getArgAttrOfType<StringAttr>(i, attr))
      return name.getValue().str();
  return "#" + std::to_string(i);
}

/// The argument's type as an empty RefTensor (kind and shape), if the
/// evaluator supports it.
std::optional<RefTensor> argumentType(func::FuncOp func, unsigned i,
                                      std::string &error) {
  auto type = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
  std::optional<ElementKind> kind =
      type ? kindOf(type.getElementType()) : std::nullopt;
  if (!type || !kind || !type.hasStaticShape()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << func.getArgument(i).getType();
    error = "argument '" + argName(func, i) + "' has type " + text +
            "; the reference evaluator needs a static tensor of a supported "
            "element type (specialize shapes first)";
    return std::nullopt;
  }
  // Checked before any caller allocates a tensor of this shape.
  if (std::string why = evalAllocationError(type.getShape()); !why.empty()) {
    error = "argument '" + argName(func, i) + "' " + why;
    return std::nullopt;
  }
  RefTensor t;
  t.kind = *kind;
  t.shape.assign(type.getShape().begin(), type.getShape().end());
  return t;
}

} // namespace

void normalSampleRange(uint64_t seed, const std::string &name, int64_t begin,
                       int64_t count, double *out) {
  uint64_t state = (seed ^ fnv1a64(name)) +
                   static_cast<uint64_t>(begin) * 0x9E3779B97F4A7C15ull;
  for (int64_t i = 0; i < count; i += 2) {
    double u1 = static_cast<double>(splitmix64(state) >> 11) * 0x1p-53;
    double u2 = static_cast<double>(splitmix64(state) >> 11) * 0x1p-53;
    double radius = std::sqrt(-2.0 * std::log(1.0 - u1));
    out[i] = radius * std::cos(2.0 * M_PI * u2);
    if (i + 1 < count)
      out[i + 1] = radius * std::sin(2.0 * M_PI * u2);
  }
}

std::vector<double> normalSamples(uint64_t seed, const std::string &name,
                                  int64_t n) {
  std::vector<double> out(n);
  normalSampleRange(seed, name, 0, n, out.data());
  return out;
}

std::optional<std::vector<int64_t>> realShapeOf(func::FuncOp func,
                                                unsigned index) {
  auto real = func.getArgAttrOfType<DenseI64ArrayAttr>(index, "llmc.real_shape");
  if (!real)
    return std::nullopt;
  return std::vector<int64_t>(real.asArrayRef().begin(),
                              real.asArrayRef().end());
}

namespace {

/// The initial value at `type`'s shape (the real one of a padded parameter).
std::optional<RefTensor> initialValue(func::FuncOp func, unsigned index,
                                      std::optional<RefTensor> type,
                                      uint64_t seed, std::string &error) {
  std::string name = argName(func, index);
  if (auto init = func.getArgAttrOfType<ElementsAttr>(index, "llmc.init")) {
    auto t = tensorFromAttr(init, error);
    if (!t) {
      error = "parameter '" + name + "': llmc.init: " + error;
      return std::nullopt;
    }
    if (t->kind != type->kind || t->shape != type->shape) {
      error = "parameter '" + name + "': llmc.init is " + t->typeString() +
              " but the argument is " + type->typeString();
      return std::nullopt;
    }
    return t;
  }
  auto rule = func.getArgAttrOfType<StringAttr>(index, "llmc.init_rule");
  if (!rule) {
    error = "parameter '" + name + "' has neither llmc.init nor llmc.init_rule";
    return std::nullopt;
  }
  StringRef text = rule.getValue();
  RefTensor t(type->kind, type->shape);
  std::vector<double> values(t.numElements(), 0.0);
  double stddev = 0;
  if (text == "ones") {
    values.assign(values.size(), 1.0);
  } else if (text.consume_front("normal(") && text.consume_back(")") &&
             !text.trim().getAsDouble(stddev) && stddev >= 0) {
    values = normalSamples(seed, name, t.numElements());
    for (double &v : values)
      v *= stddev;
  } else if (text != "zeros") {
    error = "parameter '" + name + "': unknown llmc.init_rule \"" +
            rule.getValue().str() +
            "\" (expected \"normal(STD)\", \"zeros\" or \"ones\")";
    return std::nullopt;
  }
  if (!t.isFloat() && rule.getValue() == "zeros")
    return t; // integer state such as the optimizer's step count
  if (!t.isFloat()) {
    error = "parameter '" + name +
            "': llmc.init_rule needs a float type, got " + t.typeString();
    return std::nullopt;
  }
  return RefTensor::fromFloats(t.kind, t.shape, std::move(values));
}

} // namespace

std::optional<RefTensor> initialParameter(func::FuncOp func, unsigned index,
                                          uint64_t seed, std::string &error) {
  auto type = argumentType(func, index, error);
  if (!type)
    return std::nullopt;
  std::optional<std::vector<int64_t>> real = realShapeOf(func, index);
  if (!real)
    return initialValue(func, index, type, seed, error);
  // A padded parameter (llmc-pad-shapes): its real value, zero-padded, so
  // that the real part is the same with and without padding.
  RefTensor padded = *type;
  type->shape = *real;
  auto value = initialValue(func, index, type, seed, error);
  if (!value)
    return std::nullopt;
  padded = RefTensor(padded.kind, padded.shape);
  Status s = value->isFloat()
                 ? padValues(value->floats, *real, padded.shape, padded.floats)
                 : padValues(value->ints, *real, padded.shape, padded.ints);
  if (!s) {
    error = "parameter '" + argName(func, index) + "': " + s.message();
    return std::nullopt;
  }
  return padded;
}

std::optional<std::map<std::string, RefTensor>>
expectedInputs(func::FuncOp func, std::string &error) {
  std::map<std::string, RefTensor> expected;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto name = func.getArgAttrOfType<StringAttr>(i, "llmc.input");
    if (!name)
      continue;
    auto t = argumentType(func, i, error);
    if (!t)
      return std::nullopt;
    expected[name.getValue().str()] = *t;
  }
  return expected;
}

std::optional<std::vector<RefTensor>> buildArguments(func::FuncOp func,
                                                     const InputMap &inputs,
                                                     uint64_t seed,
                                                     std::string &error) {
  std::vector<RefTensor> args;
  std::map<std::string, bool> used;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto inputName = func.getArgAttrOfType<StringAttr>(i, "llmc.input");
    if (!inputName) {
      if (!func.getArgAttr(i, "llmc.param") &&
          !func.getArgAttr(i, "llmc.state")) {
        error = "argument #" + std::to_string(i) +
                " has none of llmc.param, llmc.state and llmc.input "
                "(docs/model-ir.md)";
        return std::nullopt;
      }
      auto t = initialParameter(func, i, seed, error);
      if (!t)
        return std::nullopt;
      args.push_back(std::move(*t));
      continue;
    }
    std::string name = inputName.getValue().str();
    auto type = argumentType(func, i, error);
    if (!type)
      return std::nullopt;
    auto it = inputs.find(name);
    if (it == inputs.end()) {
      error = "missing input '" + name + "' (" + type->typeString() +
              ") in the inputs file";
      return std::nullopt;
    }
    if (it->second.shape != type->shape) {
      error = "input '" + name + "' has shape " +
              shapeString(it->second.shape) + " but the model expects " +
              shapeString(type->shape);
      return std::nullopt;
    }
    if (it->second.kind != type->kind) {
      error = "input '" + name + "' has element type " +
              kindName(it->second.kind) + " but the model expects " +
              kindName(type->kind);
      return std::nullopt;
    }
    used[name] = true;
    args.push_back(it->second);
  }
  for (auto &[name, t] : inputs)
    if (!used.count(name)) {
      error = "the inputs file has '" + name +
              "', which is not an input of the model";
      return std::nullopt;
    }
  return args;
}

} // namespace llmc
