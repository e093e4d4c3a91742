//===- TokenFile.h - llm.c-compatible token shards ----------------*- C++
//-*-===//
//
// Training data is a stream of token ids in llm.c's .bin shard format, so that
// shards prepared for llm.c work unchanged:
//
//   header: 256 little-endian int32: [0] = 20240520 (magic), [1] = 1 (version),
//           [2] = number of tokens, the rest zero
//   body:   that many uint16 token ids
//
// Vocabularies above 65535 ids do not fit this format; llm.c has the same
// limit. A corpus is one shard or several (train_000000.bin, ...);
// docs/token-format.md documents the format and the naming for users.
//
// Every reader checks the header against the file's size before it
// allocates anything, so a damaged header costs no memory.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_TOKENFILE_H
#define LLMC_RUNTIME_TOKENFILE_H

#include "runtime/AtomicFile.h"
#include "runtime/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llmc {

constexpr int32_t kTokenFileMagic = 20240520;
constexpr int32_t kTokenFileVersion = 1;
constexpr size_t kTokenFileHeaderInts = 256;
constexpr uint64_t kTokenFileHeaderBytes = kTokenFileHeaderInts * 4;
/// The header's int32 count bounds a shard.
constexpr uint64_t kMaxShardTokens = INT32_MAX;
/// `llmc tokenize`'s default shard size: llm.c's FineWeb shards hold 100M.
constexpr uint64_t kDefaultShardTokens = 100'000'000;

/// Checks the header of a shard and that the file's size is exactly what
/// the header promises; `count` is its number of tokens. Reads 1 KiB.
Status readTokenFileHeader(const std::string &path, uint64_t &count);

/// Reads a whole shard. Errors name the file and what is wrong with it.
Status readTokenFile(const std::string &path, std::vector<uint16_t> &tokens);

/// Streams through a shard (bounded memory) and fails on the first token id
/// that is not below `vocab`, naming the shard, the position and the id.
Status checkTokenVocabulary(const std::string &path, int64_t vocab);

/// Writes one shard; the inverse of readTokenFile.
Status writeTokenFile(const std::string &path,
                      const std::vector<uint16_t> &tokens);

/// The name of shard `index` of a corpus written to `path`:
/// train.bin -> train_000000.bin (llm.c's FineWeb shards are numbered the
/// same way; six digits keep the names in order when sorted).
std::string tokenShardName(const std::string &path, size_t index);

/// The shards named by a --data argument: a comma-separated list of paths
/// and globs (`'train_*.bin'`), in the order given, each glob's matches
/// sorted bytewise (not by locale) so that training order is the same on
/// every machine. A glob that matches nothing is an error.
Status resolveTokenShards(const std::string &spec,
                          std::vector<std::string> &paths);

/// Writes a token stream of unknown length in bounded memory. Tokens go to
/// `path` while they fit one shard of `shardTokens`; when more follow, the
/// stream becomes shards tokenShardName(path, 0), (path, 1), ... and `path`
/// itself is not written. Nothing is visible until finish(): a failed or
/// interrupted stream leaves no shard, not even a complete first one.
class TokenShardWriter {
public:
  Status open(const std::string &path,
              uint64_t shardTokens = kDefaultShardTokens);
  Status append(const uint16_t *tokens, size_t count);
  /// Fills in the headers and commits every shard (an empty stream makes
  /// one empty shard).
  Status finish();

  struct Shard {
    std::string path;
    uint64_t tokens;
  };
  /// The shards committed by finish().
  const std::vector<Shard> &shards() const { return shards_; }

private:
  Status startShard();

  std::string path_;
  uint64_t shardTokens_ = 0;
  std::vector<std::unique_ptr<AtomicFile>> files_; // the last one is open
  std::vector<uint64_t> counts_;
  std::vector<Shard> shards_;
};

/// Byte-level tokenization: one token per byte (vocab 256). Used for the
/// bundled sample text so the project needs no tokenizer download.
std::vector<uint16_t> tokenizeBytes(const std::string &text);

} // namespace llmc

#endif // LLMC_RUNTIME_TOKENFILE_H
