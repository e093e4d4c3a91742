//===- Hash.h - Hashes for cache keys and checksums -------------*- C++ -*-===//
//
// The kernel cache key and the bundle's blob checksums need a stable hash that
// is the same on every machine and build. FNV-1a is enough: it guards against
// accidents (a truncated or bit-flipped file, a changed source), not attacks.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_HASH_H
#define LLMC_RUNTIME_HASH_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace llmc {

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;

/// FNV-1a over bytes, continuing from `hash`.
inline uint64_t fnv1a(const void *data, size_t size,
                      uint64_t hash = kFnvOffset) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ bytes[i]) * kFnvPrime;
  return hash;
}

/// FNV-1a over little-endian 64-bit words, the tail zero-padded: eight times
/// faster than fnv1a, used to checksum weight blobs of hundreds of megabytes.
inline uint64_t checksum64(const void *data, size_t size) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  uint64_t hash = kFnvOffset ^ size;
  size_t words = size / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t word;
    std::memcpy(&word, bytes + 8 * i, 8);
    hash = (hash ^ word) * kFnvPrime;
    hash ^= hash >> 29;
  }
  uint64_t tail = 0;
  // An empty blob may come as a null pointer: memcpy from null is undefined
  // even for zero bytes (UBSan, the bundle fuzz target).
  if (size % 8 != 0)
    std::memcpy(&tail, bytes + 8 * words, size - 8 * words);
  return ((hash ^ tail) * kFnvPrime) ^ (hash >> 31);
}

/// Sixteen lower-case hex digits.
inline std::string hex64(uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4)
    text[i] = digits[value & 15];
  return text;
}

} // namespace llmc

#endif // LLMC_RUNTIME_HASH_H
