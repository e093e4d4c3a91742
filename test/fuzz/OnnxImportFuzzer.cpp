//===- OnnxImportFuzzer.cpp - libFuzzer target for the ONNX importer ------===//
//
// Feeds arbitrary bytes to importOnnxBuffer. Any outcome but a module or a
// diagnostic (a crash, a sanitizer report, a hang, runaway memory) is a bug:
// the importer reads files users download, so malformed input must end in a
// message. Inputs that once crashed live in test/fuzz/onnx-regressions and
// run on every test run (docs/fuzzing.md).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A fresh context per input: a previous input's constants and blobs must
  // not hide a bug in this one.
  mlir::MLIRContext context;
  context.getDiagEngine().registerHandler(
      [](mlir::Diagnostic &) { return mlir::success(); });
  llmc::OnnxImportOptions options;
  // Symbolic dims get a value so that fuzzed graphs reach the op handlers.
  options.batch = 2;
  options.seq = 8;
  // Keep import-time constant evaluation small: a fuzzed Range or
  // ConstantOfShape may ask for billions of elements, which the importer
  // must refuse with a message, not allocate.
  options.foldLimit = 1 << 12;
  auto module = llmc::importOnnxBuffer(
      llvm::StringRef(reinterpret_cast<const char *>(data), size),
      "fuzz.onnx", options, context);
  (void)module;
  return 0;
}
