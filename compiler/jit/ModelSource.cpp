//===- ModelSource.cpp - Models for the JIT API, errors as text -----------===//
#include "compiler/jit/ModelSource.h"
#include "compiler/ModelLoader.h"
#include "compiler/Pipeline.h"

#include "dialects/llmc/LlmcDialect.h"
#include "dialects/llmc/TensorSize.h"
#include "frontends/json/JsonImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"

namespace llmc::jit {

static std::string describe(mlir::Location loc) {
  if (auto name = llvm::dyn_cast<mlir::NameLoc>(loc)) {
    std::string inner = describe(name.getChildLoc());
    return (inner.empty() ? "" : inner + ": ") + name.getName().str();
  }
  if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(loc))
    return file.getFilename().str() +
           (file.getLine() ? ":" + std::to_string(file.getLine()) : "");
  return "";
}

Diagnostics::Diagnostics(mlir::MLIRContext &context) {
  context.printOpOnDiagnostic(false);
  // Warnings (an unused input, a recompiled cache entry) are not failures;
  // they stay out of the text unless an error follows.
  context.getDiagEngine().registerHandler([this](mlir::Diagnostic &diag) {
    const char *kind =
        diag.getSeverity() == mlir::DiagnosticSeverity::Error     ? "error"
        : diag.getSeverity() == mlir::DiagnosticSeverity::Warning ? "warning"
                                                                  : "note";
    std::string where = describe(diag.getLocation());
    text_ += std::string(kind) + ": " + (where.empty() ? "" : where + ": ") +
             diag.str() + "\n";
    for (const mlir::Diagnostic &note : diag.getNotes())
      text_ += "note: " + note.str() + "\n";
    return mlir::success();
  });
}

Status Diagnostics::failure(const std::string &what) const {
  std::string text = text_;
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  return Status::error(what + (text.empty() ? "" : ":\n" + text));
}

std::string modelName(const std::string &path, const std::string *jsonText) {
  return jsonText ? "<json graph>" : path;
}

ModelOptions modelOptionsOf(const Options &options) {
  ModelOptions model;
  model.dims = options.dims;
  if (options.batch > 0)
    model.batch = options.batch;
  if (options.seq > 0)
    model.seq = options.seq;
  return model;
}

mlir::OwningOpRef<mlir::ModuleOp> loadJitModel(const std::string &path,
                                               const std::string *jsonText,
                                               const Options &options,
                                               mlir::MLIRContext &context) {
  ModelOptions model = modelOptionsOf(options);
  if (!jsonText)
    return loadModel(path, model, context);

  context.loadDialect<mlir::llmc::LlmcDialect, mlir::func::FuncDialect>();
  JsonImportOptions json;
  for (const auto &[name, value] : model.dims)
    json.shapes.push_back({name, value});
  if (model.batch)
    json.shapes.push_back({"batch", *model.batch});
  if (model.seq)
    json.shapes.push_back({"seq", *model.seq});
  auto module = importJsonText(*jsonText, "<json graph>", json, context);
  if (!module || mlir::failed(mlir::llmc::verifyTensorSizes(*module)) ||
      mlir::failed(runRaisePipeline(*module)))
    return nullptr;
  return module;
}

} // namespace llmc::jit
