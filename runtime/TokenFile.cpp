//===- TokenFile.cpp - llm.c-compatible token shards ----------------------===//
#include "runtime/TokenFile.h"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace llmc {

Status readTokenFile(const std::string &path, std::vector<uint16_t> &tokens) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error("cannot open token file '" + path +
                         "': " + std::strerror(errno));
  int32_t header[kTokenFileHeaderInts];
  in.read(reinterpret_cast<char *>(header), sizeof(header));
  if (in.gcount() != static_cast<std::streamsize>(sizeof(header)))
    return Status::error("token file '" + path +
                         "' is shorter than its 1024-byte header");
  if (header[0] != kTokenFileMagic)
    return Status::error("token file '" + path + "' has magic " +
                         std::to_string(header[0]) + ", expected " +
                         std::to_string(kTokenFileMagic) +
                         " (llm.c .bin shard format, see docs/token-format.md)");
  if (header[1] != kTokenFileVersion)
    return Status::error("token file '" + path + "' has version " +
                         std::to_string(header[1]) + ", only version 1 " +
                         "(uint16 tokens) is supported");
  if (header[2] < 0)
    return Status::error("token file '" + path + "' has a negative count");
  size_t count = static_cast<size_t>(header[2]);
  // Allocate only what the file can back: a damaged header must not cost
  // gigabytes before the read finds the file short.
  in.seekg(0, std::ios::end);
  uint64_t body = static_cast<uint64_t>(in.tellg()) - sizeof(header);
  in.seekg(sizeof(header));
  if (count * sizeof(uint16_t) > body)
    return Status::error("token file '" + path + "' header promises " +
                         std::to_string(count) + " tokens but the file holds " +
                         std::to_string(body / 2));
  tokens.resize(count);
  in.read(reinterpret_cast<char *>(tokens.data()),
          static_cast<std::streamsize>(count * sizeof(uint16_t)));
  if (static_cast<size_t>(in.gcount()) != count * sizeof(uint16_t))
    return Status::error("token file '" + path + "' header promises " +
                         std::to_string(count) + " tokens but the file holds " +
                         std::to_string(in.gcount() / 2));
  return Status::ok();
}

Status writeTokenFile(const std::string &path,
                      const std::vector<uint16_t> &tokens) {
  if (tokens.size() > static_cast<size_t>(INT32_MAX))
    return Status::error("too many tokens for one shard: " +
                         std::to_string(tokens.size()));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return Status::error("cannot create token file '" + path +
                         "': " + std::strerror(errno));
  int32_t header[kTokenFileHeaderInts] = {};
  header[0] = kTokenFileMagic;
  header[1] = kTokenFileVersion;
  header[2] = static_cast<int32_t>(tokens.size());
  out.write(reinterpret_cast<const char *>(header), sizeof(header));
  out.write(reinterpret_cast<const char *>(tokens.data()),
            static_cast<std::streamsize>(tokens.size() * sizeof(uint16_t)));
  if (!out)
    return Status::error("failed writing token file '" + path + "'");
  return Status::ok();
}

std::vector<uint16_t> tokenizeBytes(const std::string &text) {
  std::vector<uint16_t> tokens;
  tokens.reserve(text.size());
  for (unsigned char c : text)
    tokens.push_back(c);
  return tokens;
}

} // namespace llmc
