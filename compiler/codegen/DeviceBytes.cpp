//===- DeviceBytes.cpp - Initial data as device bytes, directly -----------===//
#include "compiler/codegen/DeviceBytes.h"
#include "compiler/codegen/Codegen.h"
#include "compiler/codegen/FunctionLowering.h"

#include "compiler/eval/AttrTensors.h"
#include "compiler/eval/EvalMemory.h"
#include "compiler/eval/FloatFormats.h"
#include "compiler/eval/ModelArguments.h"
#include "runtime/Padding.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <algorithm>
#include <cstring>
#include <thread>

using namespace mlir;

namespace llmc::codegen {

namespace {

/// The evaluator's path: same bytes, and its error messages.
std::optional<std::vector<uint8_t>> slowAttrBytes(ElementsAttr attr,
                                                  std::string &error) {
  std::optional<RefTensor> t = tensorFromAttr(attr, error);
  if (!t)
    return std::nullopt;
  return toDeviceBytes(*t);
}

/// Fills `count` elements of `type` (f32, bf16 or f16) from `f(i)`, a
/// double rounded once to the type, on `threads` threads in chunks.
template <typename Fn>
void fillFloats(uint8_t *out, int64_t count, DType type, Fn f) {
  constexpr int64_t kChunk = 1 << 20; // even: normal draws come in pairs
  int64_t chunks = (count + kChunk - 1) / kChunk;
  unsigned threads = static_cast<unsigned>(std::min<int64_t>(
      chunks, std::max(1u, std::thread::hardware_concurrency())));
  auto work = [&](unsigned t) {
    std::vector<double> values;
    for (int64_t c = t; c < chunks; c += threads) {
      int64_t begin = c * kChunk, n = std::min(kChunk, count - begin);
      values.resize(n);
      f(begin, n, values.data());
      if (type == DType::F32) {
        auto *p = reinterpret_cast<float *>(out) + begin;
        for (int64_t i = 0; i < n; ++i)
          p[i] = static_cast<float>(values[i]);
      } else {
        FloatFormat format =
            type == DType::BF16 ? FloatFormat::BF16 : FloatFormat::F16;
        auto *p = reinterpret_cast<uint16_t *>(out) + begin;
        for (int64_t i = 0; i < n; ++i)
          p[i] = static_cast<uint16_t>(floatToBits(values[i], format));
      }
    }
  };
  if (threads <= 1) {
    work(0);
    return;
  }
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back(work, t);
  for (std::thread &th : pool)
    th.join();
}

/// ModelArguments' argName: the stream of a parameter is keyed by it.
std::string argName(func::FuncOp func, unsigned i) {
  for (StringRef attr : {"llmc.input", "llmc.param"})
    if (auto name = func.getArgAttrOfType<StringAttr>(i, attr))
      return name.getValue().str();
  return "#" + std::to_string(i);
}

} // namespace

std::optional<std::vector<uint8_t>> attrDeviceBytes(ElementsAttr attr,
                                                    std::string &error) {
  auto type = dyn_cast<RankedTensorType>(attr.getShapedType());
  std::optional<DType> dtype = type && type.hasStaticShape()
                                   ? dtypeOf(type.getElementType())
                                   : std::nullopt;
  if (!dtype)
    return slowAttrBytes(attr, error);
  size_t width = dtypeSize(*dtype);
  size_t bytes = static_cast<size_t>(type.getNumElements()) * width;
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob || blob->getData().size() != bytes || *dtype == DType::U8)
      return slowAttrBytes(attr, error);
    ArrayRef<char> data = blob->getData();
    return std::vector<uint8_t>(data.begin(), data.end());
  }
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense || *dtype == DType::U8) // i1 is bit-packed in the attribute
    return slowAttrBytes(attr, error);
  ArrayRef<char> raw = dense.getRawData();
  std::vector<uint8_t> out(bytes);
  if (dense.isSplat()) {
    if (raw.size() < width)
      return slowAttrBytes(attr, error);
    for (size_t at = 0; at < bytes; at += width)
      std::memcpy(out.data() + at, raw.data(), width);
    return out;
  }
  if (raw.size() != bytes)
    return slowAttrBytes(attr, error);
  std::memcpy(out.data(), raw.data(), bytes);
  return out;
}

