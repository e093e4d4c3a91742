//===- ImportCommand.cpp - `llmc import`: a model to llmc IR --------------===//
//
// Imports an ONNX model or a JSON graph, raises it to the composite ops and
// prints the module. Weights are resource blobs; on a terminal they are
// elided (a 500 MB hex dump helps nobody) unless --keep-weights is given, and
// in a pipe or file they are kept so that the output re-parses
// (`llmc import m.onnx | llmc-opt`).
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver.h"
#include "compiler/ModelLoader.h"
#include "compiler/OutputFile.h"
#include "frontends/onnx/OnnxImporter.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/raw_ostream.h"

namespace llmc {

static void printUsage(llvm::raw_ostream &os) {
  os << "usage: llmc import MODEL [options]\n\n"
        "Imports an ONNX model (.onnx, opsets 13-21) or a JSON graph (.json,\n"
        "or - for stdin) as llmc IR, raises it to the composite ops and\n"
        "prints it.\n\noptions:\n"
        "  -o FILE                write the IR to FILE instead of stdout\n"
     << kModelOptionsHelp
     << "  --list-unsupported     ONNX: list the ops llmc cannot import; exit 1\n"
        "                         if any\n"
        "  --keep-weights         print weights even on a terminal\n"
        "  --elide-weights        elide weights even in a pipe or file\n"
        "  --locations            print each op's source location\n\n"
        "docs/onnx.md and docs/json-format.md describe the formats.\n";
}

static int usageError(const std::string &msg) {
  llvm::errs() << "llmc import: error: " << msg
               << "; `llmc import --help` shows the usage\n";
  return 2;
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
    if (op.readsFrom)
      llvm::outs() << " (opset " << op.opset << "'s version; llmc reads "
                   << op.opType << " from opset " << op.readsFrom << ")";
    llvm::outs() << ": " << op.count << " node(s), first:";
    for (const std::string &name : op.firstNodes)
      llvm::outs() << " '" << name << "'";
    llvm::outs() << "\n";
  }
  return 1;
}

int runImport(const Args &args) {
  ModelOptions options;
  std::string input, output = "-";
  bool list = false, keepWeights = false, elideWeights = false,
       locations = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    std::string error;
    if (parseModelOption(args, i, options, error)) {
      if (!error.empty())
        return usageError(error);
    } else if (a == "--help" || a == "-h") {
      printUsage(llvm::outs());
      return 0;
    } else if (a == "-o") {
      if (i + 1 >= args.size())
        return usageError("-o needs a file name");
      output = args[++i];
    } else if (a == "--list-unsupported") {
      list = true;
    } else if (a == "--keep-weights") {
      keepWeights = true;
    } else if (a == "--elide-weights") {
      elideWeights = true;
    } else if (a == "--locations" || a == "--print-locs") {
      locations = true;
    } else if (a.size() > 1 && a[0] == '-') {
      return usageError("unknown option '" + a + "'");
    } else if (input.empty()) {
      input = a;
    } else {
      return usageError("more than one input file ('" + input + "', '" + a +
                        "')");
    }
  }
  if (input.empty())
    return usageError("expected an ONNX file or a JSON graph");
  auto format = modelFormatOf(input);
  if (format == ModelFormat::Mlir)
    return usageError("'" + input + "' is already llmc IR; use llmc-opt "
                      "to transform it");

  mlir::MLIRContext context;
  installCliDiagnostics(context, "import", input);
  if (list) {
    if (format != ModelFormat::Onnx)
      return usageError("--list-unsupported applies to ONNX models");
    return listUnsupported(input, context);
  }
  auto module = loadModel(input, options, context);
  if (!module)
    return 1;

  mlir::OpPrintingFlags flags;
  bool elide = elideWeights || (!keepWeights && output == "-" &&
                                llvm::outs().is_displayed());
  if (elide)
    flags.elideLargeElementsAttrs(16).elideLargeResourceString(64);
  if (locations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  Status s = writeOutput(output, [&](llvm::raw_ostream &os) {
    module->print(os, flags);
    os << "\n";
  });
  if (!s) {
    llvm::errs() << "llmc import: error: " << s.message() << "\n";
    return 1;
  }
  return 0;
}

} // namespace llmc
