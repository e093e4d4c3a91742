//===- KernelCache.h - On-disk cache of NVRTC-compiled cubins ---*- C++ -*-===//
//
// NVRTC takes from a tenth of a second to seconds per kernel; a model has
// hundreds. Compiled cubins are kept on disk, one file per kernel, named by a
// hash of everything that determines the output: the source, the target arch,
// the compile options and the NVRTC version. A changed kernel, a different GPU
// or a toolkit upgrade therefore misses the cache instead of loading a stale
// cubin.
//
// Directory: $LLMC_CACHE_DIR, else $XDG_CACHE_HOME/llmc, else ~/.cache/llmc.
// Files are written to a temporary name and renamed, so that concurrent
// compilers and crashes never leave a half-written entry under a valid name.
//
// The cache does not trust its files: a disk error, a copy from another
// machine or a stray edit must not put a damaged cubin into a run or into a
// bundle (which would seal it with fresh checksums). Each entry, <key>.kce,
// is
//
//   offset 0   "LLMCKCE1"   8-byte magic (the entry format's version)
//          8   u64          content bytes N
//         16   u64          checksum64 of the content
//         24   32 bytes     the key, so an entry copied under another name
//                           is refused
//         56   8 bytes      zero
//         64   N bytes      the cubin
//
// and is verified before use. A bad entry is reported (Corrupt, with the
// reason), recompiled and replaced. The checksum catches accidents, not
// attacks: whoever can write the cache directory can run code on the GPU
// (docs/trust-model.md).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_KERNELCACHE_H
#define LLMC_RUNTIME_KERNELCACHE_H

#include "runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llmc {

class KernelCache {
public:
  explicit KernelCache(std::string dir) : dir_(std::move(dir)) {}

  /// $LLMC_CACHE_DIR, $XDG_CACHE_HOME/llmc or ~/.cache/llmc; empty when none
  /// of the variables is set (then nothing is cached).
  static std::string defaultDir();

  /// The cache key: 32 hex digits over source, arch, options and version.
  static std::string key(const std::string &source, const std::string &arch,
                         const std::vector<std::string> &options,
                         const std::string &nvrtcVersion);

  enum class Entry { Missing, Valid, Corrupt };

  /// Reads and verifies the entry for `key`. Valid: `cubin` holds it.
  /// Corrupt: `problem` says what is wrong ("checksum mismatch",
  /// "truncated: 100 of 6480 content bytes", ...) and `cubin` is untouched.
  Entry lookup(const std::string &key, std::vector<uint8_t> &cubin,
               std::string &problem) const;

  /// Stores `cubin` under `key` (replacing a corrupt entry), creating the
  /// directory when needed.
  Status store(const std::string &key, const std::vector<uint8_t> &cubin) const;

  const std::string &dir() const { return dir_; }
  std::string pathFor(const std::string &key) const;

private:
  std::string dir_;
};

} // namespace llmc

#endif // LLMC_RUNTIME_KERNELCACHE_H
