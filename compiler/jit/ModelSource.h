//===- ModelSource.h - Models for the JIT API, errors as text ---*- C++ -*-===//
//
// The CLI prints the importer's and compiler's diagnostics to stderr; a
// library returns them. Diagnostics collects every error (and its notes) of
// one MLIR context into a string that goes into the Status, and
// loadJitModel reads a model file or JSON graph text exactly as `llmc
// compile` reads a file (compiler/ModelLoader.h), with the batch/seq/dims of
// the options bound.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_JIT_MODELSOURCE_H
#define LLMC_COMPILER_JIT_MODELSOURCE_H

#include "compiler/ModelLoader.h"
#include "llmc/Step.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace llmc::jit {

class Diagnostics {
public:
  /// Installs the collecting handler on `context` (for its lifetime).
  explicit Diagnostics(mlir::MLIRContext &context);
  /// "cannot compile 'm.onnx': <errors, one per line>".
  Status failure(const std::string &what) const;
  const std::string &text() const { return text_; }

private:
  std::string text_;
};

/// The model options (batch, seq, dims) of `options`, as `llmc compile`
/// takes them.
ModelOptions modelOptionsOf(const Options &options);

/// `path`, or `jsonText` when non-null (then `path` only names it).
mlir::OwningOpRef<mlir::ModuleOp> loadJitModel(const std::string &path,
                                               const std::string *jsonText,
                                               const Options &options,
                                               mlir::MLIRContext &context);

/// The model's name for messages: the path, or "<json graph>".
std::string modelName(const std::string &path, const std::string *jsonText);

} // namespace llmc::jit

#endif // LLMC_COMPILER_JIT_MODELSOURCE_H
