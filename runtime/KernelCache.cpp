//===- KernelCache.cpp - On-disk cache of NVRTC-compiled cubins -----------===//
#include "runtime/KernelCache.h"
#include "runtime/AtomicFile.h"
#include "runtime/Hash.h"

#include <algorithm>
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
  return dir_ + "/" + key + ".kce";
}

namespace {

constexpr char kEntryMagic[8] = {'L', 'L', 'M', 'C', 'K', 'C', 'E', '1'};
constexpr size_t kEntryHeaderBytes = 64;
constexpr size_t kKeyBytes = 32;

void putU64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t getU64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

/// The whole entry file: header, then the cubin.
std::vector<uint8_t> entryBytes(const std::string &key,
                                const std::vector<uint8_t> &cubin) {
  std::vector<uint8_t> entry(kEntryHeaderBytes, 0);
  std::memcpy(entry.data(), kEntryMagic, 8);
  putU64(entry.data() + 8, cubin.size());
  putU64(entry.data() + 16, checksum64(cubin.data(), cubin.size()));
  std::memcpy(entry.data() + 24, key.data(), std::min(key.size(), kKeyBytes));
  entry.insert(entry.end(), cubin.begin(), cubin.end());
  return entry;
}

/// Empty when `bytes` is a sound entry for `key`, else what is wrong.
std::string checkEntry(const std::string &key,
                       const std::vector<uint8_t> &bytes) {
  if (bytes.size() < kEntryHeaderBytes)
    return "truncated: " + std::to_string(bytes.size()) + " bytes, less than "
           "the " + std::to_string(kEntryHeaderBytes) + "-byte entry header";
  if (std::memcmp(bytes.data(), kEntryMagic, 8) != 0)
    return "not a kernel cache entry (bad magic)";
  std::string stored(reinterpret_cast<const char *>(bytes.data() + 24),
                     kKeyBytes);
  if (stored != key.substr(0, kKeyBytes))
    return "it holds the entry of key " + stored;
  uint64_t size = getU64(bytes.data() + 8);
  uint64_t have = bytes.size() - kEntryHeaderBytes;
  if (size != have)
    return (have < size ? "truncated: " : "padded: ") + std::to_string(have) +
           " of " + std::to_string(size) + " content bytes";
  if (checksum64(bytes.data() + kEntryHeaderBytes, have) !=
      getU64(bytes.data() + 16))
    return "its content does not match its checksum";
  static const uint8_t kElfMagic[4] = {0x7f, 'E', 'L', 'F'};
  if (have < 4 || std::memcmp(bytes.data() + kEntryHeaderBytes, kElfMagic,
                              4) != 0)
    return "its content is not an ELF cubin";
  return "";
}

} // namespace

KernelCache::Entry KernelCache::lookup(const std::string &key,
                                       std::vector<uint8_t> &cubin,
                                       std::string &problem) const {
  if (dir_.empty())
    return Entry::Missing;
  std::ifstream in(pathFor(key), std::ios::binary);
  if (!in)
    return Entry::Missing;
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad()) {
    problem = "read failed";
    return Entry::Corrupt;
  }
  problem = checkEntry(key, bytes);
  if (!problem.empty())
    return Entry::Corrupt;
  cubin.assign(bytes.begin() + kEntryHeaderBytes, bytes.end());
  return Entry::Valid;
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
  // Concurrent writers of one key each rename a complete entry over it.
  std::vector<uint8_t> entry = entryBytes(key, cubin);
  Status s = writeFileAtomically(
      pathFor(key), std::string_view(reinterpret_cast<const char *>(entry.data()),
                                     entry.size()));
  return s ? s : s.withContext("kernel cache");
}

} // namespace llmc
