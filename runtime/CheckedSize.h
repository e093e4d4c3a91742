//===- CheckedSize.h - Checked element counts and byte sizes ----*- C++ -*-===//
//
// Every product of dims and every sum of byte sizes in llmc goes through
// CheckedSize, so that a shape like [2^32, 2^32] or [5, 3689348814741910324]
// is reported as too large instead of wrapping to 0 or 4 elements, and so
// that nothing is allocated for a tensor llmc could never hold. Header-only
// and free of MLIR: the importers, the dialect verifiers, the evaluator, the
// memory planner and the runtime's bundle validator all include it
// (docs/limits.md states the limits).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CHECKEDSIZE_H
#define LLMC_RUNTIME_CHECKEDSIZE_H

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

#include <unistd.h>

namespace llmc {

/// The largest tensor llmc accepts, in bytes: no device llmc targets holds
/// 1 TiB in one allocation, so a larger tensor is a mistake in the model or
/// in the flags (a batch of 10^12), and is reported before anything is
/// allocated.
inline constexpr int64_t kMaxTensorBytes = int64_t(1) << 40;
/// The largest parameter set (all parameters of a model) and the largest
/// device arena of a bundle, in bytes.
inline constexpr int64_t kMaxModelBytes = int64_t(1) << 40;
inline constexpr int64_t kMaxArenaBytes = int64_t(1) << 40;

/// A non-negative int64 size that remembers overflow: once a product or sum
/// leaves [0, 2^63), the result is invalid and stays invalid. `approx()`
/// carries the true magnitude as a double, so messages can say "about
/// 1.8e+19" instead of printing a wrapped number.
class CheckedSize {
public:
  constexpr CheckedSize() = default;
  /// A negative `v` (a dynamic or corrupt dim) is invalid.
  constexpr CheckedSize(int64_t v)
      : value_(v < 0 ? 0 : v), approx_(static_cast<double>(v)), valid_(v >= 0) {
  }

  bool valid() const { return valid_; }
  /// The exact value; 0 when invalid.
  int64_t value() const { return valid_ ? value_ : 0; }
  /// The magnitude as a double, also after an overflow.
  double approx() const { return approx_; }
  /// True when valid and at most `limit`.
  bool fitsIn(int64_t limit) const { return valid_ && value_ <= limit; }

  CheckedSize operator*(CheckedSize o) const {
    CheckedSize r;
    r.approx_ = approx_ * o.approx_;
    r.valid_ = valid_ && o.valid_ &&
               !__builtin_mul_overflow(value_, o.value_, &r.value_);
    return r;
  }
  CheckedSize operator+(CheckedSize o) const {
    CheckedSize r;
    r.approx_ = approx_ + o.approx_;
    r.valid_ = valid_ && o.valid_ &&
               !__builtin_add_overflow(value_, o.value_, &r.value_);
    return r;
  }
  CheckedSize &operator*=(CheckedSize o) { return *this = *this * o; }
  CheckedSize &operator+=(CheckedSize o) { return *this = *this + o; }

private:
  int64_t value_ = 0;
  double approx_ = 0;
  bool valid_ = true;
};

/// The number of elements of `dims` (any range of integers). A negative dim
/// makes the count invalid.
template <typename Dims> CheckedSize elementCount(const Dims &dims) {
  CheckedSize n(1);
  for (auto d : dims)
    n *= CheckedSize(static_cast<int64_t>(d));
  return n;
}
inline CheckedSize elementCount(std::initializer_list<int64_t> dims) {
  return elementCount<std::initializer_list<int64_t>>(dims);
}

/// The bytes of a tensor of `dims` with `elementBytes`-byte elements.
template <typename Dims>
CheckedSize byteSize(const Dims &dims, int64_t elementBytes) {
  return elementCount(dims) * CheckedSize(elementBytes);
}

/// "[2, 3]", printing every dim as the signed number it is.
template <typename Dims> std::string shapeText(const Dims &dims) {
  std::string s = "[";
  bool first = true;
  for (auto d : dims) {
    s += first ? "" : ", ";
    s += std::to_string(static_cast<int64_t>(d));
    first = false;
  }
  return s + "]";
}

/// "1024" when valid, else "about 1.8e+19" (never a wrapped number).
inline std::string countText(CheckedSize n) {
  if (n.valid())
    return std::to_string(n.value());
  char buf[48];
  std::snprintf(buf, sizeof buf, "about %.2g", n.approx());
  return buf;
}

/// "512 bytes", "3.6 TiB", "16 EiB": a size for people.
inline std::string bytesText(double bytes) {
  static const char *const units[] = {"bytes", "KiB", "MiB", "GiB",
                                      "TiB",   "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  char buf[48];
  if (u == 0 || bytes >= 100)
    std::snprintf(buf, sizeof buf, "%.0f %s", bytes, units[u]);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", bytes, units[u]);
  if (bytes >= 1024) // beyond EiB: say so instead of "20000 EiB"
    std::snprintf(buf, sizeof buf, "%.2g bytes", bytes * std::pow(1024.0, u));
  return buf;
}

/// Checks a tensor of `dims` and `elementBytes`-byte elements against
/// `limit` bytes. Returns "" when it fits, else the reason, ready to follow
/// a name: "has shape [1000000, 1000000] (1000000000000 elements, 3.6 TiB),
/// more than the 1.0 TiB llmc allows for one tensor".
template <typename Dims>
std::string tensorSizeError(const Dims &dims, int64_t elementBytes,
                            int64_t limit = kMaxTensorBytes,
                            const char *what = "llmc allows for one tensor") {
  for (auto d : dims)
    if (static_cast<int64_t>(d) < 0)
      return "has the negative dim " + std::to_string(static_cast<int64_t>(d)) +
             " in shape " + shapeText(dims);
  CheckedSize n = elementCount(dims);
  CheckedSize bytes = n * CheckedSize(elementBytes);
  if (bytes.fitsIn(limit))
    return "";
  std::string s = "has shape " + shapeText(dims) + " (" + countText(n) +
                  " elements, " + bytesText(bytes.approx()) + ")";
  if (!n.valid())
    return s + ", more elements than a 64-bit count holds";
  return s + ", more than the " + bytesText(static_cast<double>(limit)) + " " +
         what;
}

/// The machine's physical memory in bytes (0 when unknown).
inline int64_t physicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0)
    return 0;
  return (CheckedSize(pages) * CheckedSize(page)).value();
}

} // namespace llmc

#endif // LLMC_RUNTIME_CHECKEDSIZE_H
