//===- JsonImporter.h - Import llmc JSON graphs -----------------*- C++ -*-===//
//
// Reads a graph in llmc's JSON format (docs/json-format.md) and builds the
// module that docs/model-ir.md describes: func @forward with parameters and
// inputs as arguments, one llmc op per node, NameLoc("nodes[i]") locations.
// Symbolic dims are bound from the graph's "dims" and --shape overrides, so
// the result has static shapes.
//
// Errors are emitted as MLIR diagnostics on the context: at
// FileLineColLoc(file, 0, 0) for errors in the JSON ("nodes[3].attrs.axis:
// expected an integer, ..."), and at the node's NameLoc for the verifier's
// messages. The caller's diagnostic handler prints them; on any error the
// result is null.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_FRONTENDS_JSON_JSONIMPORTER_H
#define LLMC_FRONTENDS_JSON_JSONIMPORTER_H

#include "frontends/json/DimBindings.h"
#include "frontends/json/SafetensorsInit.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace llmc {

struct JsonImportOptions {
  /// `--shape NAME=VALUE` overrides of the graph's dims.
  std::vector<json::DimOverride> shapes;
  /// Reads {"safetensors": ...} initializers; the built-in minimal reader
  /// when empty. Relative paths are resolved against the graph file's folder.
  json::SafetensorsLoader loadSafetensors;
};

/// Imports the graph in `path` ("-" reads stdin). Loads the llmc and func
/// dialects into `context`.
mlir::OwningOpRef<mlir::ModuleOp>
importJsonFile(llvm::StringRef path, const JsonImportOptions &options,
               mlir::MLIRContext &context);

/// Imports a graph given as text; `sourceName` names it in locations and
/// messages, and its folder anchors relative safetensors paths.
mlir::OwningOpRef<mlir::ModuleOp>
importJsonText(llvm::StringRef text, llvm::StringRef sourceName,
               const JsonImportOptions &options, mlir::MLIRContext &context);

} // namespace llmc

#endif // LLMC_FRONTENDS_JSON_JSONIMPORTER_H
