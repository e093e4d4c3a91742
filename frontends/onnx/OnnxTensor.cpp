//===- OnnxTensor.cpp - Host tensors and ONNX initializer decoding --------===//
//
// TensorProto storage forms, and where each element type lives in them
// (onnx.proto):
//   raw_data      every fixed-width type, little-endian
//   float_data    float
//   int32_data    int32, int16, int8, uint16, uint8, bool, and the bit
//                 patterns of float16/bfloat16 (one per int32)
//   int64_data    int64
//   double_data   double
//   uint64_data   uint32, uint64
//   external      data_location = EXTERNAL, external_data {location, offset,
//                 length}: raw bytes in a file next to the model
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxTensor.h"
#include "frontends/ModelPath.h"
#include "frontends/onnx/onnx.pb.h"
#include "runtime/CheckedSize.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace llmc::onnximport {

// The host reads and writes ONNX's little-endian bytes with memcpy.
static_assert(llvm::endianness::native == llvm::endianness::little,
              "the ONNX importer assumes a little-endian host");

std::string dtypeName(int32_t code) {
  switch (static_cast<DType>(code)) {
  case DType::Float: return "float";
  case DType::UInt8: return "uint8";
  case DType::Int8: return "int8";
  case DType::UInt16: return "uint16";
  case DType::Int16: return "int16";
  case DType::Int32: return "int32";
  case DType::Int64: return "int64";
  case DType::String: return "string";
  case DType::Bool: return "bool";
  case DType::Float16: return "float16";
  case DType::Double: return "double";
  case DType::UInt32: return "uint32";
  case DType::UInt64: return "uint64";
  case DType::BFloat16: return "bfloat16";
  case DType::Undefined: return "undefined";
  }
  return "type " + std::to_string(code);
}

size_t dtypeSize(DType type) {
  switch (type) {
  case DType::Float: case DType::Int32: case DType::UInt32: return 4;
  case DType::UInt8: case DType::Int8: case DType::Bool: return 1;
  case DType::UInt16: case DType::Int16: case DType::Float16:
  case DType::BFloat16: return 2;
  case DType::Int64: case DType::Double: case DType::UInt64: return 8;
  case DType::String: case DType::Undefined: return 0;
  }
  return 0;
}

bool isFloatType(DType t) {
  return t == DType::Float || t == DType::Float16 || t == DType::BFloat16 ||
         t == DType::Double;
}

bool isIntegerType(DType t) {
  return t == DType::UInt8 || t == DType::Int8 || t == DType::UInt16 ||
         t == DType::Int16 || t == DType::Int32 || t == DType::Int64 ||
         t == DType::UInt32 || t == DType::UInt64;
}

bool isKnownDType(int32_t code) {
  return code >= 1 && code <= 16 && code != 14 && code != 15;
}

int64_t saturatingInt64(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9.2233720368547758e18)
    return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

int64_t shapeElementCount(llvm::ArrayRef<int64_t> shape) {
  // Saturate: a count that does not fit compares unequal to, and larger
  // than, any real one, never as a small wrapped number.
  ::llmc::CheckedSize n = ::llmc::elementCount(shape);
  return n.valid() ? n.value() : INT64_MAX;
}

//===----------------------------------------------------------------------===//
// TensorData
//===----------------------------------------------------------------------===//

TensorData::TensorData(DType dtype, std::vector<int64_t> shape)
    : type(dtype), dims(std::move(shape)) {
  data.assign(static_cast<size_t>(numElements()) * dtypeSize(type), 0);
}

TensorData TensorData::fromInts(DType dtype, std::vector<int64_t> shape,
                                llvm::ArrayRef<int64_t> values) {
  TensorData t(dtype, std::move(shape));
  for (auto [i, v] : llvm::enumerate(values))
    t.setInt(i, v);
  return t;
}

TensorData TensorData::fromDoubles(DType dtype, std::vector<int64_t> shape,
                                   llvm::ArrayRef<double> values) {
  TensorData t(dtype, std::move(shape));
  for (auto [i, v] : llvm::enumerate(values))
    t.setDouble(i, v);
  return t;
}

