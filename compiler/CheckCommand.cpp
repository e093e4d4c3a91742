//===- CheckCommand.cpp - `llmc check`: verify and summarize IR -----------===//
//
// Parses a file of llmc IR, runs the verifier and prints how many ops of each
// kind it holds, so a user can see at a glance what a graph contains (one
// attention per layer, no leftover shape arithmetic, ...).
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver.h"
#include "dialects/llmc/LlmcDialect.h"
#include "dialects/llmc/TensorSize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace llmc {

int runCheck(const Args &args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    llvm::outs() << "usage: llmc check FILE.mlir\n\nParses and verifies llmc "
                    "IR and prints the number of ops of each kind.\n";
    return 0;
  }
  if (args.size() != 1) {
    llvm::errs() << "llmc check: error: expected one input file; usage: "
                    "llmc check FILE.mlir\n";
    return 2;
  }
  mlir::MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, mlir::func::FuncDialect>();
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  std::string error;
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(args[0]);
  if (!buffer) {
    llvm::errs() << "llmc check: error: cannot read '" << args[0]
                 << "': " << buffer.getError().message() << "\n";
    return 1;
  }
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module || mlir::failed(mlir::llmc::verifyTensorSizes(*module))) {
    llvm::errs() << "llmc check: error: '" << args[0]
                 << "' is not valid llmc IR (see the diagnostics above)\n";
    return 1;
  }
  // An empty or comment-only file parses as an empty module; calling it
  // "ok" would pass a truncated or wrongly redirected file.
  if (module->getBody()->empty()) {
    llvm::errs() << "llmc check: error: '" << args[0]
                 << "' holds no operations (an empty file?)\n";
    return 1;
  }
  std::map<std::string, int> counts;
  module->walk([&](mlir::Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "llmc")
      ++counts[op->getName().getStringRef().str()];
  });
  llvm::outs() << args[0] << ": ok\n";
  for (auto &[name, n] : counts)
    llvm::outs() << "  " << name << " " << n << "\n";
  return 0;
}

} // namespace llmc
