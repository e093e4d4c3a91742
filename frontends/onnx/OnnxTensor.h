//===- OnnxTensor.h - Host tensors and ONNX initializer decoding -*- C++ -*-===//
//
// TensorData is a tensor held by the importer: an initializer's payload, a
// Constant node, or a small shape tensor the importer evaluates. Its bytes are
// in ONNX's own layout (row-major, little-endian, the element type's native
// width), so that initializers pass to MLIR resource blobs without a copy in
// another format, and the constant evaluator reads elements as double/int64.
//
// decodeTensor reads every storage form of a TensorProto: raw_data, the typed
// fields (float_data, int32_data, int64_data, double_data, uint64_data) and
// external data files. It never trusts the file: sizes are checked against
// the shape before anything is read.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_FRONTENDS_ONNX_ONNXTENSOR_H
#define LLMC_FRONTENDS_ONNX_ONNXTENSOR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace onnx {
class TensorProto;
} // namespace onnx

namespace llmc::onnximport {

/// ONNX TensorProto.DataType codes (onnx.proto), the ones llmc reads.
enum class DType : int32_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  BFloat16 = 16,
};

/// "float", "int64", ... ("type 14" for codes llmc does not know).
std::string dtypeName(int32_t code);
/// Bytes per element; 0 for types without a fixed-width host layout.
size_t dtypeSize(DType type);
bool isFloatType(DType type);
bool isIntegerType(DType type); // bool excluded
bool isKnownDType(int32_t code);

/// A row-major host tensor in ONNX's little-endian layout.
class TensorData {
public:
  TensorData() = default;
  TensorData(DType dtype, std::vector<int64_t> shape);

  static TensorData fromInts(DType dtype, std::vector<int64_t> shape,
                             llvm::ArrayRef<int64_t> values);
  static TensorData fromDoubles(DType dtype, std::vector<int64_t> shape,
                                llvm::ArrayRef<double> values);
  static TensorData scalarInt(DType dtype, int64_t value) {
    return fromInts(dtype, {}, {value});
  }

  DType dtype() const { return type; }
  llvm::ArrayRef<int64_t> shape() const { return dims; }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  int64_t numElements() const;
  llvm::ArrayRef<char> bytes() const { return data; }
  std::vector<char> &mutableBytes() { return data; }

  /// Element `i` converted to double (floats, integers, bool as 0/1).
  double getDouble(int64_t i) const;
  /// Element `i` converted to int64 (floats truncate toward zero).
  int64_t getInt(int64_t i) const;
  /// Stores `v` rounded to the element type (f32/f16/bf16 round to nearest
  /// even, integers truncate, bool tests for non-zero).
  void setDouble(int64_t i, double v);
  void setInt(int64_t i, int64_t v);

  /// All elements as int64 (shape tensors, axes).
  std::vector<int64_t> toInts() const;
  /// Same bytes, another shape with the same element count.
  TensorData reshaped(std::vector<int64_t> newShape) const;

private:
  DType type = DType::Undefined;
  std::vector<int64_t> dims;
  std::vector<char> data;
};

/// Element count of a shape (1 for rank 0).
int64_t shapeElementCount(llvm::ArrayRef<int64_t> shape);

/// A double as int64: casting NaN or an out-of-range float is undefined in
/// C++ and ONNX leaves it unspecified, so saturate (NaN gives 0).
int64_t saturatingInt64(double v);

/// Decodes a TensorProto. External data locations are relative to `baseDir`
/// (the model file's directory). Errors start with "<what> '<name>'" and
/// say what is wrong with the tensor.
llvm::Expected<TensorData> decodeTensor(const onnx::TensorProto &tensor,
                                        llvm::StringRef baseDir,
                                        llvm::StringRef what = "tensor");

/// The file an external-data tensor names, joined to `baseDir` as written
/// (no checks); "" for a tensor stored inline or without a location. The
/// importer uses it to report a missing data file once, not per tensor.
std::string externalDataFile(const onnx::TensorProto &tensor,
                             llvm::StringRef baseDir);

} // namespace llmc::onnximport

#endif // LLMC_FRONTENDS_ONNX_ONNXTENSOR_H
