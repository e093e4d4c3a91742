//===- ElementTypes.cpp - The plan's element types of MLIR types ----------===//
#include "compiler/common/ElementTypes.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace llmc {

std::optional<DType> dtypeOf(Type t) {
  if (t.isF32())
    return DType::F32;
  if (t.isBF16())
    return DType::BF16;
  if (t.isF16())
    return DType::F16;
  if (t.isSignlessInteger(32))
    return DType::I32;
  if (t.isSignlessInteger(64))
    return DType::I64;
  if (t.isSignlessInteger(1))
    return DType::U8;
  return std::nullopt;
}

std::optional<FloatFormat> floatFormatOf(DType type) {
  switch (type) {
  case DType::F32:
    return FloatFormat::F32;
  case DType::F16:
    return FloatFormat::F16;
  case DType::BF16:
    return FloatFormat::BF16;
  case DType::F8E4M3:
    return FloatFormat::F8E4M3FN;
  case DType::F8E5M2:
    return FloatFormat::F8E5M2;
  default:
    return std::nullopt;
  }
}

std::string tensorTypeString(ShapedType type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type.getElementType() << "[";
  if (type.hasRank())
    for (auto [i, d] : llvm::enumerate(type.getShape())) {
      os << (i ? ", " : "");
      if (ShapedType::isDynamic(d))
        os << "?";
      else
        os << d;
    }
  os << "]";
  return s;
}

} // namespace llmc
