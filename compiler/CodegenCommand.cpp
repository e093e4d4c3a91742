//===- CodegenCommand.cpp - `llmc codegen`: show and compile the CUDA -----===//
//
// Lowers a model function to CUDA C++ kernels and cuBLASLt calls and shows
// the result, so that users can read the generated code:
//
//   llmc codegen MODEL.mlir                    the launch table on stdout
//   llmc codegen MODEL.mlir --dump-cuda DIR    one DIR/<kernel>.cu per
//                                              kernel + DIR/launch-table.txt
//   llmc codegen MODEL.mlir --compile          every kernel through NVRTC
//                                              (no GPU needed)
//   LLMC_DEBUG=4 llmc codegen ...              every kernel's source on
//                                              stderr (tinygrad's DEBUG>=4)
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile.h"
#include "compiler/Driver.h"
#include "compiler/AttentionBackend.h"
#include "compiler/Pipeline.h"
#include "compiler/codegen/PlanBuilder.h"
#include "dialects/llmc/LlmcDialect.h"
#include "dialects/llmc/TensorSize.h"
#include "runtime/AtomicFile.h"
#include "runtime/Nvrtc.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

namespace llmc {

namespace {

constexpr const char *kUsage =
    "usage: llmc codegen MODEL.mlir [--function NAME] [--dump-cuda DIR] "
    "[--compile] [--arch sm_XY] [--split-input-file] [--no-fuse=LIST] "
    "[--attention-backend generated|cudnn|auto]\n";

int fail(const std::string &message, int code = 1) {
  llvm::errs() << "llmc codegen: error: " << message << "\n";
  return code;
}

/// @train_step, else @forward, else the module's only function.
mlir::func::FuncOp findFunction(mlir::ModuleOp module,
                                const std::string &name) {
  if (!name.empty())
    return module.lookupSymbol<mlir::func::FuncOp>(name);
  for (const char *n : {"train_step", "forward"})
    if (auto f = module.lookupSymbol<mlir::func::FuncOp>(n))
      return f;
  auto funcs = llvm::to_vector(module.getOps<mlir::func::FuncOp>());
  return funcs.size() == 1 ? funcs.front() : nullptr;
}

int debugLevel() {
  const char *v = std::getenv("LLMC_DEBUG");
  return v ? std::atoi(v) : 0;
}


struct CodegenRequest {
  std::string model, function, dumpDir, arch = kDefaultArch;
  std::string attentionBackend = "generated"; // this tool shows kernels
  bool compile = false, split = false;
  FusionConfig fusion;
};

/// Prints the error and fails: a chunk's errors print where they happen.
mlir::LogicalResult failure(const std::string &message) {
  fail(message);
  return mlir::failure();
}

/// Lowers the function of one module buffer and shows it as the options ask.
mlir::LogicalResult processBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
                                  const CodegenRequest &req,
                                  llvm::raw_ostream &os) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, mlir::func::FuncDialect>();
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module || mlir::failed(mlir::llmc::verifyTensorSizes(*module)))
    return failure("'" + req.model +
                   "' is not valid llmc IR (see the diagnostics above)");
  mlir::func::FuncOp func = findFunction(*module, req.function);
  if (!func)
    return failure("'" + req.model + "' has no " +
                   (req.function.empty()
                        ? std::string("func.func @train_step or @forward")
                        : "func.func @" + req.function));

  // The groups `llmc compile` lowers; a module from `llmc-opt
  // --llmc-pipeline` has them already (the passes are idempotent).
  if (mlir::failed(runKernelPipeline(*module, req.fusion)))
    return failure("kernel formation failed (see the diagnostics above)");
  codegen::CodegenOptions options;
  options.vectorSingles = req.fusion.elementwise;
  std::vector<std::string> attention;
  chooseAttentionBackend(func, req.attentionBackend, options, attention);
  for (const std::string &line : attention)
    os << "# attention: " << line << "\n";
  auto lowered = codegen::lowerFunction(func, options);
  if (mlir::failed(lowered))
    return failure("code generation failed (see the diagnostics above)");
  auto plan = codegen::buildUnplannedPlan(func, *lowered);
  if (mlir::failed(plan))
    return failure("code generation failed (see the diagnostics above)");
  std::string table = codegen::launchTable(plan->plan);

  if (debugLevel() >= 4)
    for (const KernelInfo &k : plan->plan.kernels)
      llvm::errs() << "// ===== " << k.name << ".cu =====\n" << k.source;

  if (!req.dumpDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(req.dumpDir))
      return failure("cannot create '" + req.dumpDir + "': " + ec.message());
    for (const KernelInfo &k : plan->plan.kernels)
      if (Status s = writeFileAtomically(req.dumpDir + "/" + k.name + ".cu",
                                         k.source);
          !s)
        return failure(s.message());
    if (Status s = writeFileAtomically(req.dumpDir + "/launch-table.txt", table);
        !s)
      return failure(s.message());
  }
  os << table;

  if (req.compile) {
    if (Status s = checkArchSupported(req.arch); !s)
      return failure(s.message());
    std::vector<CompileRequest> requests;
    for (const KernelInfo &k : plan->plan.kernels) {
      CompileRequest r;
      r.name = k.name;
      r.source = k.source;
      r.options.arch = req.arch;
      requests.push_back(std::move(r));
    }
    std::vector<CompileResult> results = compileAll(requests);
    size_t failures = 0;
    for (const CompileResult &r : results)
      if (!r.status) {
        ++failures;
        llvm::errs() << "llmc codegen: error: " << r.status.message() << "\n";
      }
    if (failures)
      return failure(std::to_string(failures) + " of " +
                     std::to_string(results.size()) +
                     " kernels failed to compile");
    std::string version;
    Status s = nvrtcVersion(version);
    os << "compiled " << results.size() << " kernels for " << req.arch
       << " with NVRTC " << (s ? version : "?") << "\n";
  }
  return mlir::success();
}

} // namespace

