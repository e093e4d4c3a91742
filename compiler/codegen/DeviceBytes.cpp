//===- DeviceBytes.cpp - Initial data as device bytes, directly -----------===//
#include "compiler/codegen/DeviceBytes.h"

#include "compiler/common/ElementTypes.h"
#include "compiler/common/HostMemory.h"
#include "compiler/common/ParameterInit.h"
#include "runtime/Padding.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <algorithm>
#include <cstring>
#include <thread>

using namespace mlir;

namespace llmc::codegen {

namespace {

/// Runs `fill(begin, n)` over [0, count) in chunks of 2^20 elements (even:
/// normal draws come in pairs) on up to one thread per core.
template <typename Fn> void parallelChunks(int64_t count, Fn fill) {
  constexpr int64_t kChunk = 1 << 20;
  int64_t chunks = (count + kChunk - 1) / kChunk;
  unsigned threads = static_cast<unsigned>(std::min<int64_t>(
      chunks, std::max(1u, std::thread::hardware_concurrency())));
  auto work = [&](unsigned t) {
    for (int64_t c = t; c < chunks; c += threads)
      fill(c * kChunk, std::min(kChunk, count - c * kChunk));
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

/// Fills `count` elements of the float type `type` (f32, bf16, f16):
/// `values(begin, n, store)` calls store(i, x) for each i in
/// [begin, begin + n), and x is rounded once to `type`.
template <typename Fn>
void fillFloats(uint8_t *out, int64_t count, DType type, Fn values) {
  parallelChunks(count, [&](int64_t begin, int64_t n) {
    if (type == DType::F32) {
      auto *p = reinterpret_cast<float *>(out);
      values(begin, n,
             [p](int64_t i, double x) { p[i] = static_cast<float>(x); });
      return;
    }
    FloatFormat format = *floatFormatOf(type);
    auto *p = reinterpret_cast<uint16_t *>(out);
    values(begin, n, [p, format](int64_t i, double x) {
      p[i] = static_cast<uint16_t>(floatToBits(x, format));
    });
  });
}

bool isFloat(DType type) { return floatFormatOf(type).has_value(); }

} // namespace

std::optional<std::vector<uint8_t>> attrDeviceBytes(ElementsAttr attr,
                                                    std::string &error) {
  auto type = dyn_cast<RankedTensorType>(attr.getShapedType());
  std::optional<DType> dtype = type && type.hasStaticShape()
                                   ? dtypeOf(type.getElementType())
                                   : std::nullopt;
  if (!dtype) {
    error = "unsupported tensor type in elements attribute";
    return std::nullopt;
  }
  size_t width = dtypeSize(*dtype);
  size_t count = static_cast<size_t>(type.getNumElements());
  size_t bytes = count * width;
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    // Importers store one little-endian element after another, i1 as a
    // byte; the device reads i1 as 0 or 1.
    std::string key = resource.getRawHandle().getKey().str();
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob) {
      error = "resource blob '" + key +
              "' has no data (not in the module's dialect_resources)";
      return std::nullopt;
    }
    ArrayRef<char> data = blob->getData();
    if (data.size() != bytes) {
      error = "resource blob '" + key + "' holds " +
              std::to_string(data.size()) + " bytes, but " +
              tensorTypeString(type) + " needs " + std::to_string(bytes);
      return std::nullopt;
    }
    std::vector<uint8_t> out(data.begin(), data.end());
    if (*dtype == DType::U8)
      for (uint8_t &b : out)
        b = b != 0;
    return out;
  }
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense) {
    error = "unsupported elements attribute (expected dense or "
            "dense_resource)";
    return std::nullopt;
  }
  std::vector<uint8_t> out(bytes);
  if (*dtype == DType::U8) { // bit-packed in the attribute
    size_t i = 0;
    for (bool b : dense.getValues<bool>())
      out[i++] = b;
    return out;
  }
  ArrayRef<char> raw = dense.getRawData();
  if (dense.isSplat() && raw.size() == width) {
    for (size_t at = 0; at < bytes; at += width)
      std::memcpy(out.data() + at, raw.data(), width);
    return out;
  }
  if (raw.size() != bytes) {
    error = "dense attribute holds " + std::to_string(raw.size()) +
            " bytes, but " + tensorTypeString(type) + " needs " +
            std::to_string(bytes);
    return std::nullopt;
  }
  std::memcpy(out.data(), raw.data(), bytes);
  return out;
}

