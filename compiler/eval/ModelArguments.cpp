//===- ModelArguments.cpp - Parameters and inputs of a model function -----===//
//
// Parameters: `llmc.init` is read through AttrTensors (dense or resource
// blob); `llmc.init_rule` is drawn from the seeded normal stream that
// docs/reference-evaluator.md specifies (compiler/common/ParameterInit.h,
// which codegen draws from too). Inputs are matched by their
// `llmc.input` name and must have the argument's exact shape.
//
//===----------------------------------------------------------------------===//
#include "compiler/eval/ModelArguments.h"
#include "compiler/eval/AttrTensors.h"
#include "compiler/eval/EvalMemory.h"
#include "compiler/eval/Evaluator.h"
#include "runtime/Padding.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cstdlib>

using namespace mlir;

namespace llmc {

namespace {

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
    error = "argument '" + argumentName(func, i) + "' has type " + text +
            "; the reference evaluator needs a static tensor of a supported "
            "element type (specialize shapes first)";
    return std::nullopt;
  }
  // Checked before any caller allocates a tensor of this shape.
  if (std::string why = evalAllocationError(type.getShape()); !why.empty()) {
    error = "argument '" + argumentName(func, i) + "' " + why;
    return std::nullopt;
  }
  RefTensor t;
  t.kind = *kind;
  t.shape.assign(type.getShape().begin(), type.getShape().end());
  return t;
}

/// The initial value at `type`'s shape (the real one of a padded parameter).
std::optional<RefTensor> initialValue(func::FuncOp func, unsigned index,
                                      std::optional<RefTensor> type,
                                      uint64_t seed, std::string &error) {
  std::string name = argumentName(func, index);
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
  std::optional<InitRule> parsed = parseInitRule(rule.getValue());
  if (!parsed) {
    error = unknownInitRuleError(name, rule.getValue());
    return std::nullopt;
  }
  RefTensor t(type->kind, type->shape);
  std::vector<double> values(t.numElements(), 0.0);
  if (parsed->kind == InitRule::Kind::Ones) {
    values.assign(values.size(), 1.0);
  } else if (parsed->kind == InitRule::Kind::Normal) {
    values = normalSamples(seed, name, t.numElements());
    for (double &v : values)
      v *= parsed->stddev;
  }
  if (!t.isFloat() && parsed->kind == InitRule::Kind::Zeros)
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
    error = "parameter '" + argumentName(func, index) + "': " + s.message();
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
