//===- Safetensors.cpp - Reading and writing .safetensors files -----------===//
//
// Every field of the header is validated before any byte is trusted: a
// truncated or hand-edited file gives an error naming the file and the
// tensor, never an out-of-bounds read.
//
//===----------------------------------------------------------------------===//
#include "runtime/Safetensors.h"
#include "runtime/AtomicFile.h"

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>

namespace llmc {

size_t safetensorsDtypeSize(const std::string &dtype) {
  static const std::pair<const char *, size_t> sizes[] = {
      {"F64", 8}, {"F32", 4}, {"F16", 2},  {"BF16", 2},    {"I64", 8},
      {"I32", 4}, {"I16", 2}, {"I8", 1},   {"U64", 8},     {"U32", 4},
      {"U16", 2}, {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1},
  };
  for (auto &[name, size] : sizes)
    if (dtype == name)
      return size;
  return 0;
}

/// Validates one header entry and copies its bytes out of `body`.
static Status parseEntry(const std::string &name, const nlohmann::json &entry,
                         const std::vector<uint8_t> &body, SafeTensor &t,
                         uint64_t &begin) {
  auto bad = [&](const std::string &why) {
    return Status::error("tensor '" + name + "': " + why);
  };
  if (!entry.is_object() || !entry.contains("dtype") ||
      !entry.contains("shape") || !entry.contains("data_offsets"))
    return bad("needs dtype, shape and data_offsets");
  const auto &dtype = entry["dtype"], &shape = entry["shape"],
             &offsets = entry["data_offsets"];
  if (!dtype.is_string() || safetensorsDtypeSize(dtype) == 0)
    return bad("unknown dtype " + dtype.dump());
  if (!shape.is_array())
    return bad("shape is not a list");
  if (!offsets.is_array() || offsets.size() != 2 ||
      !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
    return bad("data_offsets must be [begin, end]");
  t.name = name;
  t.dtype = dtype.get<std::string>();
  uint64_t count = 1;
  for (const auto &d : shape) {
    if (!d.is_number_unsigned())
      return bad("shape " + shape.dump() +
                 " has a negative or non-integer dim");
    t.shape.push_back(d.get<int64_t>());
    count *= d.get<uint64_t>();
  }
  begin = offsets[0].get<uint64_t>();
  uint64_t end = offsets[1].get<uint64_t>();
  if (begin > end || end > body.size())
    return bad("data_offsets [" + std::to_string(begin) + ", " +
               std::to_string(end) + "] exceed the " +
               std::to_string(body.size()) + " data bytes");
  if (end - begin != count * safetensorsDtypeSize(t.dtype))
    return bad("holds " + std::to_string(end - begin) + " bytes, but " +
               t.dtype + shape.dump() + " needs " +
               std::to_string(count * safetensorsDtypeSize(t.dtype)));
  t.data.assign(body.begin() + begin, body.begin() + end);
  return Status::ok();
}

Status readSafetensors(const std::string &path,
                       std::vector<SafeTensor> &tensors) {
  auto fail = [&](const std::string &why) {
    return Status::error("reading '" + path + "': " + why);
  };
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail(std::string("cannot open the file: ") + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (bytes.size() < 8)
    return fail("too short for a safetensors header");
  uint64_t headerLen = 0;
  for (int i = 0; i < 8; ++i)
    headerLen |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  if (headerLen > bytes.size() - 8)
    return fail("header length " + std::to_string(headerLen) +
                " exceeds the file size " + std::to_string(bytes.size()));
  nlohmann::json header = nlohmann::json::parse(
      bytes.begin() + 8, bytes.begin() + 8 + headerLen, nullptr,
      /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    return fail("the header is not a JSON object");
  std::vector<uint8_t> body(bytes.begin() + 8 + headerLen, bytes.end());
  std::vector<std::pair<uint64_t, SafeTensor>> found;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__")
      continue;
    SafeTensor t;
    uint64_t begin = 0;
    Status s = parseEntry(it.key(), it.value(), body, t, begin);
    if (!s)
      return fail(s.message());
    found.emplace_back(begin, std::move(t));
  }
  std::stable_sort(
      found.begin(), found.end(),
      [](const auto &a, const auto &b) { return a.first < b.first; });
  tensors.clear();
  for (auto &f : found)
    tensors.push_back(std::move(f.second));
  return Status::ok();
}

Status writeSafetensors(const std::string &path,
                        const std::vector<SafeTensor> &tensors) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const SafeTensor &t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  std::string text = header.dump();
  // The format pads the header with spaces to a multiple of 8 bytes so the
  // data that follows is aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  AtomicFile out;
  LLMC_RETURN_IF_ERROR(out.open(path));
  uint64_t len = text.size();
  unsigned char prefix[8];
  for (int i = 0; i < 8; ++i)
    prefix[i] = static_cast<unsigned char>((len >> (8 * i)) & 0xff);
  LLMC_RETURN_IF_ERROR(out.write(prefix, sizeof(prefix)));
  LLMC_RETURN_IF_ERROR(out.write(text));
  for (const SafeTensor &t : tensors)
    LLMC_RETURN_IF_ERROR(out.write(t.data.data(), t.data.size()));
  return out.commit();
}

} // namespace llmc
