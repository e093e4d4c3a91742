//===- TokenFile.h - llm.c-compatible token shards ----------------*- C++ -*-===//
//
// Training data is a stream of token ids in llm.c's .bin shard format, so that
// shards prepared for llm.c work unchanged:
//
//   header: 256 little-endian int32: [0] = 20240520 (magic), [1] = 1 (version),
//           [2] = number of tokens, the rest zero
//   body:   that many uint16 token ids
//
// Vocabularies above 65535 ids do not fit this format; llm.c has the same
// limit. docs/token-format.md documents the format for users.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_TOKENFILE_H
#define LLMC_RUNTIME_TOKENFILE_H

#include "runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llmc {

constexpr int32_t kTokenFileMagic = 20240520;
constexpr int32_t kTokenFileVersion = 1;
constexpr size_t kTokenFileHeaderInts = 256;

/// Reads a whole shard. Errors name the file and what is wrong with it.
Status readTokenFile(const std::string &path, std::vector<uint16_t> &tokens);

/// Writes a shard; the inverse of readTokenFile.
Status writeTokenFile(const std::string &path,
                      const std::vector<uint16_t> &tokens);

/// Byte-level tokenization: one token per byte (vocab 256). Used for the
/// bundled sample text so the project needs no tokenizer download.
std::vector<uint16_t> tokenizeBytes(const std::string &text);

} // namespace llmc

#endif // LLMC_RUNTIME_TOKENFILE_H