int64_t TensorData::numElements() const { return shapeElementCount(dims); }

template <typename T> static T load(const std::vector<char> &d, int64_t i) {
  T v;
  std::memcpy(&v, d.data() + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T> static void store(std::vector<char> &d, int64_t i, T v) {
  std::memcpy(d.data() + i * sizeof(T), &v, sizeof(T));
}

static double halfToDouble(const llvm::fltSemantics &sem, uint16_t bits) {
  llvm::APFloat f(sem, llvm::APInt(16, bits));
  bool lost;
  f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  return f.convertToDouble();
}

static uint16_t doubleToHalf(const llvm::fltSemantics &sem, double v) {
  llvm::APFloat f(v);
  bool lost;
  f.convert(sem, llvm::APFloat::rmNearestTiesToEven, &lost);
  return static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
}

double TensorData::getDouble(int64_t i) const {
  switch (type) {
  case DType::Float: return load<float>(data, i);
  case DType::Double: return load<double>(data, i);
  case DType::Float16:
    return halfToDouble(llvm::APFloat::IEEEhalf(), load<uint16_t>(data, i));
  case DType::BFloat16:
    return halfToDouble(llvm::APFloat::BFloat(), load<uint16_t>(data, i));
  case DType::UInt64: return static_cast<double>(load<uint64_t>(data, i));
  default: return static_cast<double>(getInt(i));
  }
}

int64_t TensorData::getInt(int64_t i) const {
  switch (type) {
  case DType::UInt8: return load<uint8_t>(data, i);
  case DType::Int8: return load<int8_t>(data, i);
  case DType::UInt16: return load<uint16_t>(data, i);
  case DType::Int16: return load<int16_t>(data, i);
  case DType::Int32: return load<int32_t>(data, i);
  case DType::Int64: return load<int64_t>(data, i);
  case DType::UInt32: return load<uint32_t>(data, i);
  case DType::UInt64: return static_cast<int64_t>(load<uint64_t>(data, i));
  case DType::Bool: return load<uint8_t>(data, i) != 0;
  default:
    return saturatingInt64(getDouble(i));
  }
}

void TensorData::setDouble(int64_t i, double v) {
  switch (type) {
  case DType::Float: store<float>(data, i, static_cast<float>(v)); return;
  case DType::Double: store<double>(data, i, v); return;
  case DType::Float16:
    store<uint16_t>(data, i, doubleToHalf(llvm::APFloat::IEEEhalf(), v));
    return;
  case DType::BFloat16:
    store<uint16_t>(data, i, doubleToHalf(llvm::APFloat::BFloat(), v));
    return;
  case DType::Bool: store<uint8_t>(data, i, v != 0); return;
  default: {
    TensorData tmp(DType::Double, {});
    tmp.setDouble(0, v);
    setInt(i, tmp.getInt(0));
    return;
  }
  }
}

void TensorData::setInt(int64_t i, int64_t v) {
  switch (type) {
  case DType::UInt8: store<uint8_t>(data, i, static_cast<uint8_t>(v)); return;
  case DType::Int8: store<int8_t>(data, i, static_cast<int8_t>(v)); return;
  case DType::UInt16: store<uint16_t>(data, i, static_cast<uint16_t>(v)); return;
  case DType::Int16: store<int16_t>(data, i, static_cast<int16_t>(v)); return;
  case DType::Int32: store<int32_t>(data, i, static_cast<int32_t>(v)); return;
  case DType::Int64: store<int64_t>(data, i, v); return;
  case DType::UInt32: store<uint32_t>(data, i, static_cast<uint32_t>(v)); return;
  case DType::UInt64: store<uint64_t>(data, i, static_cast<uint64_t>(v)); return;
  case DType::Bool: store<uint8_t>(data, i, v != 0); return;
  default: setDouble(i, static_cast<double>(v)); return;
  }
}

std::vector<int64_t> TensorData::toInts() const {
  std::vector<int64_t> out(numElements());
  for (int64_t i = 0, e = numElements(); i < e; ++i)
    out[i] = getInt(i);
  return out;
}

TensorData TensorData::reshaped(std::vector<int64_t> newShape) const {
  TensorData t = *this;
  t.dims = std::move(newShape);
  return t;
}

//===----------------------------------------------------------------------===//
// decodeTensor
//===----------------------------------------------------------------------===//

static llvm::Error tensorError(const onnx::TensorProto &t,
                               llvm::StringRef what, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 what + " '" + t.name() + "' " + msg);
}

/// Reads the bytes of an external-data tensor: `location` relative to the
/// model's directory, an optional `offset` and `length`.
static llvm::Expected<std::vector<char>>
readExternal(const onnx::TensorProto &t, llvm::StringRef what,
             llvm::StringRef baseDir, size_t expected) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto &kv : t.external_data()) {
    auto parseNumber = [&](uint64_t &out) -> llvm::Error {
      if (llvm::StringRef(kv.value()).getAsInteger(10, out))
        return tensorError(t, what, "has external_data " + kv.key() + " '" +
                                  kv.value() + "', which is not a number");
      return llvm::Error::success();
    };
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset") {
      if (auto e = parseNumber(offset))
        return std::move(e);
    } else if (kv.key() == "length") {
      uint64_t l = 0;
      if (auto e = parseNumber(l))
        return std::move(e);
      length = l;
    }
  }
  if (location.empty())
    return tensorError(t, what, "is stored externally but its external_data has "
                          "no 'location'");
  // As onnx.checker does: data must lie next to the model, not anywhere on
  // the file system the model's author picks (symbolic links resolved).
  std::string why;
  std::optional<std::string> resolved =
      resolveModelPath(baseDir, location, why);
  if (!resolved)
    return tensorError(t, what, "has external data location '" + location +
                              "', " + why);
  llvm::StringRef path = *resolved;
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return tensorError(t, what, "is stored in external file '" + path +
                              "', which cannot be read: " +
                              buffer.getError().message() +
                              " (keep the data file next to the .onnx file)");
  uint64_t size = (*buffer)->getBufferSize();
  uint64_t len = length ? *length : (offset <= size ? size - offset : 0);
  if (offset > size || len > size - offset)
    return tensorError(t, what, "reads bytes [" + llvm::Twine(offset) + ", " +
                              llvm::Twine(offset + len) + ") of '" +
                              path + "', which has only " +
                              llvm::Twine(size) + " bytes");
  if (len != expected)
    return tensorError(t, what, "has " + llvm::Twine(len) +
                              " bytes of external data, but its shape and "
                              "type need " +
                              llvm::Twine(expected));
  const char *begin = (*buffer)->getBufferStart() + offset;
  return std::vector<char>(begin, begin + len);
}

