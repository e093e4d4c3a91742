//===- SafetensorsInit.cpp - A minimal safetensors tensor reader ----------===//
//
// Reads exactly what the importer needs: the header and one tensor's bytes.
// It checks what a corrupt or truncated file would get wrong (header length,
// offsets inside the file, byte count = shape x dtype size) so that a bad
// file ends in a message, never in an out-of-bounds read.
//
//===----------------------------------------------------------------------===//
#include "frontends/json/SafetensorsInit.h"
#include "frontends/json/Json.h"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace llmc::json {

int64_t safetensorsDtypeBytes(const std::string &dtype) {
  if (dtype == "F64" || dtype == "I64")
    return 8;
  if (dtype == "F32" || dtype == "I32")
    return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16")
    return 2;
  if (dtype == "F8_E4M3" || dtype == "F8_E5M2" || dtype == "I8" ||
      dtype == "U8" || dtype == "BOOL")
    return 1;
  return 0;
}

bool readSafetensorsTensor(const std::string &path, const std::string &tensor,
                           LoadedTensor &out, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  in.seekg(0, std::ios::end);
  int64_t fileSize = in.tellg();
  in.seekg(0);
  unsigned char lenBytes[8];
  if (fileSize < 8 || !in.read(reinterpret_cast<char *>(lenBytes), 8)) {
    error = "'" + path + "' is not a safetensors file (too short)";
    return false;
  }
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | lenBytes[i];
  if (headerLen > static_cast<uint64_t>(fileSize - 8)) {
    error = "'" + path + "' is not a safetensors file (header length " +
            std::to_string(headerLen) + " exceeds the file)";
    return false;
  }
  std::string headerText(headerLen, '\0');
  in.read(headerText.data(), headerLen);
  std::string parseError;
  auto header = parseText(headerText, parseError);
  if (!header || !header->is_object()) {
    error = "'" + path + "' has a corrupt safetensors header: " +
            (header ? "not an object" : parseError);
    return false;
  }
  const Json *entry = member(*header, tensor.c_str());
  if (!entry || tensor == "__metadata__") {
    error = "'" + path + "' has no tensor '" + tensor + "'";
    return false;
  }
  const Json *dtype = member(*entry, "dtype");
  const Json *shape = member(*entry, "shape");
  const Json *offsets = member(*entry, "data_offsets");
  if (!dtype || !dtype->is_string() || !shape || !shape->is_array() ||
      !offsets || !offsets->is_array() || offsets->size() != 2) {
    error = "'" + path + "': the header entry of '" + tensor +
            "' lacks dtype, shape or data_offsets";
    return false;
  }
  out.dtype = dtype->get<std::string>();
  out.shape.clear();
  int64_t count = 1;
  for (const Json &d : *shape) {
    auto v = asInt(d);
    if (!v || *v < 0) {
      error = "'" + path + "': tensor '" + tensor + "' has a bad shape";
      return false;
    }
    out.shape.push_back(*v);
    count *= *v;
  }
  auto begin = asInt((*offsets)[0]), end = asInt((*offsets)[1]);
  int64_t dataStart = 8 + static_cast<int64_t>(headerLen);
  int64_t elementBytes = safetensorsDtypeBytes(out.dtype);
  if (!begin || !end || *begin < 0 || *end < *begin ||
      dataStart + *end > fileSize) {
    error = "'" + path + "': the data of tensor '" + tensor +
            "' lies outside the file";
    return false;
  }
  if (elementBytes == 0 || *end - *begin != count * elementBytes) {
    error = "'" + path + "': tensor '" + tensor + "' has " +
            std::to_string(*end - *begin) + " bytes, which does not match " +
            "its dtype " + out.dtype + " and shape";
    return false;
  }
  out.bytes.resize(*end - *begin);
  in.seekg(dataStart + *begin);
  if (!in.read(out.bytes.data(), out.bytes.size())) {
    error = "cannot read tensor '" + tensor + "' from '" + path + "'";
    return false;
  }
  return true;
}

} // namespace llmc::json
