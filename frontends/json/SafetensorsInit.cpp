//===- SafetensorsInit.cpp - Parameters from safetensors files ------------===//
//
// The default SafetensorsLoader: runtime/'s safetensors reader (which checks
// header length, offsets and byte counts against the file), narrowed to the
// one tensor a parameter names.
//
//===----------------------------------------------------------------------===//
#include "frontends/json/SafetensorsInit.h"
#include "runtime/Safetensors.h"

namespace llmc::json {

int64_t safetensorsDtypeBytes(const std::string &dtype) {
  return static_cast<int64_t>(llmc::safetensorsDtypeSize(dtype));
}

bool readSafetensorsTensor(const std::string &path, const std::string &tensor,
                           LoadedTensor &out, std::string &error) {
  std::vector<SafeTensor> tensors;
  Status status = readSafetensors(path, tensors);
  if (!status) {
    error = status.message();
    return false;
  }
  for (SafeTensor &t : tensors) {
    if (t.name != tensor)
      continue;
    out.dtype = t.dtype;
    out.shape = t.shape;
    out.bytes.assign(t.data.begin(), t.data.end());
    return true;
  }
  error = "'" + path + "' has no tensor '" + tensor + "'";
  return false;
}

} // namespace llmc::json