std::string externalDataFile(const onnx::TensorProto &t,
                             llvm::StringRef baseDir) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL)
    return "";
  for (const auto &kv : t.external_data())
    if (kv.key() == "location" && !kv.value().empty()) {
      llvm::SmallString<256> path(baseDir);
      llvm::sys::path::append(path, kv.value());
      return path.str().str();
    }
  return "";
}

/// Copies a typed repeated field into `out`, converting each element.
template <typename Field, typename Set>
static llvm::Error copyTyped(const onnx::TensorProto &t, llvm::StringRef what,
                             const Field &field,
                             const char *fieldName, int64_t count, Set set) {
  if (static_cast<int64_t>(field.size()) != count)
    return tensorError(t, what, "has " + llvm::Twine(field.size()) + " values in " +
                              fieldName + ", but its shape needs " +
                              llvm::Twine(count));
  for (int64_t i = 0; i < count; ++i)
    set(i, field.Get(static_cast<int>(i)));
  return llvm::Error::success();
}

/// The typed field that holds a tensor of `type` when it has no raw_data,
/// and how many values it holds (the switch in decodeTensor reads it).
static std::pair<const char *, int64_t>
typedField(const onnx::TensorProto &t, DType type) {
  switch (type) {
  case DType::Float:
    return {"float_data", t.float_data_size()};
  case DType::Double:
    return {"double_data", t.double_data_size()};
  case DType::Int64:
    return {"int64_data", t.int64_data_size()};
  case DType::UInt32:
  case DType::UInt64:
    return {"uint64_data", t.uint64_data_size()};
  default:
    return {"int32_data", t.int32_data_size()};
  }
}