namespace {

/// The bytes at `type` (the real type of a padded parameter) without the
/// evaluator's doubles; nullopt with `error` empty when only the slow path
/// (initialParameter) can make them.
std::optional<std::vector<uint8_t>> fastBytes(func::FuncOp func,
                                              unsigned index,
                                              RankedTensorType type,
                                              uint64_t seed,
                                              std::string &error) {
  auto slow = [&]() -> std::optional<std::vector<uint8_t>> {
    error.clear();
    return std::nullopt;
  };
  std::optional<DType> dtype = type && type.hasStaticShape()
                                   ? dtypeOf(type.getElementType())
                                   : std::nullopt;
  if (!dtype)
    return slow();
  if (auto init = func.getArgAttrOfType<ElementsAttr>(index, "llmc.init")) {
    if (init.getShapedType() != type)
      return slow(); // the mismatch message
    return attrDeviceBytes(init, error);
  }
  auto rule = func.getArgAttrOfType<StringAttr>(index, "llmc.init_rule");
  if (!rule)
    return slow();
  bool isFloat =
      *dtype == DType::F32 || *dtype == DType::BF16 || *dtype == DType::F16;
  // Checked before the allocation: a parameter the host cannot hold is an
  // error naming it, not std::bad_alloc.
  if (std::string why = hostAllocationError(
          type.getShape(), static_cast<int64_t>(dtypeSize(*dtype)));
      !why.empty()) {
    error = "argument '" + argName(func, index) + "' " + why;
    return std::nullopt;
  }
  int64_t count = type.getNumElements();
  std::vector<uint8_t> out(static_cast<size_t>(count) * dtypeSize(*dtype));
  StringRef text = rule.getValue();
  double stddev = 0;
  if (text == "zeros" && (isFloat || *dtype != DType::U8))
    return out; // every supported type's zero is all-zero bytes
  if (!isFloat)
    return slow();
  if (text == "ones") {
    fillFloats(out.data(), count, *dtype,
               [](int64_t, int64_t n, double *v) { std::fill(v, v + n, 1.0); });
    return out;
  }
  if (text.consume_front("normal(") && text.consume_back(")") &&
      !text.trim().getAsDouble(stddev) && stddev >= 0) {
    std::string name = argName(func, index);
    fillFloats(out.data(), count, *dtype,
               [&](int64_t begin, int64_t n, double *v) {
                 normalSampleRange(seed, name, begin, n, v);
                 for (int64_t i = 0; i < n; ++i)
                   v[i] *= stddev;
               });
    return out;
  }
  return slow();
}

} // namespace

std::optional<std::vector<uint8_t>> initialParameterBytes(func::FuncOp func,
                                                          unsigned index,
                                                          uint64_t seed,
                                                          std::string &error) {
  auto type = dyn_cast<RankedTensorType>(func.getArgument(index).getType());
  std::optional<std::vector<int64_t>> real = realShapeOf(func, index);
  RankedTensorType realType =
      type && real && type.hasStaticShape() ? type.clone(*real) : type;
  error.clear();
  std::optional<std::vector<uint8_t>> bytes =
      fastBytes(func, index, realType, seed, error);
  if (!bytes && error.empty()) {
    // The evaluator's path pads by itself.
    std::optional<RefTensor> t = initialParameter(func, index, seed, error);
    if (!t)
      return std::nullopt;
    return toDeviceBytes(*t);
  }
  if (!bytes || !real || realType == type)
    return bytes;
  // A padded parameter (llmc-pad-shapes): zero rows after the real ones.
  std::vector<uint8_t> out;
  if (Status s = padData(bytes->data(), bytes->size(), *real,
                         std::vector<int64_t>(type.getShape().begin(),
                                              type.getShape().end()),
                         dtypeSize(*dtypeOf(type.getElementType())), out);
      !s) {
    error = "parameter '" + argName(func, index) + "': " + s.message();
    return std::nullopt;
  }
  return out;
}

} // namespace llmc::codegen