namespace {

/// The initial bytes at `type` (the real type of a padded parameter), whose
/// element type is `dtype`.
std::optional<std::vector<uint8_t>>
initialBytes(func::FuncOp func, unsigned index, RankedTensorType type,
             DType dtype, uint64_t seed, std::string &error) {
  std::string name = argumentName(func, index);
  if (auto init = func.getArgAttrOfType<ElementsAttr>(index, "llmc.init")) {
    auto initType = dyn_cast<RankedTensorType>(init.getShapedType());
    if (initType && initType.hasStaticShape() && initType != type) {
      error = "parameter '" + name + "': llmc.init is " +
              tensorTypeString(initType) + " but the argument is " +
              tensorTypeString(type);
      return std::nullopt;
    }
    auto bytes = attrDeviceBytes(init, error);
    if (!bytes)
      error = "parameter '" + name + "': llmc.init: " + error;
    return bytes;
  }
  auto ruleAttr = func.getArgAttrOfType<StringAttr>(index, "llmc.init_rule");
  if (!ruleAttr) {
    error = "parameter '" + name + "' has neither llmc.init nor llmc.init_rule";
    return std::nullopt;
  }
  std::optional<InitRule> rule = parseInitRule(ruleAttr.getValue());
  if (!rule) {
    error = unknownInitRuleError(name, ruleAttr.getValue());
    return std::nullopt;
  }
  if (rule->kind != InitRule::Kind::Zeros && !isFloat(dtype)) {
    error = "parameter '" + name +
            "': llmc.init_rule needs a float type, got " +
            tensorTypeString(type);
    return std::nullopt;
  }
  // Checked before the allocation: a parameter the host cannot hold is an
  // error naming it, not std::bad_alloc.
  if (std::string why = hostAllocationError(
          type.getShape(), static_cast<int64_t>(dtypeSize(dtype)));
      !why.empty()) {
    error = "argument '" + name + "' " + why;
    return std::nullopt;
  }
  int64_t count = type.getNumElements();
  std::vector<uint8_t> out(static_cast<size_t>(count) * dtypeSize(dtype));
  switch (rule->kind) {
  case InitRule::Kind::Zeros: // every device type's zero is all-zero bytes
    break;
  case InitRule::Kind::Ones:
    fillFloats(out.data(), count, dtype,
               [](int64_t begin, int64_t n, auto store) {
                 for (int64_t i = begin; i < begin + n; ++i)
                   store(i, 1.0);
               });
    break;
  case InitRule::Kind::Normal:
    fillFloats(
        out.data(), count, dtype, [&](int64_t begin, int64_t n, auto store) {
          forEachNormalSample(seed, name, begin, n, [&](int64_t i, double x) {
            store(i, x * rule->stddev);
          });
        });
    break;
  }
  return out;
}

} // namespace

std::optional<std::vector<uint8_t>> initialParameterBytes(func::FuncOp func,
                                                          unsigned index,
                                                          uint64_t seed,
                                                          std::string &error) {
  error.clear();
  auto type = dyn_cast<RankedTensorType>(func.getArgument(index).getType());
  std::optional<DType> dtype = type && type.hasStaticShape()
                                   ? dtypeOf(type.getElementType())
                                   : std::nullopt;
  if (!dtype) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << func.getArgument(index).getType();
    error = "argument '" + argumentName(func, index) + "' has type " + text +
            ", which the CUDA backend cannot hold (a static tensor of f32, "
            "bf16, f16, i32, i64 or i1)";
    return std::nullopt;
  }
  std::optional<std::vector<int64_t>> real = realShapeOf(func, index);
  RankedTensorType realType = real ? type.clone(*real) : type;
  std::optional<std::vector<uint8_t>> bytes =
      initialBytes(func, index, realType, *dtype, seed, error);
  if (!bytes || realType == type)
    return bytes;
  // A padded parameter (llmc-pad-shapes): zero rows after the real ones.
  std::vector<uint8_t> out;
  if (Status s = padData(
          bytes->data(), bytes->size(), *real,
          std::vector<int64_t>(type.getShape().begin(), type.getShape().end()),
          dtypeSize(*dtype), out);
      !s) {
    error = "parameter '" + argumentName(func, index) + "': " + s.message();
    return std::nullopt;
  }
  return out;
}

} // namespace llmc::codegen
