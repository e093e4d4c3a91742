//===- ModelLoader.h - One way to read a model for every command --*- C++ -*-===//
//
// `llmc import`, `run`, `verify`, `train`, `codegen` and `compile` all take a
// model as an ONNX file, a JSON graph or llmc IR. This file reads any of the
// three into a module (docs/model-ir.md), binds symbolic dims the same way
// for all of them, and raises imported graphs to the composite ops
// (docs/raising.md), so that every command sees the same IR for the same
// flags.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_MODELLOADER_H
#define LLMC_COMPILER_MODELLOADER_H

#include "compiler/Driver.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace llmc {

enum class ModelFormat { Onnx, Json, Mlir };

struct ModelOptions {
  /// `--shape NAME=VALUE`: symbolic dims (ONNX dim_param, JSON "dims").
  std::map<std::string, int64_t> dims;
  /// `--batch B`, `--seq T`: ONNX binds the first/second symbolic dim of every
  /// integer input; JSON binds the dims named "batch"/"seq".
  std::optional<int64_t> batch, seq;
  /// batch/seq came from elsewhere (a reference file), not the user: a model
  /// with static shapes ignores them quietly.
  bool batchSeqAreDefaults = false;
  /// ONNX: ops on import-time constants up to this many elements fold.
  int64_t foldLimit = int64_t(1) << 16;
  /// Raise decomposed exporter output to the composite ops (`--no-raise`
  /// keeps the graph as imported). Never applied to llmc IR input.
  bool raise = true;
};

/// The help text of the options parseModelOption accepts.
extern const char *const kModelOptionsHelp;

/// Consumes the model option at args[i], advancing i past its value.
/// Returns true when args[i] was a model option; on a malformed one sets
/// `error` (and still returns true).
bool parseModelOption(const Args &args, size_t &i, ModelOptions &options,
                      std::string &error);

/// The format of `path` from its extension: .onnx, .json (and "-" for a JSON
/// graph on stdin), .mlir; std::nullopt for anything else.
std::optional<ModelFormat> modelFormatOf(const std::string &path);

/// Reads the model. Errors are emitted as diagnostics through `context`
/// (installCliDiagnostics prints them) and null is returned.
mlir::OwningOpRef<mlir::ModuleOp> loadModel(const std::string &path,
                                            const ModelOptions &options,
                                            mlir::MLIRContext &context);

/// Prints every diagnostic of `context` as one line
/// "llmc <command>: error: <location>: <message>", as users see all errors.
/// ONNX importer messages name the file and node themselves, so for ONNX
/// models (`modelPath` ends in .onnx) the location is left out.
void installCliDiagnostics(mlir::MLIRContext &context, const char *command,
                           const std::string &modelPath = "");

} // namespace llmc

#endif // LLMC_COMPILER_MODELLOADER_H
