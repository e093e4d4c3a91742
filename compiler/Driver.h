//===- Driver.h - Subcommands of the llmc CLI ---------------------*- C++ -*-===//
//
// Each subcommand is a function from its arguments to an exit code. Errors
// are printed once, as "llmc <command>: error: ...", and never abort: the CLI
// is how users meet llmc, and a stack trace is not an answer.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_DRIVER_H
#define LLMC_COMPILER_DRIVER_H

#include <string>
#include <vector>

namespace llmc {

using Args = std::vector<std::string>;

struct Command {
  const char *name;
  const char *synopsis; // one line for `llmc --help`
  int (*run)(const Args &args);
};

/// The registered subcommands, in the order `--help` lists them.
const std::vector<Command> &commands();

/// Entry point of the `llmc` tool.
int runDriver(int argc, char **argv);

/// `llmc check FILE.mlir`: parse, verify and summarize llmc IR.
int runCheck(const Args &args);

/// `llmc import MODEL`: import an ONNX model or a JSON graph, raise it and
/// print its llmc IR.
int runImport(const Args &args);

/// `llmc tokenize TEXT -o TRAIN.bin [--val VAL.bin]`: byte-level shards.
int runTokenize(const Args &args);
/// `llmc run MODEL --inputs FILE`: evaluate a model in the reference
/// evaluator (compiler/RunCommand.cpp).
int runRun(const Args &args);

/// `llmc codegen MODEL.mlir`: lower a model to CUDA C++ and show it
/// (compiler/CodegenCommand.cpp).
int runCodegen(const Args &args);

/// `llmc compile MODEL -o OUT.llmc`: the training step as a bundle
/// (compiler/CompileCommand.cpp).
int runCompile(const Args &args);

/// `llmc recipe NAME --size SIZE`: write a named model's JSON graph.
int runRecipe(const Args &args);

/// `llmc verify MODEL --ref R`: compare with a PyTorch reference.
int runVerify(const Args &args);

/// `llmc train MODEL --data F`: train on the CPU or the GPU (Train.h).
int runTrain(const Args &args);

} // namespace llmc

#endif // LLMC_COMPILER_DRIVER_H
