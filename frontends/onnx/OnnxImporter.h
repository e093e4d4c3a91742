//===- OnnxImporter.h - Import ONNX models as llmc IR ------------*- C++ -*-===//
//
// Reads an ONNX model (opsets 13-25 of the default domain) and builds the
// module that docs/model-ir.md describes: func @forward with the float
// initializers as llmc.param arguments, the graph inputs as llmc.input
// arguments and the graph outputs as llmc.output results.
//
// Shapes are specialized at import: symbolic dims (dim_param) take their
// values from the options, and the shape arithmetic that exporters emit
// (Shape, Gather, Concat, Range, ...) is evaluated on constants by the
// importer, so the module holds static shapes and no shape computation.
// docs/onnx.md is the user-facing description.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_FRONTENDS_ONNX_ONNXIMPORTER_H
#define LLMC_FRONTENDS_ONNX_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace llmc {

struct OnnxImportOptions {
  /// Values of symbolic dims by name (`--shape batch=8`).
  std::map<std::string, int64_t> dims;
  /// `--batch B` / `--seq T`: bind the symbols of the first and second
  /// symbolic dim of every integer-typed graph input (token ids, targets).
  /// An explicit entry in `dims` for the same symbol must agree.
  std::optional<int64_t> batch, seq;
  /// Set by tools that take batch/seq from elsewhere (a reference file's B
  /// and T): a static model then ignores them without a warning.
  bool batchSeqAreDefaults = false;
  /// Results of ops on import-time constants with at most this many elements
  /// are evaluated by the importer; larger ones become llmc ops (a causal
  /// mask for a long sequence stays an op instead of a huge constant).
  int64_t foldLimit = int64_t(1) << 16;
};

/// Imports the model at `path`. On failure returns null; the reasons were
/// emitted as diagnostics through `context` (errors name the node, op,
/// tensor or dim and say what to do).
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxFile(const std::string &path, const OnnxImportOptions &options,
               mlir::MLIRContext &context);

/// Imports a model held in memory; `path` names it in messages and anchors
/// relative external-data locations (the fuzzer and embedders use this).
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxBuffer(llvm::StringRef bytes, const std::string &path,
                 const OnnxImportOptions &options, mlir::MLIRContext &context);

/// An op type of a model that the importer cannot handle.
struct UnsupportedOnnxOp {
  std::string opType;
  std::string domain; // "" for the default domain
  int count = 0;
  std::vector<std::string> firstNodes; // up to three node names
  /// For an op llmc imports, but not in the model's older opset: the
  /// model's opset and the oldest llmc reads the op from (else 0).
  int64_t opset = 0, readsFrom = 0;
};

/// Every unsupported op type of the model at `path`, in order of first
/// appearance, with the imported ops whose version at the model's (older)
/// opset llmc does not read; failure (with diagnostics) when the file
/// cannot be read.
mlir::FailureOr<std::vector<UnsupportedOnnxOp>>
listUnsupportedOnnxOps(const std::string &path, mlir::MLIRContext &context);

} // namespace llmc

#endif // LLMC_FRONTENDS_ONNX_ONNXIMPORTER_H
