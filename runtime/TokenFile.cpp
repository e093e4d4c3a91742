//===- TokenFile.cpp - llm.c-compatible token shards ----------------------===//
#include "runtime/TokenFile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

namespace llmc {

namespace {

/// Reads exactly `size` bytes at `offset`; false with errno (0 at the end of
/// the file) otherwise.
bool readAt(int fd, void *data, size_t size, uint64_t offset) {
  char *p = static_cast<char *>(data);
  while (size > 0) {
    ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0)
        errno = 0;
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

/// An open file descriptor that closes itself.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

std::string readError(const std::string &path, int err) {
  return "cannot read token file '" + path +
         "': " + (err ? std::strerror(err) : "unexpected end of file");
}

/// Opens a shard and checks its header and size (readTokenFileHeader).
Status openShard(const std::string &path, Fd &fd, uint64_t &count) {
  fd.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd.fd < 0)
    return Status::error("cannot open token file '" + path +
                         "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd.fd, &st) != 0)
    return Status::error(readError(path, errno));
  if (S_ISDIR(st.st_mode))
    return Status::error("token file '" + path + "' is a directory");
  uint64_t fileSize = static_cast<uint64_t>(st.st_size);
  if (fileSize < kTokenFileHeaderBytes)
    return Status::error("token file '" + path +
                         "' is shorter than its 1024-byte header");
  int32_t header[kTokenFileHeaderInts];
  if (!readAt(fd.fd, header, sizeof(header), 0))
    return Status::error(readError(path, errno));
  if (header[0] != kTokenFileMagic)
    return Status::error(
        "token file '" + path + "' has magic " + std::to_string(header[0]) +
        ", expected " + std::to_string(kTokenFileMagic) +
        " (llm.c .bin shard format, see docs/token-format.md)");
  if (header[1] != kTokenFileVersion)
    return Status::error("token file '" + path + "' has version " +
                         std::to_string(header[1]) + ", only version 1 " +
                         "(uint16 tokens) is supported");
  if (header[2] < 0)
    return Status::error("token file '" + path + "' has a negative count (" +
                         std::to_string(header[2]) + ")");
  count = static_cast<uint64_t>(header[2]);
  // Checked before anything is allocated: a header promising 2^31 tokens
  // must not cost 4 GB when the file holds a few.
  uint64_t body = fileSize - kTokenFileHeaderBytes;
  if (body != count * sizeof(uint16_t))
    return Status::error("token file '" + path + "' header promises " +
                         std::to_string(count) + " tokens but the file holds " +
                         std::to_string(body / 2) +
                         (body % 2 ? " and a half" : "") +
                         " (a truncated or damaged shard: write it again)");
  return Status::ok();
}

} // namespace

Status readTokenFileHeader(const std::string &path, uint64_t &count) {
  Fd fd;
  return openShard(path, fd, count);
}

Status readTokenFile(const std::string &path, std::vector<uint16_t> &tokens) {
  Fd fd;
  uint64_t count = 0;
  LLMC_RETURN_IF_ERROR(openShard(path, fd, count));
  tokens.resize(count);
  if (!readAt(fd.fd, tokens.data(), count * sizeof(uint16_t),
              kTokenFileHeaderBytes))
    return Status::error(readError(path, errno));
  return Status::ok();
}

Status checkTokenVocabulary(const std::string &path, int64_t vocab) {
  Fd fd;
  uint64_t count = 0;
  LLMC_RETURN_IF_ERROR(openShard(path, fd, count));
  std::vector<uint16_t> chunk(1 << 20);
  for (uint64_t at = 0; at < count;) {
    size_t n =
        static_cast<size_t>(std::min<uint64_t>(chunk.size(), count - at));
    if (!readAt(fd.fd, chunk.data(), n * sizeof(uint16_t),
                kTokenFileHeaderBytes + at * sizeof(uint16_t)))
      return Status::error(readError(path, errno));
    for (size_t i = 0; i < n; ++i)
      if (chunk[i] >= vocab)
        return Status::error(
            "token file '" + path + "' has token " + std::to_string(chunk[i]) +
            " at position " + std::to_string(at + i) +
            ", outside the model's vocabulary of " + std::to_string(vocab));
    at += n;
  }
  return Status::ok();
}

Status writeTokenFile(const std::string &path,
                      const std::vector<uint16_t> &tokens) {
  if (tokens.size() > kMaxShardTokens)
    return Status::error(
        "too many tokens for one shard: " + std::to_string(tokens.size()) +
        " (at most " + std::to_string(kMaxShardTokens) + ")");
  TokenShardWriter writer;
  LLMC_RETURN_IF_ERROR(writer.open(path, kMaxShardTokens));
  LLMC_RETURN_IF_ERROR(writer.append(tokens.data(), tokens.size()));
  return writer.finish();
}

//===----------------------------------------------------------------------===//
// Shard names and --data
//===----------------------------------------------------------------------===//

std::string tokenShardName(const std::string &path, size_t index) {
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1))
    dot = path.size(); // no extension (or a dot file): append the number
  std::string digits = std::to_string(index);
  if (digits.size() < 6)
    digits.insert(0, 6 - digits.size(), '0');
  return path.substr(0, dot) + "_" + digits + path.substr(dot);
}

