//===- KernelCache.cpp - On-disk cache of NVRTC-compiled cubins -----------===//
#include "runtime/KernelCache.h"
#include "runtime/AtomicFile.h"
#include "runtime/Hash.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace llmc {

std::string KernelCache::defaultDir() {
  if (const char *dir = std::getenv("LLMC_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/llmc";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/llmc";
  return "";
}

std::string KernelCache::key(const std::string &source, const std::string &arch,
                             const std::vector<std::string> &options,
                             const std::string &nvrtcVersion) {
  // Each field is followed by its length so that moving text from one field
  // to the next changes the key. Two seeds give 128 bits.
  auto hashAll = [&](uint64_t seed) {
    uint64_t h = seed;
    auto add = [&](const std::string &field) {
      h = fnv1a(field.data(), field.size(), h);
      uint64_t size = field.size();
      h = fnv1a(&size, sizeof(size), h);
    };
    add(source);
    add(arch);
    for (const std::string &option : options)
      add(option);
    add(nvrtcVersion);
    return h;
  };
  return hex64(hashAll(kFnvOffset)) +
         hex64(hashAll(kFnvOffset ^ 0x9e3779b97f4a7c15ull));
}

std::string KernelCache::pathFor(const std::string &key) const {
  return dir_ + "/" + key + ".cubin";
}

bool KernelCache::lookup(const std::string &key,
                         std::vector<uint8_t> &cubin) const {
  if (dir_.empty())
    return false;
  std::ifstream in(pathFor(key), std::ios::binary);
  if (!in)
    return false;
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  static const uint8_t kElfMagic[4] = {0x7f, 'E', 'L', 'F'};
  if (bytes.size() < 64 || std::memcmp(bytes.data(), kElfMagic, 4) != 0)
    return false;
  cubin = std::move(bytes);
  return true;
}

Status KernelCache::store(const std::string &key,
                          const std::vector<uint8_t> &cubin) const {
  if (dir_.empty())
    return Status::ok();
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec)
    return Status::error("cannot create kernel cache directory " + dir_ + ": " +
                         ec.message() +
                         " (set LLMC_CACHE_DIR to a writable directory)");
  // Concurrent writers of one key each rename a complete file over it.
  Status s = writeFileAtomically(
      pathFor(key), std::string_view(reinterpret_cast<const char *>(cubin.data()),
                                     cubin.size()));
  return s ? s : s.withContext("kernel cache");
}

} // namespace llmc
