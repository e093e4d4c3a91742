//===- Driver.cpp - Subcommands of the llmc CLI ---------------------------===//
#include "compiler/Driver.h"
#include "compiler/Version.h"
#include "runtime/CudaApi.h"

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

int runDriver(int argc, char **argv) {
  if (argc < 2) {
    printHelp(stderr);
    return 2;
  }
  std::string first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    printHelp(stdout);
    return 0;
  }
  if (first == "--version") {
    std::printf("llmc %s\n", LLMC_VERSION);
    return 0;
  }
  for (const Command &c : commands()) {
    if (first != c.name)
      continue;
    if (Status s = cuda::checkLibraryOverrides(); !s) {
      std::fprintf(stderr, "llmc %s: error: %s\n", c.name, s.message().c_str());
      return 1;
    }
    return c.run(Args(argv + 2, argv + argc));
  }
  std::fprintf(stderr,
               "llmc: error: unknown command '%s'; `llmc --help` lists the "
               "commands\n",
               first.c_str());
  return 2;
}

} // namespace llmc
