//===- Driver.cpp - Subcommands of the llmc CLI ---------------------------===//
#include "compiler/Driver.h"
#include "compiler/Version.h"
#include "runtime/CudaApi.h"

#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace llmc {

const std::vector<Command> &commands() {
  static const std::vector<Command> table = {
      {"check", "check FILE.mlir        parse and verify llmc IR; print its "
                "op counts",
       runCheck},
      {"import", "import MODEL           import an ONNX model or JSON graph as llmc IR",
       runImport},
      {"tokenize", "tokenize TEXT -o X.bin  byte-level token shards (llm.c "
                   ".bin format) from a text file",
       runTokenize},
      {"run", "run MODEL --inputs F   evaluate a model on the CPU reference "
              "evaluator",
       runRun},
      {"codegen", "codegen MODEL.mlir      show the generated CUDA kernels "
                  "(--dump-cuda DIR, --compile)",
       runCodegen},
      {"compile", "compile MODEL -o X.llmc  build, plan and compile the "
                  "training step into a bundle",
       runCompile},
      {"recipe", "recipe NAME --size S   write a named model's JSON graph "
                 "(--list shows them)",
       runRecipe},
      {"verify", "verify MODEL --ref R     check loss, gradients and AdamW "
                 "steps against PyTorch",
       runVerify},
      {"train", "train MODEL --data F     train a model on token shards "
                "(--device cpu|cuda)",
       runTrain},
  };
  return table;
}

static void printHelp(FILE *out) {
  std::fprintf(out,
               "llmc %s - a training compiler for transformer models\n\n"
               "usage: llmc <command> [options]\n\ncommands:\n",
               LLMC_VERSION);
  for (const Command &c : commands())
    std::fprintf(out, "  %s\n", c.synopsis);
  std::fprintf(out, "\noptions:\n"
                    "  --help                 this text\n"
                    "  --version              print the version\n\n"
                    "`llmc <command> --help` describes one command.\n");
}

/// Output that standard output refused (a full disk) is an error with the
/// OS reason, instead of a silent success or LLVM's "IO failure on output
/// stream" abort when llvm::outs() is destroyed.
static int checkStandardOutput(int rc) {
  llvm::outs().flush();
  std::error_code ec = llvm::outs().error();
  bool failed = std::fflush(stdout) != 0 || std::ferror(stdout);
  int err = errno;
  if (!ec && !failed)
    return rc;
  llvm::outs().clear_error();
  std::fprintf(stderr, "llmc: error: cannot write to standard output: %s\n",
               ec ? ec.message().c_str() : std::strerror(err));
  return rc ? rc : 1;
}

int runDriver(int argc, char **argv) {
  if (argc < 2) {
    printHelp(stderr);
    return 2;
  }
  std::string first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    printHelp(stdout);
    return checkStandardOutput(0);
  }
  if (first == "--version") {
    std::printf("llmc %s\n", LLMC_VERSION);
    return checkStandardOutput(0);
  }
  for (const Command &c : commands()) {
    if (first != c.name)
      continue;
    if (Status s = cuda::checkLibraryOverrides(); !s) {
      std::fprintf(stderr, "llmc %s: error: %s\n", c.name, s.message().c_str());
      return 1;
    }
    return checkStandardOutput(c.run(Args(argv + 2, argv + argc)));
  }
  std::fprintf(stderr,
               "llmc: error: unknown command '%s'; `llmc --help` lists the "
               "commands\n",
               first.c_str());
  return 2;
}

} // namespace llmc