llvm::Expected<TensorData> decodeTensor(const onnx::TensorProto &t,
                                        llvm::StringRef baseDir,
                                        llvm::StringRef what) {
  int32_t code = t.data_type();
  DType type = static_cast<DType>(code);
  if (!isKnownDType(code) || dtypeSize(type) == 0)
    return tensorError(t, what, "has element type " + dtypeName(code) +
                              ", which llmc cannot import");
  if (t.has_segment())
    return tensorError(t, what, "is segmented, which llmc cannot import");
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  // Check the size against overflow and the tensor limit before
  // allocating: a corrupt file must not turn into a huge allocation.
  for (int64_t d : shape)
    if (d < 0)
      return tensorError(t, what, "has negative dim " + llvm::Twine(d));
  std::string why = ::llmc::tensorSizeError(shape, dtypeSize(type));
  if (!why.empty())
    return tensorError(t, what, why);
  int64_t count = ::llmc::elementCount(shape).value(); // checked above
  size_t bytes = static_cast<size_t>(count) * dtypeSize(type);

  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    auto raw = readExternal(t, what, baseDir, bytes);
    if (!raw)
      return raw.takeError();
    TensorData out(type, shape);
    out.mutableBytes() = std::move(*raw);
    return out;
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      return tensorError(t, what, "has " + llvm::Twine(t.raw_data().size()) +
                                " bytes of raw_data, but its shape " +
                                "and type need " + llvm::Twine(bytes));
    TensorData out(type, shape);
    std::memcpy(out.mutableBytes().data(), t.raw_data().data(), bytes);
    return out;
  }

  // The typed field must hold exactly the shape's values; checked before
  // the allocation, so that a 200-byte file whose dims promise 2 GB of
  // float_data (found by the long fuzz run) is an error, not a 2 GB malloc.
  auto [fieldName, fieldSize] = typedField(t, type);
  if (fieldSize != count)
    return tensorError(t, what, "has " + llvm::Twine(fieldSize) + " values in " +
                                    fieldName + ", but its shape needs " +
                                    llvm::Twine(count));
  TensorData out(type, shape);
  auto setInt = [&](int64_t i, int64_t v) { out.setInt(i, v); };
  auto setDouble = [&](int64_t i, double v) { out.setDouble(i, v); };
  llvm::Error err = llvm::Error::success();
  switch (type) {
  case DType::Float:
    err = copyTyped(t, what, t.float_data(), "float_data", count, setDouble);
    break;
  case DType::Double:
    err = copyTyped(t, what, t.double_data(), "double_data", count, setDouble);
    break;
  case DType::Int64:
    err = copyTyped(t, what, t.int64_data(), "int64_data", count, setInt);
    break;
  case DType::UInt32:
  case DType::UInt64:
    err = copyTyped(t, what, t.uint64_data(), "uint64_data", count,
                    [&](int64_t i, uint64_t v) {
                      out.setInt(i, static_cast<int64_t>(v));
                    });
    break;
  case DType::Float16:
  case DType::BFloat16:
    // int32_data holds the 16-bit patterns, not the values.
    err = copyTyped(t, what, t.int32_data(), "int32_data", count,
                    [&](int64_t i, int32_t v) {
                      uint16_t bits = static_cast<uint16_t>(v);
                      std::memcpy(out.mutableBytes().data() + 2 * i, &bits, 2);
                    });
    break;
  default:
    err = copyTyped(t, what, t.int32_data(), "int32_data", count, setInt);
    break;
  }
  if (err)
    return std::move(err);
  return out;
}

} // namespace llmc::onnximport
