//===- JsonImportFuzzer.cpp - libFuzzer target for the JSON importer ------===//
//
// Feeds arbitrary text to importJsonText. As for ONNX, any outcome but a
// module or a diagnostic is a bug. Safetensors initializers are served by a
// stub loader (one 2x3 f32 tensor named "w"), so a fuzzed graph never opens
// files and still reaches the code that checks a loaded tensor against the
// parameter's declared type.
//
//===----------------------------------------------------------------------===//
#include "frontends/json/JsonImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext context;
  context.getDiagEngine().registerHandler(
      [](mlir::Diagnostic &) { return mlir::success(); });
  llmc::JsonImportOptions options;
  options.loadSafetensors = [](const std::string &, const std::string &tensor,
                               llmc::json::LoadedTensor &out,
                               std::string &error) {
    if (tensor != "w") {
      error = "no tensor '" + tensor + "'";
      return false;
    }
    out.dtype = "F32";
    out.shape = {2, 3};
    out.bytes.assign(6 * sizeof(float), 0);
    return true;
  };
  auto module = llmc::importJsonText(
      llvm::StringRef(reinterpret_cast<const char *>(data), size),
      "fuzz.json", options, context);
  (void)module;
  return 0;
}
