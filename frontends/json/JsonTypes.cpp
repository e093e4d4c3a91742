//===- JsonTypes.cpp - JSON values to MLIR types and attributes -----------===//
//
// dtypes ("f32", "i64", ...), shapes with symbolic dims, op attributes by
// kind (OpSignatures.h) and constant values. Every function reports the JSON
// path of the value it rejects.
//
//===----------------------------------------------------------------------===//
#include "dialects/llmc/LlmcOps.h"
#include "dialects/llmc/ShapeUtils.h"
#include "dialects/llmc/TensorSize.h"
#include "frontends/json/GraphImporter.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace llmc::json {

static const char *kDtypes = "f32, f16, bf16, f8e4m3fn, f8e5m2, i64, i32, i1";

FailureOr<Type> GraphImporter::readDtype(const Json &value,
                                         const std::string &path) {
  if (!value.is_string())
    return error(path) << "expected a dtype (" << kDtypes << "), got "
                       << (value.is_null() ? "nothing" : describe(value));
  std::string s = value.get<std::string>();
  Type type = llvm::StringSwitch<Type>(s)
                  .Case("f32", builder.getF32Type())
                  .Case("f16", builder.getF16Type())
                  .Case("bf16", builder.getBF16Type())
                  .Case("f8e4m3fn", builder.getFloat8E4M3FNType())
                  .Case("f8e5m2", builder.getFloat8E5M2Type())
                  .Case("i64", builder.getI64Type())
                  .Case("i32", builder.getI32Type())
                  .Cases("i1", "bool", builder.getI1Type())
                  .Default(Type());
  if (!type)
    return error(path) << "unknown dtype '" << s << "'; expected one of "
                       << kDtypes;
  return type;
}

FailureOr<int64_t> GraphImporter::readDim(const Json &value,
                                          const std::string &path,
                                          bool allowInferred) {
  if (value.is_string()) {
    std::string name = value.get<std::string>();
    if (!isDimName(name))
      return error(path) << "'" << name << "' is not a dim name";
    auto bound = dims.resolve(name);
    if (!bound)
      return error(path) << "symbolic dim '" << name
                         << "' has no value; give it in \"dims\" or with "
                            "--shape "
                         << name << "=N";
    return *bound;
  }
  auto v = asInt(value);
  if (!v || *v < (allowInferred ? -1 : 0))
    return error(path) << "expected a dim (a non-negative integer or a dim "
                          "name), got "
                       << describe(value);
  return *v;
}

FailureOr<SmallVector<int64_t>>
GraphImporter::readShape(const Json &value, const std::string &path,
                         bool allowInferred) {
  if (!value.is_array())
    return error(path) << "expected a list of dims, got " << describe(value);
  SmallVector<int64_t> shape;
  for (size_t i = 0; i < value.size(); ++i) {
    auto d =
        readDim(value[i], path + "[" + std::to_string(i) + "]", allowInferred);
    if (failed(d))
      return failure();
    shape.push_back(*d);
  }
  return shape;
}

