//===- ImportJsonCommand.cpp - `llmc import-json`: JSON graph to IR -------===//
//
// Imports a graph in llmc's JSON format (docs/json-format.md) and prints the
// module. TEMPORARY name: the lead folds this into `llmc import`, which will
// dispatch on the file extension (.json here, .onnx to the ONNX importer).
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver.h"
#include "frontends/json/JsonImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

namespace llmc {

/// "file: nodes[3]" for the importer's locations (FileLineColLoc(file, 0, 0)
/// and NameLoc("nodes[3]", FileLineColLoc(file, 0, 0))).
static std::string describeLocation(mlir::Location loc) {
  if (auto name = llvm::dyn_cast<mlir::NameLoc>(loc)) {
    std::string inner = describeLocation(name.getChildLoc());
    return (inner.empty() ? "" : inner + ": ") + name.getName().str();
  }
  if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(loc)) {
    std::string s = file.getFilename().str();
    if (file.getLine() > 0)
      s += ":" + std::to_string(file.getLine()) + ":" +
           std::to_string(file.getColumn());
    return s;
  }
  return "";
}

/// Prints the importer's diagnostics as "llmc <cmd>: error: LOC: MESSAGE".
void installCliDiagnostics(mlir::MLIRContext &context, const char *command) {
  context.printOpOnDiagnostic(false);
  context.getDiagEngine().registerHandler([command](mlir::Diagnostic &diag) {
    const char *kind =
        diag.getSeverity() == mlir::DiagnosticSeverity::Error     ? "error"
        : diag.getSeverity() == mlir::DiagnosticSeverity::Warning ? "warning"
                                                                  : "note";
    std::string where = describeLocation(diag.getLocation());
    llvm::errs() << "llmc " << command << ": " << kind << ": "
                 << (where.empty() ? "" : where + ": ") << diag.str() << "\n";
    for (const mlir::Diagnostic &note : diag.getNotes())
      llvm::errs() << "llmc " << command << ": note: " << note.str() << "\n";
    return mlir::success();
  });
}

static const char *kUsage =
    "usage: llmc import-json FILE.json [--shape NAME=VALUE]... [-o OUT.mlir] "
    "[--print-locs]\n";

int runImportJson(const Args &args) {
  std::string input, output = "-";
  bool printLocs = false;
  JsonImportOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (a == "--help" || a == "-h") {
      llvm::outs() << kUsage
                   << "\nImports a graph in llmc's JSON format "
                      "(docs/json-format.md; \"-\" reads stdin) and prints "
                      "its llmc IR.\n  --shape NAME=VALUE  bind a symbolic "
                      "dim (overrides the graph's \"dims\")\n  -o FILE      "
                      "       write the IR to FILE\n  --print-locs        "
                      "print each op's location (nodes[i])\n";
      return 0;
    }
    if ((a == "--shape" || a == "-o") && i + 1 == args.size()) {
      llvm::errs() << "llmc import-json: error: " << a << " needs a value\n";
      return 2;
    }
    if (a == "--shape" || a.rfind("--shape=", 0) == 0) {
      std::string spec = a == "--shape" ? args[++i] : a.substr(8), error;
      auto o = json::parseDimOverride(spec, error);
      if (!o) {
        llvm::errs() << "llmc import-json: error: --shape " << spec << ": "
                     << error << "\n";
        return 2;
      }
      options.shapes.push_back(*o);
    } else if (a == "-o") {
      output = args[++i];
    } else if (a == "--print-locs") {
      printLocs = true;
    } else if (a.size() > 1 && a[0] == '-') {
      llvm::errs() << "llmc import-json: error: unknown option '" << a << "'\n"
                   << kUsage;
      return 2;
    } else if (input.empty()) {
      input = a;
    } else {
      llvm::errs() << "llmc import-json: error: expected one input file\n"
                   << kUsage;
      return 2;
    }
  }
  if (input.empty()) {
    llvm::errs() << "llmc import-json: error: expected an input file\n"
                 << kUsage;
    return 2;
  }
  mlir::MLIRContext context;
  installCliDiagnostics(context, "import-json");
  auto module = importJsonFile(input, options, context);
  if (!module)
    return 1;
  std::string error;
  auto out = mlir::openOutputFile(output, &error);
  if (!out) {
    llvm::errs() << "llmc import-json: error: " << error << "\n";
    return 1;
  }
  mlir::OpPrintingFlags flags;
  if (printLocs)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  module->print(out->os(), flags);
  out->keep();
  return 0;
}

} // namespace llmc