int runCodegen(const Args &args) {
  CodegenRequest req;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (a == "--help" || a == "-h") {
      llvm::outs() << kUsage
                   << "\nLowers the model's @train_step (else @forward) to "
                      "CUDA C++ kernels and\ncuBLASLt calls and prints the "
                      "launch table. --dump-cuda writes one .cu\nper kernel "
                      "and the launch table to DIR; --compile compiles every "
                      "kernel\nwith NVRTC for --arch (default sm_90; no GPU "
                      "needed). LLMC_DEBUG=4 prints\nevery kernel's source "
                      "on stderr. --no-fuse=LIST skips fusions (elementwise,"
                      "\nreductions, horizontal, epilogues, gelu-epilogue, "
                      "gelu-grad-epilogue, bias-grad-epilogue, strided, qkv-slices, classifier, all;\n"
                      "docs/fusion.md).\n";
      return 0;
    }
    std::string error;
    if (parseNoFuseOption(args, i, req.fusion, error)) {
      if (!error.empty())
        return fail(error, 2);
      continue;
    }
    bool hasValue = i + 1 < args.size();
    if ((a == "--function" || a == "--dump-cuda" || a == "--arch" ||
         a == "--attention-backend") &&
        !hasValue)
      return fail(a + " needs a value; " + kUsage, 2);
    if (a == "--function")
      req.function = args[++i];
    else if (a == "--dump-cuda")
      req.dumpDir = args[++i];
    else if (a == "--arch")
      req.arch = args[++i];
    else if (a == "--attention-backend") {
      req.attentionBackend = args[++i];
      if (req.attentionBackend != "generated" &&
          req.attentionBackend != "cudnn" && req.attentionBackend != "auto")
        return fail("--attention-backend needs generated, cudnn or auto, got '" +
                        req.attentionBackend + "'",
                    2);
    } else if (a == "--split-input-file")
      req.split = true;
    else if (a == "--compile")
      req.compile = true;
    else if (!a.empty() && a[0] == '-')
      return fail("unknown option '" + a + "'; " + kUsage, 2);
    else if (req.model.empty())
      req.model = a;
    else
      return fail("expected one model file, got '" + req.model + "' and '" + a +
                      "'",
                  2);
  }
  if (req.model.empty())
    return fail(std::string("expected a model file; ") + kUsage, 2);

  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(req.model);
  if (!buffer)
    return fail("cannot read '" + req.model +
                "': " + buffer.getError().message());
  auto process = [&](std::unique_ptr<llvm::MemoryBuffer> chunk,
                     llvm::raw_ostream &os) {
    return processBuffer(std::move(chunk), req, os);
  };
  if (req.split) {
    // Each chunk reports its own errors; the exit code says whether any did.
    if (mlir::failed(mlir::splitAndProcessBuffer(
            std::move(*buffer), process, llvm::outs(), "// -----", "// -----")))
      return 1;
    return 0;
  }
  if (mlir::failed(process(std::move(*buffer), llvm::outs())))
    return 1;
  return 0;
}

} // namespace llmc
