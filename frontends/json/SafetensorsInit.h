//===- SafetensorsInit.h - Parameters from safetensors files ----*- C++ -*-===//
//
// A parameter's init may be {"safetensors": FILE, "tensor": NAME}. The
// importer asks a SafetensorsLoader for that tensor and stores its bytes as
// the parameter's `llmc.init` (a dense_resource blob). The loader is a hook
// so that tests and embedders can supply tensors; the default,
// readSafetensorsTensor below, reads them with runtime/Safetensors.h.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_FRONTENDS_JSON_SAFETENSORSINIT_H
#define LLMC_FRONTENDS_JSON_SAFETENSORSINIT_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace llmc::json {

struct LoadedTensor {
  std::string dtype;          // safetensors spelling: "F32", "BF16", "I64", ...
  std::vector<int64_t> shape; // as stored
  std::vector<char> bytes;    // row-major, little-endian
};

/// Reads tensor `tensor` of safetensors file `path`. Returns false and sets
/// `error` (e.g. "cannot open 'w.safetensors': No such file or directory",
/// "'w.safetensors' has no tensor 'wte'") when it cannot.
using SafetensorsLoader =
    std::function<bool(const std::string &path, const std::string &tensor,
                       LoadedTensor &out, std::string &error)>;

/// The built-in minimal reader (header + one tensor's bytes).
bool readSafetensorsTensor(const std::string &path, const std::string &tensor,
                           LoadedTensor &out, std::string &error);

/// Bytes per element of a safetensors dtype, 0 when llmc does not know it.
int64_t safetensorsDtypeBytes(const std::string &dtype);

} // namespace llmc::json

#endif // LLMC_FRONTENDS_JSON_SAFETENSORSINIT_H
