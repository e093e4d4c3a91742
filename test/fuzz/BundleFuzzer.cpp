//===- BundleFuzzer.cpp - libFuzzer target for the bundle reader ----------===//
//
// readBundle parses a JSON plan and validates it before anything runs. The
// header is checksummed, so raw mutations of a bundle almost never get past
// the checksum; the harness therefore takes two kinds of input:
//
//   "LLMCBNDL..."   a bundle file as is (the prefix, size and checksum checks)
//   anything else   JSON header text, optionally a NUL byte and the blob
//                   section; the harness wraps it in a valid prefix with the
//                   right sizes and header checksum, so that mutations reach
//                   the plan parser and validator (docs/fuzzing.md)
//
//===----------------------------------------------------------------------===//
#include "runtime/Bundle.h"
#include "runtime/Hash.h"
#include "test/fuzz/FuzzFile.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace {

void putLE(std::string &out, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out[at + i] = static_cast<char>(v >> (8 * i));
}

std::string wrap(const char *data, size_t size) {
  const char *nul = static_cast<const char *>(std::memchr(data, 0, size));
  size_t headerBytes = nul ? static_cast<size_t>(nul - data) : size;
  size_t blobBytes = nul ? size - headerBytes - 1 : 0;
  std::string file(llmc::kBundlePrefixBytes, '\0');
  std::memcpy(file.data(), llmc::kBundleMagic, 8);
  putLE(file, 8, llmc::kBundleVersion, 4);
  putLE(file, 16, headerBytes, 8);
  putLE(file, 24, blobBytes, 8);
  putLE(file, 32, llmc::checksum64(data, headerBytes), 8);
  file.append(data, headerBytes);
  size_t a = llmc::kBundleBlobAlignment;
  file.resize((file.size() + a - 1) / a * a, '\0');
  if (nul)
    file.append(nul + 1, blobBytes);
  return file;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *bytes = reinterpret_cast<const char *>(data);
  std::string file = size >= 8 && std::memcmp(bytes, llmc::kBundleMagic, 8) == 0
                         ? std::string(bytes, size)
                         : wrap(bytes, size);
  llmc::fuzz::MemFile memFile(file.data(), file.size());
  llmc::Plan plan;
  llmc::Status status = llmc::readBundle(memFile.path(), plan);
  (void)status;
  return 0;
}
