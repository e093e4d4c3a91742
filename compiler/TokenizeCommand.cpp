//===- TokenizeCommand.cpp - `llmc tokenize`: text to token shards --------===//
//
// Turns a text file (plain or gzip) into llm.c-compatible token shards with
// byte-level tokenization (vocab 256), optionally holding out the tail as a
// validation shard. Byte-level keeps the project free of tokenizer
// downloads; shards made by llm.c's GPT-2 tokenizer scripts work unchanged
// with `llmc train`.
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver.h"
#include "runtime/TokenFile.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <zlib.h>

namespace llmc {

/// Reads a whole file through zlib, which passes plain files through and
/// inflates gzip ones.
static bool readText(const std::string &path, std::string &text,
                     std::string &error) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) {
    error = "cannot open '" + path + "'";
    return false;
  }
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0)
    text.append(buf, n);
  int code = 0;
  const char *msg = gzerror(f, &code);
  bool ok = n == 0 && code >= 0;
  if (!ok)
    error = "failed reading '" + path + "': " + (msg ? msg : "zlib error");
  gzclose(f);
  return ok;
}

static int usage(llvm::raw_ostream &os, int code) {
  os << "usage: llmc tokenize INPUT(.txt|.gz) -o TRAIN.bin [--val VAL.bin "
        "--val-fraction F]\n\nByte-level tokenization (vocab 256) into "
        "llm.c .bin shards (docs/token-format.md).\n";
  return code;
}

int runTokenize(const Args &args) {
  std::string input, output, val;
  double valFraction = 0.1;
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
    if (!a.empty() && a[0] != '-' && input.empty()) {
      input = a;
      continue;
    }
    llvm::errs() << "llmc tokenize: error: unexpected argument '" << a
                 << "'\n";
    return usage(llvm::errs(), 2);
  }
  if (input.empty() || output.empty()) {
    llvm::errs() << "llmc tokenize: error: need an input file and -o\n";
    return usage(llvm::errs(), 2);
  }
  std::string text, error;
  if (!readText(input, text, error)) {
    llvm::errs() << "llmc tokenize: error: " << error << "\n";
    return 1;
  }
  std::vector<uint16_t> tokens = tokenizeBytes(text);
  std::vector<uint16_t> valTokens;
  if (!val.empty()) {
    size_t cut = tokens.size() - static_cast<size_t>(tokens.size() * valFraction);
    valTokens.assign(tokens.begin() + cut, tokens.end());
    tokens.resize(cut);
  }
  for (auto [path, toks] : {std::pair<std::string, std::vector<uint16_t> *>{
                                output, &tokens},
                            {val, &valTokens}}) {
    if (path.empty())
      continue;
    Status s = writeTokenFile(path, *toks);
    if (!s) {
      llvm::errs() << "llmc tokenize: error: " << s.message() << "\n";
      return 1;
    }
    llvm::outs() << path << ": " << toks->size() << " tokens\n";
  }
  return 0;
}

} // namespace llmc
