//===- ImportCommand.cpp - `llmc import`: ONNX to llmc IR -----------------===//
//
// Imports an ONNX model and prints the module. Weights are resource blobs;
// on a terminal they are elided (a 500 MB hex dump helps nobody) unless
// --keep-weights is given, and in a pipe or file they are kept so that the
// output re-parses (`llmc import m.onnx | llmc-opt`).
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver.h"
#include "frontends/onnx/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

namespace llmc {

static const char *kImportUsage =
    "usage: llmc import MODEL.onnx [options]\n\n"
    "Imports an ONNX model (opsets 13-21) as llmc IR and prints it.\n\n"
    "options:\n"
    "  -o FILE                write the IR to FILE instead of stdout\n"
    "  --shape NAME=VALUE     bind the symbolic dim NAME (repeatable)\n"
    "  --batch B              bind the first symbolic dim of every integer\n"
    "                         input (token ids, targets) to B\n"
    "  --seq T                bind their second symbolic dim to T\n"
    "  --list-unsupported     list the ops llmc cannot import; exit 1 if any\n"
    "  --keep-weights         print weights even on a terminal\n"
    "  --elide-weights        elide weights even in a pipe or file\n"
    "  --locations            print each op's source node location\n"
    "  --fold-limit N         evaluate ops on constants with at most N\n"
    "                         result elements at import (default 65536)\n\n"
    "docs/onnx.md describes the supported ops and how to export a model.\n";

static int usageError(const std::string &msg) {
  llvm::errs() << "llmc import: error: " << msg
               << "; `llmc import --help` shows the usage\n";
  return 2;
}

static bool parseInt(const std::string &text, int64_t &out) {
  return !llvm::StringRef(text).getAsInteger(10, out) && out >= 1;
}

static int listUnsupported(const std::string &path,
                           mlir::MLIRContext &context) {
  auto ops = listUnsupportedOnnxOps(path, context);
  if (mlir::failed(ops))
    return 1;
  if (ops->empty()) {
    llvm::outs() << path << ": every op is supported\n";
    return 0;
  }
  llvm::outs() << path << ": " << ops->size()
               << " unsupported op type(s):\n";
  for (const UnsupportedOnnxOp &op : *ops) {
    llvm::outs() << "  " << op.opType;
    if (!op.domain.empty())
      llvm::outs() << " (domain '" << op.domain << "')";
    llvm::outs() << ": " << op.count << " node(s), first:";
    for (const std::string &name : op.firstNodes)
      llvm::outs() << " '" << name << "'";
    llvm::outs() << "\n";
  }
  return 1;
}

int runImport(const Args &args) {
  OnnxImportOptions options;
  std::string input, output = "-";
  bool list = false, keepWeights = false, elideWeights = false,
       locations = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= args.size())
        return false;
      out = args[++i];
      return true;
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      llvm::outs() << kImportUsage;
      return 0;
    } else if (a == "-o") {
      if (!value(output))
        return usageError("-o needs a file name");
    } else if (a == "--shape" || a.rfind("--shape=", 0) == 0) {
      if (a == "--shape" ? !value(v) : (v = a.substr(8), false))
        return usageError("--shape needs NAME=VALUE");
      size_t eq = v.find('=');
      int64_t n;
      if (eq == std::string::npos || eq == 0 ||
          !parseInt(v.substr(eq + 1), n))
        return usageError("--shape '" + v +
                          "' is not NAME=VALUE with VALUE >= 1");
      options.dims[v.substr(0, eq)] = n;
    } else if (a == "--batch" || a == "--seq") {
      int64_t n;
      if (!value(v) || !parseInt(v, n))
        return usageError(a + " needs a number >= 1");
      (a == "--batch" ? options.batch : options.seq) = n;
    } else if (a == "--fold-limit") {
      int64_t n;
      if (!value(v) || !parseInt(v, n))
        return usageError("--fold-limit needs a number >= 1");
      options.foldLimit = n;
    } else if (a == "--list-unsupported") {
      list = true;
    } else if (a == "--keep-weights") {
      keepWeights = true;
    } else if (a == "--elide-weights") {
      elideWeights = true;
    } else if (a == "--locations") {
      locations = true;
    } else if (!a.empty() && a[0] == '-') {
      return usageError("unknown option '" + a + "'");
    } else if (input.empty()) {
      input = a;
    } else {
      return usageError("more than one input file ('" + input + "', '" + a +
                        "')");
    }
  }
  if (input.empty())
    return usageError("expected an ONNX file");

  mlir::MLIRContext context;
  // One line per diagnostic, as every llmc error: the ONNX file has no line
  // numbers to show, and the messages name the node themselves.
  mlir::ScopedDiagnosticHandler handler(&context, [](mlir::Diagnostic &d) {
    const char *kind = d.getSeverity() == mlir::DiagnosticSeverity::Error
                           ? "error"
                       : d.getSeverity() == mlir::DiagnosticSeverity::Warning
                           ? "warning"
                           : "note";
    llvm::errs() << "llmc import: " << kind << ": " << d.str() << "\n";
    for (const mlir::Diagnostic &note : d.getNotes())
      llvm::errs() << "llmc import: note: " << note.str() << "\n";
    return mlir::success();
  });

  if (list)
    return listUnsupported(input, context);

  auto module = importOnnxFile(input, options, context);
  if (!module)
    return 1;

  std::string error;
  auto out = mlir::openOutputFile(output, &error);
  if (!out) {
    llvm::errs() << "llmc import: error: cannot write '" << output
                 << "': " << error << "\n";
    return 1;
  }
  mlir::OpPrintingFlags flags;
  bool elide = elideWeights || (!keepWeights && output == "-" &&
                                out->os().is_displayed());
  if (elide)
    flags.elideLargeElementsAttrs(16).elideLargeResourceString(64);
  if (locations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  module->print(out->os(), flags);
  out->os() << "\n";
  out->keep();
  return 0;
}

} // namespace llmc
