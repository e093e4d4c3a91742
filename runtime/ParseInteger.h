//===- ParseInteger.h - Strict, range-checked integer parsing ---*- C++ -*-===//
//
// Every integer a user types (the CLI's --steps, --batch, --seed,
// --shape NAME=VALUE, ...) is parsed here: decimal digits only, with an
// optional leading '-', and a range. "1e19", "2^63-1", " 5", "0x10", "+3"
// and anything beyond the range are errors, never a wrapped, truncated or
// saturated value (strtoull("18446744073709551616") is ULLONG_MAX, and a
// double cast to int64 is undefined beyond 2^63). Header-only, free of MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_PARSEINTEGER_H
#define LLMC_RUNTIME_PARSEINTEGER_H

#include <cstdint>
#include <string>

namespace llmc {

/// Parses `text` as a decimal integer in [min, max] into `out`; false (and
/// `out` untouched) when it is not one.
inline bool parseInteger(const std::string &text, int64_t min, int64_t max,
                         int64_t &out) {
  size_t i = 0;
  bool negative = !text.empty() && text[0] == '-';
  i += negative;
  if (i == text.size() || text.size() - i > 19)
    return false;
  uint64_t magnitude = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9')
      return false;
    magnitude = magnitude * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  // 19 digits stay below 10^19 < 2^64, so the loop cannot wrap.
  if (!negative && magnitude > static_cast<uint64_t>(INT64_MAX))
    return false;
  if (negative && magnitude > static_cast<uint64_t>(INT64_MAX) + 1)
    return false;
  int64_t v = negative ? static_cast<int64_t>(0 - magnitude)
                       : static_cast<int64_t>(magnitude);
  if (v < min || v > max)
    return false;
  out = v;
  return true;
}

/// Parses `text` as a decimal integer in [0, 2^64 - 1] (seeds).
inline bool parseUnsigned64(const std::string &text, uint64_t &out) {
  if (text.empty() || text.size() > 20)
    return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10)
      return false;
    v = v * 10 + digit;
  }
  out = v;
  return true;
}

/// "an integer in [1, 1099511627776]" for messages.
inline std::string integerRangeText(int64_t min, int64_t max) {
  return "an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
         "]";
}

} // namespace llmc

#endif // LLMC_RUNTIME_PARSEINTEGER_H
