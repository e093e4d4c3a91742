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

  /// True and fills `cubin` when `key` is cached and looks like an ELF file
  /// (anything else, e.g. a file truncated by a full disk, is a miss).
  bool lookup(const std::string &key, std::vector<uint8_t> &cubin) const;

  /// Stores `cubin` under `key`, creating the directory when needed.
  Status store(const std::string &key, const std::vector<uint8_t> &cubin) const;

  const std::string &dir() const { return dir_; }
  std::string pathFor(const std::string &key) const;

private:
  std::string dir_;
};

} // namespace llmc

#endif // LLMC_RUNTIME_KERNELCACHE_H