FailureOr<Attribute> GraphImporter::readAttr(const Json &value, AttrKind kind,
                                             const std::string &path,
                                             const std::string &suffix) {
  auto expected = [&]() -> InFlightDiagnostic {
    return error(path) << "expected " << describeAttrKind(kind) << ", got "
                       << describe(value) << suffix;
  };
  switch (kind) {
  case AttrKind::Int: {
    // Negative integers pass: ignore_index is -100, and axes that must be
    // non-negative are checked by the op's inference and verifier.
    if (auto i = asInt(value))
      return Attribute(builder.getI64IntegerAttr(*i));
    if (!value.is_string())
      return expected();
    auto v = readDim(value, path);
    if (failed(v))
      return failure();
    return Attribute(builder.getI64IntegerAttr(*v));
  }
  case AttrKind::Float: {
    auto v = asNumber(value);
    if (!v)
      return expected();
    return Attribute(builder.getF64FloatAttr(*v));
  }
  case AttrKind::Unit:
    if (!value.is_boolean())
      return expected();
    return value.get<bool>() ? Attribute(builder.getUnitAttr()) : Attribute();
  case AttrKind::IntList: {
    if (!value.is_array())
      return expected();
    SmallVector<int64_t> list;
    for (size_t i = 0; i < value.size(); ++i) {
      std::string at = path + "[" + std::to_string(i) + "]";
      if (auto v = asInt(value[i])) {
        list.push_back(*v);
        continue;
      }
      if (!value[i].is_string())
        return error(at) << "expected an integer, got " << describe(value[i])
                         << suffix;
      auto d = readDim(value[i], at);
      if (failed(d))
        return failure();
      list.push_back(*d);
    }
    return Attribute(builder.getDenseI64ArrayAttr(list));
  }
  case AttrKind::GeluApproximation:
  case AttrKind::ComparePredicate:
  case AttrKind::LossReduction: {
    if (!value.is_string())
      return expected();
    std::string s = value.get<std::string>();
    using namespace mlir::llmc;
    if (kind == AttrKind::GeluApproximation)
      if (auto e = symbolizeGeluApproximation(s))
        return Attribute(GeluApproximationAttr::get(&context, *e));
    if (kind == AttrKind::ComparePredicate)
      if (auto e = symbolizeComparePredicate(s))
        return Attribute(ComparePredicateAttr::get(&context, *e));
    if (kind == AttrKind::LossReduction)
      if (auto e = symbolizeLossReduction(s))
        return Attribute(LossReductionAttr::get(&context, *e));
    return expected();
  }
  case AttrKind::Elements:
    break; // constants are read by readElements with their dtype and shape
  }
  return expected();
}

/// Appends the leaves of a nested list in row-major order and records the
/// nesting as a shape; false when the nesting is ragged.
static bool flatten(const Json &value, size_t depth,
                    SmallVectorImpl<int64_t> &shape,
                    std::vector<const Json *> &leaves) {
  if (!value.is_array()) {
    if (depth != shape.size())
      return false;
    leaves.push_back(&value);
    return true;
  }
  if (depth == shape.size()) {
    if (!leaves.empty())
      return false; // a list where earlier siblings held scalars
    shape.push_back(value.size());
  } else if (depth > shape.size() ||
             shape[depth] != static_cast<int64_t>(value.size())) {
    return false;
  }
  for (const Json &v : value)
    if (!flatten(v, depth + 1, shape, leaves))
      return false;
  return true;
}

FailureOr<DenseElementsAttr>
GraphImporter::readElements(const Json &value, Type elementType,
                            std::optional<ArrayRef<int64_t>> explicitShape,
                            const std::string &path) {
  SmallVector<int64_t> nested;
  std::vector<const Json *> leaves;
  if (!flatten(value, 0, nested, leaves))
    return error(path) << "a nested list must be rectangular";
  ArrayRef<int64_t> shape = explicitShape ? *explicitShape : nested;
  auto type = RankedTensorType::get(shape, elementType);
  if (std::string why = mlir::llmc::tensorTypeSizeError(type); !why.empty())
    return error(path) << "the constant " << why;
  int64_t count = *mlir::llmc::staticElementCount(shape);
  bool splat = !value.is_array();
  if (!splat && static_cast<int64_t>(leaves.size()) != count)
    return error(path) << "has " << leaves.size() << " values, but the shape "
                       << mlir::llmc::shapeToString(shape) << " holds "
                       << count;
  SmallVector<Attribute> elements;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Json &leaf = *leaves[i];
    std::string at = splat ? path : path + "[" + std::to_string(i) + "]";
    if (elementType.isInteger(1)) {
      if (!leaf.is_boolean() && !asInt(leaf))
        return error(at) << "expected true or false, got " << describe(leaf);
      bool b = leaf.is_boolean() ? leaf.get<bool>() : *asInt(leaf) != 0;
      elements.push_back(builder.getBoolAttr(b));
    } else if (isa<IntegerType>(elementType)) {
      auto v = asInt(leaf);
      if (!v)
        return error(at) << "expected an integer, got " << describe(leaf);
      elements.push_back(builder.getIntegerAttr(elementType, *v));
    } else {
      auto v = asNumber(leaf);
      if (!v)
        return error(at) << "expected a number, got " << describe(leaf);
      elements.push_back(builder.getFloatAttr(elementType, *v));
    }
  }
  if (splat)
    return DenseElementsAttr::get(type, elements.front());
  return DenseElementsAttr::get(type, elements);
}

} // namespace llmc::json
