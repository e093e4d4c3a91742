//===- TokenizeCommand.cpp - `llmc tokenize`: text to token shards --------===//
//
// Turns a text file (plain or gzip) into llm.c-compatible token shards with
// byte-level tokenization (vocab 256), optionally holding out the tail as a
// validation shard. Byte-level keeps the project free of tokenizer
// downloads; shards made by llm.c's GPT-2 tokenizer scripts work unchanged
// with `llmc train`.
//
// The text streams through in 1 MiB chunks, so memory stays bounded
// whatever the corpus size; a corpus beyond one shard (--shard-tokens)
// becomes numbered shards (docs/token-format.md). Knowing where the
// validation tail starts needs the length first: the file size for plain
// text, one extra decompressing pass for gzip.
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver.h"
#include "runtime/TokenFile.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sys/stat.h>
#include <vector>
#include <zlib.h>

namespace llmc {

namespace {

/// A text file read through zlib, which passes plain files through and
/// inflates gzip ones.
class TextReader {
public:
  ~TextReader() {
    if (file_)
      gzclose(file_);
  }
  bool open(const std::string &path, std::string &error) {
    path_ = path;
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) {
      error = "cannot open '" + path + "'";
      return false;
    }
    return true;
  }
  /// Bytes read into `buf` (0 at the end); -1 with `error` on failure.
  int read(char *buf, unsigned size, std::string &error) {
    int n = gzread(file_, buf, size);
    int code = 0;
    const char *msg = gzerror(file_, &code);
    if (n < 0 || code < 0) {
      error = "failed reading '" + path_ + "': " + (msg ? msg : "zlib error");
      return -1;
    }
    return n;
  }
  bool compressed() { return !gzdirect(file_); }

private:
  gzFile file_ = nullptr;
  std::string path_;
};

constexpr unsigned kChunk = 1 << 20;

/// The text's length in bytes: its size on disk when plain, a decompressing
/// pass when gzip.
bool textLength(const std::string &path, uint64_t &length, std::string &error) {
  TextReader reader;
  if (!reader.open(path, error))
    return false;
  struct stat st;
  if (!reader.compressed() && ::stat(path.c_str(), &st) == 0 &&
      S_ISREG(st.st_mode)) {
    length = static_cast<uint64_t>(st.st_size);
    return true;
  }
  std::vector<char> buf(kChunk);
  length = 0;
  for (int n; (n = reader.read(buf.data(), kChunk, error)) != 0;) {
    if (n < 0)
      return false;
    length += static_cast<uint64_t>(n);
  }
  return true;
}

int usage(llvm::raw_ostream &os, int code) {
  os << "usage: llmc tokenize INPUT(.txt|.gz) -o TRAIN.bin [--val VAL.bin "
        "--val-fraction F]\n                     [--shard-tokens N]\n\n"
        "Byte-level tokenization (vocab 256) into llm.c .bin shards\n"
        "(docs/token-format.md). A corpus of more than --shard-tokens tokens\n"
        "(default 100000000) becomes TRAIN_000000.bin, TRAIN_000001.bin, ...\n"
        "instead of TRAIN.bin; train on them with --data 'TRAIN_*.bin'.\n";
  return code;
}

int fail(const std::string &message) {
  llvm::errs() << "llmc tokenize: error: " << message << "\n";
  return 1;
}

} // namespace

int runTokenize(const Args &args) {
  std::string input, output, val;
  double valFraction = 0.1;
  uint64_t shardTokens = kDefaultShardTokens;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    auto next = [&](std::string &dst) {
      if (i + 1 >= args.size())
        return false;
      dst = args[++i];
      return true;
    };
    std::string num;
    if (a == "--help" || a == "-h")
      return usage(llvm::outs(), 0);
    if ((a == "-o" && next(output)) || (a == "--val" && next(val)))
      continue;
    if (a == "--val-fraction" && next(num)) {
      char *end = nullptr;
      valFraction = std::strtod(num.c_str(), &end);
      if (*end || !(valFraction > 0 && valFraction < 1)) { // NaN too
        llvm::errs() << "llmc tokenize: error: --val-fraction must be in "
                        "(0, 1), got '"
                     << num << "'\n";
        return 2;
      }
      continue;
    }
    if (a == "--shard-tokens" && next(num)) {
      char *end = nullptr;
      errno = 0;
      unsigned long long n = std::strtoull(num.c_str(), &end, 10);
      if (num.empty() || num[0] == '-' || *end || errno == ERANGE || n < 1 ||
          n > kMaxShardTokens) {
        llvm::errs() << "llmc tokenize: error: --shard-tokens must be an "
                        "integer in [1, "
                     << kMaxShardTokens << "], got '" << num << "'\n";
        return 2;
      }
      shardTokens = n;
      continue;
    }
    if (!a.empty() && a[0] != '-' && input.empty()) {
      input = a;
      continue;
    }
    llvm::errs() << "llmc tokenize: error: unexpected argument '" << a << "'\n";
    return usage(llvm::errs(), 2);
  }
  if (input.empty() || output.empty()) {
    llvm::errs() << "llmc tokenize: error: need an input file and -o\n";
    return usage(llvm::errs(), 2);
  }

  if (!val.empty() && val == output) {
    llvm::errs() << "llmc tokenize: error: --val and -o name the same file '"
                 << val << "'\n";
    return 2;
  }

  std::string error;
  // Tokens before `cut` train, the rest validate (the tail --val-fraction).
  uint64_t cut = UINT64_MAX;
  if (!val.empty()) {
    uint64_t length = 0;
    if (!textLength(input, length, error))
      return fail(error);
    cut = length -
          static_cast<uint64_t>(static_cast<double>(length) * valFraction);
  }
  TextReader reader;
  if (!reader.open(input, error))
    return fail(error);
  TokenShardWriter train, held;
  if (Status s = train.open(output, shardTokens); !s)
    return fail(s.message());
  if (!val.empty())
    if (Status s = held.open(val, shardTokens); !s)
      return fail(s.message());

  std::vector<char> text(kChunk);
  std::vector<uint16_t> tokens(kChunk);
  uint64_t position = 0;
  for (int n; (n = reader.read(text.data(), kChunk, error)) != 0;) {
    if (n < 0)
      return fail(error);
    for (int i = 0; i < n; ++i)
      tokens[i] = static_cast<unsigned char>(text[i]);
    size_t toTrain = static_cast<size_t>(
        std::min<uint64_t>(n, cut > position ? cut - position : 0));
    if (Status s = train.append(tokens.data(), toTrain); !s)
      return fail(s.message());
    if (toTrain < static_cast<size_t>(n))
      if (Status s = held.append(tokens.data() + toTrain, n - toTrain); !s)
        return fail(s.message());
    position += static_cast<uint64_t>(n);
  }
  for (TokenShardWriter *w : {&train, &held}) {
    if (w == &held && val.empty())
      continue;
    if (Status s = w->finish(); !s)
      return fail(s.message());
    for (const TokenShardWriter::Shard &shard : w->shards())
      llvm::outs() << shard.path << ": " << shard.tokens << " tokens\n";
  }
  return 0;
}

} // namespace llmc
