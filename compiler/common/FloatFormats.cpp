//===- FloatFormats.cpp - Rounding to the narrow float formats ------------===//
//
// Every format is described by its exponent and mantissa widths; rounding
// scales the value by a power of two so that the format's quantum at the
// value's binade is 1, rounds to an integer with std::nearbyint (ties to even
// in the default rounding mode) and scales back. Both scalings are exact in
// double for every format here.
//
//===----------------------------------------------------------------------===//
#include "compiler/common/FloatFormats.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace llmc {

namespace {

struct FormatInfo {
  int exponentBits;
  int mantissaBits;
  int bias;
  bool hasInf;       // IEEE-like: all-ones exponent is inf/NaN
  uint32_t quietNaN; // bit pattern used for NaN
  double maxFinite;
};

FormatInfo info(FloatFormat format) {
  switch (format) {
  case FloatFormat::F64:
    return {11, 52, 1023, true, 0, std::numeric_limits<double>::max()};
  case FloatFormat::F32:
    return {8, 23, 127, true, 0x7FC00000u, std::numeric_limits<float>::max()};
  case FloatFormat::F16:
    return {5, 10, 15, true, 0x7E00u, 65504.0};
  case FloatFormat::BF16:
    return {8, 7, 127, true, 0x7FC0u, std::ldexp(255.0, 120)};
  case FloatFormat::F8E4M3FN:
    // No infinities; only S.1111.111 is NaN, so the top binade holds 448.
    return {4, 3, 7, false, 0x7Fu, 448.0};
  case FloatFormat::F8E5M2:
    return {5, 2, 15, true, 0x7Eu, 57344.0};
  }
  return {11, 52, 1023, true, 0, std::numeric_limits<double>::max()};
}

} // namespace

double maxFinite(FloatFormat format) { return info(format).maxFinite; }

double roundToTf32(double x) {
  float f = static_cast<float>(x);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7F800000u) == 0x7F800000u)
    return f; // inf and NaN as they are
  // Round to nearest, ties to even on the 13 dropped bits: what cuBLASLt's
  // CUBLAS_COMPUTE_32F_FAST_TF32 does on an H100 (MatmulPrecisionGpuTest:
  // 1024.5 -> 1024, 1025.5 -> 1026, 1 + 2^-11 -> 1).
  bits = (bits + 0xFFFu + ((bits >> 13) & 1u)) & ~0x1FFFu;
  std::memcpy(&f, &bits, 4);
  return f;
}

double roundToFormat(double x, FloatFormat format) {
  if (format == FloatFormat::F64)
    return x;
  if (format == FloatFormat::F32)
    return static_cast<double>(static_cast<float>(x));
  FormatInfo f = info(format);
  if (std::isnan(x))
    return x;
  if (std::isinf(x))
    return f.hasInf ? x : std::numeric_limits<double>::quiet_NaN();
  if (x == 0)
    return x;
  double a = std::fabs(x);
  int exp = 0;
  std::frexp(a, &exp); // a = m * 2^exp with m in [0.5, 1)
  int binade = exp - 1;
  int minExponent = 1 - f.bias;
  if (binade < minExponent)
    binade = minExponent; // subnormal: fixed quantum
  int quantumExp = binade - f.mantissaBits;
  double r = std::ldexp(std::nearbyint(std::ldexp(a, -quantumExp)), quantumExp);
  if (r > f.maxFinite)
    return f.hasInf ? std::copysign(std::numeric_limits<double>::infinity(), x)
                    : std::numeric_limits<double>::quiet_NaN();
  return std::copysign(r, x);
}

uint32_t floatToBits(double x, FloatFormat format) {
  if (format == FloatFormat::F32) {
    float v = static_cast<float>(x);
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    return bits;
  }
  FormatInfo f = info(format);
  double r = roundToFormat(x, format);
  int width = f.exponentBits + f.mantissaBits;
  uint32_t sign = std::signbit(r) ? (1u << width) : 0u;
  if (std::isnan(r))
    return f.quietNaN;
  uint32_t expAllOnes = (1u << f.exponentBits) - 1;
  if (std::isinf(r))
    return sign | (expAllOnes << f.mantissaBits);
  double a = std::fabs(r);
  if (a == 0)
    return sign;
  int exp = 0;
  std::frexp(a, &exp);
  int binade = exp - 1;
  int minExponent = 1 - f.bias;
  if (binade < minExponent) {
    auto mant =
        static_cast<uint32_t>(std::ldexp(a, f.mantissaBits - minExponent));
    return sign | mant;
  }
  auto expField = static_cast<uint32_t>(binade + f.bias);
  auto mant = static_cast<uint32_t>(std::ldexp(a, f.mantissaBits - binade) -
                                    std::ldexp(1.0, f.mantissaBits));
  return sign | (expField << f.mantissaBits) | mant;
}

double bitsToFloat(uint32_t bits, FloatFormat format) {
  if (format == FloatFormat::F32) {
    float v;
    std::memcpy(&v, &bits, sizeof(v));
    return v;
  }
  FormatInfo f = info(format);
  int width = f.exponentBits + f.mantissaBits;
  bool negative = (bits >> width) & 1u;
  uint32_t expAllOnes = (1u << f.exponentBits) - 1;
  uint32_t expField = (bits >> f.mantissaBits) & expAllOnes;
  uint32_t mant = bits & ((1u << f.mantissaBits) - 1);
  double value;
  if (f.hasInf && expField == expAllOnes)
    value = mant == 0 ? std::numeric_limits<double>::infinity()
                      : std::numeric_limits<double>::quiet_NaN();
  else if (!f.hasInf && expField == expAllOnes &&
           mant == (1u << f.mantissaBits) - 1)
    value = std::numeric_limits<double>::quiet_NaN();
  else if (expField == 0)
    value = std::ldexp(static_cast<double>(mant), 1 - f.bias - f.mantissaBits);
  else
    value = std::ldexp(static_cast<double>(mant + (1u << f.mantissaBits)),
                       static_cast<int>(expField) - f.bias - f.mantissaBits);
  return negative ? -value : value;
}

} // namespace llmc