Status resolveTokenShards(const std::string &spec,
                          std::vector<std::string> &paths) {
  paths.clear();
  struct stat st;
  if (spec.empty())
    return Status::error("no token file given");
  if (::stat(spec.c_str(), &st) == 0) { // a name that itself has a comma
    paths.push_back(spec);
    return Status::ok();
  }
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos)
      comma = spec.size();
    std::string item = spec.substr(start, comma - start);
    start = comma + 1;
    if (item.empty())
      return Status::error("empty token file name in '" + spec + "'");
    if (item.find_first_of("*?[") == std::string::npos) {
      paths.push_back(item);
      continue;
    }
    glob_t g = {};
    int rc = ::glob(item.c_str(), 0, nullptr, &g);
    std::vector<std::string> matches(g.gl_pathv, g.gl_pathv + g.gl_pathc);
    ::globfree(&g);
    if (rc == GLOB_NOMATCH || (rc == 0 && matches.empty()))
      return Status::error("'" + item + "' matches no token file");
    if (rc != 0)
      return Status::error("cannot list the token files of '" + item + "'");
    // glob(3) sorts by the locale's collation; bytewise order is the same
    // everywhere.
    std::sort(matches.begin(), matches.end());
    paths.insert(paths.end(), matches.begin(), matches.end());
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// TokenShardWriter
//===----------------------------------------------------------------------===//

Status TokenShardWriter::open(const std::string &path, uint64_t shardTokens) {
  if (shardTokens < 1 || shardTokens > kMaxShardTokens)
    return Status::error("a shard holds 1 to " +
                         std::to_string(kMaxShardTokens) + " tokens, not " +
                         std::to_string(shardTokens));
  path_ = path;
  shardTokens_ = shardTokens;
  files_.clear();
  counts_.clear();
  shards_.clear();
  return startShard();
}

Status TokenShardWriter::startShard() {
  // Every shard starts as a temporary next to `path` and is renamed to its
  // final name by finish(), when the number of shards is known.
  files_.push_back(std::make_unique<AtomicFile>());
  counts_.push_back(0);
  LLMC_RETURN_IF_ERROR(files_.back()->open(path_));
  int32_t header[kTokenFileHeaderInts] = {};
  header[0] = kTokenFileMagic;
  header[1] = kTokenFileVersion;
  return files_.back()->write(header, sizeof(header));
}

Status TokenShardWriter::append(const uint16_t *tokens, size_t count) {
  while (count > 0) {
    if (counts_.back() == shardTokens_)
      LLMC_RETURN_IF_ERROR(startShard()); // full, and more follows
    size_t n = static_cast<size_t>(
        std::min<uint64_t>(count, shardTokens_ - counts_.back()));
    LLMC_RETURN_IF_ERROR(files_.back()->write(tokens, n * sizeof(uint16_t)));
    counts_.back() += n;
    tokens += n;
    count -= n;
  }
  return Status::ok();
}

Status TokenShardWriter::finish() {
  for (size_t i = 0; i < files_.size(); ++i) {
    int32_t count = static_cast<int32_t>(counts_[i]);
    LLMC_RETURN_IF_ERROR(files_[i]->writeAt(8, &count, sizeof(count)));
  }
  for (size_t i = 0; i < files_.size(); ++i) {
    std::string name = files_.size() == 1 ? path_ : tokenShardName(path_, i);
    LLMC_RETURN_IF_ERROR(files_[i]->commitAs(name));
    shards_.push_back({name, counts_[i]});
  }
  files_.clear();
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
