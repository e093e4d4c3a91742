//===- AttrTensors.cpp - RefTensors from MLIR elements attributes ---------===//
//
// Dense attributes are read through APFloat/APInt, which are exact for every
// element type. Resource blobs are read as raw little-endian bytes, one
// element after another (an i1 element is one byte), which is how importers
// store weights.
//
//===----------------------------------------------------------------------===//
#include "compiler/eval/AttrTensors.h"
#include "compiler/eval/DeviceTensors.h"
#include "compiler/eval/Evaluator.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

using namespace mlir;

namespace llmc {

/// Decodes `count` little-endian elements of `kind` from `bytes` into `t`.
static void decodeBytes(const char *bytes, int64_t count, RefTensor &t) {
  size_t width = elementBytes(t.kind);
  for (int64_t i = 0; i < count; ++i) {
    uint64_t raw = 0;
    for (size_t b = 0; b < width; ++b)
      raw |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i * width + b]))
             << (8 * b);
    switch (t.kind) {
    case ElementKind::F64: {
      double d;
      std::memcpy(&d, &raw, 8);
      t.floats[i] = d;
      break;
    }
    case ElementKind::I64:
      t.ints[i] = static_cast<int64_t>(raw);
      break;
    case ElementKind::I32:
      t.ints[i] = static_cast<int32_t>(static_cast<uint32_t>(raw));
      break;
    case ElementKind::I1:
      t.ints[i] = raw != 0;
      break;
    default:
      t.floats[i] =
          bitsToFloat(static_cast<uint32_t>(raw), floatFormatOf(t.kind));
    }
  }
}

std::optional<RefTensor> tensorFromAttr(ElementsAttr attr, std::string &error) {
  auto type = dyn_cast<RankedTensorType>(attr.getShapedType());
  auto kind = type ? kindOf(type.getElementType()) : std::nullopt;
  if (!type || !type.hasStaticShape() || !kind) {
    error = "unsupported tensor type in elements attribute";
    return std::nullopt;
  }
  RefTensor t(*kind, std::vector<int64_t>(type.getShape().begin(),
                                          type.getShape().end()));
  int64_t n = t.numElements();
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    if (t.isFloat()) {
      int64_t i = 0;
      for (const APFloat &v : dense.getValues<APFloat>())
        t.floats[i++] = v.convertToDouble();
    } else {
      int64_t i = 0;
      for (const APInt &v : dense.getValues<APInt>())
        t.ints[i++] =
            t.kind == ElementKind::I1 ? v.getBoolValue() : v.getSExtValue();
    }
    return t;
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob) {
      error = "resource blob '" + resource.getRawHandle().getKey().str() +
              "' has no data (not in the module's dialect_resources)";
      return std::nullopt;
    }
    ArrayRef<char> data = blob->getData();
    size_t expected = static_cast<size_t>(n) * elementBytes(t.kind);
    if (data.size() != expected) {
      error = "resource blob '" + resource.getRawHandle().getKey().str() +
              "' holds " + std::to_string(data.size()) + " bytes, but " +
              t.typeString() + " needs " + std::to_string(expected);
      return std::nullopt;
    }
    decodeBytes(data.data(), n, t);
    return t;
  }
  error = "unsupported elements attribute (expected dense or dense_resource)";
  return std::nullopt;
}

} // namespace llmc
