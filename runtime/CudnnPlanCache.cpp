//===- CudnnPlanCache.cpp - cuDNN plan files: keys, format, I/O -----------===//
//
// Text header lines, then cuDNN's serialized plan as raw bytes with its
// length in the header: the text is cuDNN's own and is never parsed here,
// only handed back (it may hold any byte, a trailing NUL included).
//
//===----------------------------------------------------------------------===//
#include "runtime/CudnnPlanCache.h"

#include "runtime/AtomicFile.h"
#include "runtime/Hash.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace llmc {
namespace {

constexpr const char *kMagic = "llmc cudnn plan 1";

/// The next '\n'-terminated line from `pos`, or false at the end.
bool nextLine(const std::string &bytes, size_t &pos, std::string &line) {
  size_t end = bytes.find('\n', pos);
  if (end == std::string::npos)
    return false;
  line = bytes.substr(pos, end - pos);
  pos = end + 1;
  return true;
}

/// `line` is "<name> <rest>"; `rest` gets what follows the name.
bool field(const std::string &line, const std::string &name,
           std::string &rest) {
  if (line.compare(0, name.size() + 1, name + " ") != 0)
    return false;
  rest = line.substr(name.size() + 1);
  return true;
}

} // namespace

std::string attentionPlanKey(const CudnnAttentionDesc &d) {
  char scale[32];
  std::snprintf(scale, sizeof scale, "%.17g", d.scale);
  std::string key = describe(d) + " scale " + scale;
  for (const Strides4 *s : {&d.q, &d.k, &d.v, &d.o, &d.dO, &d.dQ, &d.dK, &d.dV})
    for (int64_t x : *s)
      key += " " + std::to_string(x);
  return key;
}

std::string cudnnPlanKey(const CudnnAttentionDesc &desc, int64_t cudnnVersion,
                         const std::string &device,
                         const std::string &llmcBinary) {
  return attentionPlanKey(desc) + " | cuDNN " + std::to_string(cudnnVersion) +
         " | " + device + " | " + llmcBinary;
}

std::string cudnnPlanPath(const std::string &dir, const std::string &key) {
  std::string what = std::string(kMagic) + "|" + key;
  return dir + "/cudnn-plan/" + hex64(fnv1a(what.data(), what.size()));
}

std::string encodeCudnnPlan(const CudnnPlanRecord &r) {
  return std::string(kMagic) + "\nkey " + r.key + "\nengine " +
         std::to_string(r.engineIndex) + " " + (r.noted ? "1" : "0") +
         "\njson " + std::to_string(r.json.size()) + "\n" + r.json;
}

bool decodeCudnnPlan(const std::string &bytes, const std::string &key,
                     CudnnPlanRecord &out, std::string &why) {
  out = CudnnPlanRecord();
  size_t pos = 0;
  std::string line, rest;
  if (!nextLine(bytes, pos, line) || line != kMagic) {
    why = std::string("not a cuDNN plan file (its first line is not '") +
          kMagic + "')";
    return false;
  }
  if (!nextLine(bytes, pos, line) || !field(line, "key", rest)) {
    why = "the file is truncated: no key line";
    return false;
  }
  if (rest != key) {
    why = "written for another key: '" + rest + "'";
    return false;
  }
  out.key = rest;
  long long index = 0;
  int noted = 0;
  char extra = 0;
  if (!nextLine(bytes, pos, line) || !field(line, "engine", rest) ||
      std::sscanf(rest.c_str(), "%lld %d %c", &index, &noted, &extra) != 2 ||
      (noted != 0 && noted != 1)) {
    why = "the file is truncated or damaged: no 'engine <index> <0|1>' line";
    return false;
  }
  out.engineIndex = index;
  out.noted = noted == 1;
  unsigned long long length = 0;
  if (!nextLine(bytes, pos, line) || !field(line, "json", rest) ||
      std::sscanf(rest.c_str(), "%llu %c", &length, &extra) != 1) {
    why = "the file is truncated or damaged: no 'json <length>' line";
    return false;
  }
  if (bytes.size() - pos != length) {
    why = "the file is truncated: its plan has " +
          std::to_string(bytes.size() - pos) + " bytes, the header says " +
          std::to_string(length);
    return false;
  }
  if (length == 0) {
    why = "the file holds an empty plan";
    return false;
  }
  out.json = bytes.substr(pos);
  return true;
}

bool readCudnnPlan(const std::string &path, const std::string &key,
                   CudnnPlanRecord &out, std::string &why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    why = "absent";
    return false;
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!decodeCudnnPlan(bytes.str(), key, out, why)) {
    why = "'" + path + "': " + why;
    return false;
  }
  return true;
}

Status writeCudnnPlan(const std::string &path, const CudnnPlanRecord &record) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(),
                                      ec);
  return writeFileAtomically(path, encodeCudnnPlan(record));
}

} // namespace llmc
