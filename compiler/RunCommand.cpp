//===- RunCommand.cpp - `llmc run`: evaluate a model on the CPU -----------===//
//
// Runs a model's @forward in the reference evaluator on a batch from a file
// and prints (or writes as JSON) every output. This is how a user checks
// what llmc computes before compiling anything, and how tests compare llmc
// with PyTorch's numbers.
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver.h"
#include "compiler/ModelLoader.h"
#include "compiler/eval/Evaluator.h"
#include "compiler/eval/ModelArguments.h"
#include "dialects/llmc/LlmcDialect.h"
#include "runtime/AtomicFile.h"
#include "runtime/ParseInteger.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <cinttypes>
#include <cmath>

namespace llmc {

namespace {

constexpr const char *kUsage =
    "usage: llmc run MODEL --inputs BATCH.{json,safetensors} "
    "[-o OUT.json] [--seed N] [model options]\n";

/// @forward, or the module's only function.
mlir::func::FuncOp findModelFunction(mlir::ModuleOp module) {
  if (auto f = module.lookupSymbol<mlir::func::FuncOp>("forward"))
    return f;
  auto funcs = llvm::to_vector(module.getOps<mlir::func::FuncOp>());
  return funcs.size() == 1 ? funcs.front() : nullptr;
}

std::string outputName(mlir::func::FuncOp func, unsigned i) {
  if (auto name = func.getResultAttrOfType<mlir::StringAttr>(i, "llmc.output"))
    return name.getValue().str();
  return "result#" + std::to_string(i);
}

std::string formatValue(const RefTensor &t, int64_t i) {
  if (!t.isFloat())
    return std::to_string(t.ints[i]);
  char buf[40];
  std::snprintf(buf, sizeof(buf), t.kind == ElementKind::F64 ? "%.17g" : "%.9g",
                t.floats[i]);
  return buf;
}

constexpr int64_t kPrintAllLimit = 64;

void printOutput(const std::string &name, const RefTensor &t) {
  llvm::outs() << name << ": " << t.typeString();
  int64_t n = t.numElements();
  if (n <= kPrintAllLimit) {
    llvm::outs() << " = ";
    if (t.rank() > 0)
      llvm::outs() << "[";
    for (int64_t i = 0; i < n; ++i)
      llvm::outs() << (i ? ", " : "") << formatValue(t, i);
    llvm::outs() << (t.rank() > 0 ? "]\n" : "\n");
    return;
  }
  double sum = 0, absSum = 0;
  for (int64_t i = 0; i < n; ++i) {
    sum += t.getDouble(i);
    absSum += std::fabs(t.getDouble(i));
  }
  char buf[96];
  std::snprintf(buf, sizeof(buf), " sum=%.9g mean_abs=%.9g", sum,
                absSum / static_cast<double>(n));
  llvm::outs() << buf << " first8=[";
  for (int64_t i = 0; i < 8; ++i)
    llvm::outs() << (i ? ", " : "") << formatValue(t, i);
  llvm::outs() << "]\n";
}

nlohmann::json jsonValue(const RefTensor &t, int64_t i) {
  if (!t.isFloat())
    return t.kind == ElementKind::I1 ? nlohmann::json(t.ints[i] != 0)
                                     : nlohmann::json(t.ints[i]);
  double v = t.floats[i];
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  return v;
}

/// Nested lists in the shape of `t`, the format `--inputs` reads.
nlohmann::json jsonNested(const RefTensor &t, size_t dim, int64_t &next) {
  if (dim == t.shape.size())
    return jsonValue(t, next++);
  nlohmann::json list = nlohmann::json::array();
  for (int64_t i = 0; i < t.shape[dim]; ++i)
    list.push_back(jsonNested(t, dim + 1, next));
  return list;
}

int fail(const std::string &message, int code = 1) {
  llvm::errs() << "llmc run: error: " << message << "\n";
  return code;
}

} // namespace

int runRun(const Args &args) {
  std::string model, inputsPath, outPath;
  uint64_t seed = 0;
  ModelOptions modelOptions;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    std::string optionError;
    if (parseModelOption(args, i, modelOptions, optionError)) {
      if (!optionError.empty())
        return fail(optionError, 2);
      continue;
    }
    if (a == "--help" || a == "-h") {
      llvm::outs() << kUsage
                   << "\nEvaluates the model's @forward (an ONNX file, a JSON "
                      "graph or llmc IR) in the\nCPU reference evaluator "
                      "(float64) on the batch in the inputs file and prints\n"
                      "every output.\n\nmodel options:\n"
                   << kModelOptionsHelp;
      return 0;
    }
    bool hasValue = i + 1 < args.size();
    if ((a == "--inputs" || a == "-o" || a == "--seed") && !hasValue)
      return fail(a + " needs a value; " + kUsage, 2);
    if (a == "--inputs")
      inputsPath = args[++i];
    else if (a == "-o")
      outPath = args[++i];
    else if (a == "--seed") {
      if (!parseUnsigned64(args[++i], seed))
        return fail("--seed needs an integer in [0, 18446744073709551615], "
                    "got '" + args[i] + "'",
                    2);
    } else if (!a.empty() && a[0] == '-')
      return fail("unknown option '" + a + "'; " + kUsage, 2);
    else if (model.empty())
      model = a;
    else
      return fail(
          "expected one model file, got '" + model + "' and '" + a + "'", 2);
  }
  if (model.empty() || inputsPath.empty())
    return fail(std::string("expected a model and --inputs; ") + kUsage, 2);

  mlir::MLIRContext context;
  installCliDiagnostics(context, "run", model);
  std::string error;
  auto module = loadModel(model, modelOptions, context);
  if (!module)
    return 1;
  mlir::func::FuncOp func = findModelFunction(*module);
  if (!func)
    return fail("'" + model + "' has no func.func @forward");

  auto expected = expectedInputs(func, error);
  if (!expected)
    return fail(error);
  auto inputs = readInputFile(inputsPath, *expected, error);
  if (!inputs)
    return fail(error);
  auto arguments = buildArguments(func, *inputs, seed, error);
  if (!arguments)
    return fail(error);
  auto results = evaluate(func, *arguments);
  if (failed(results))
    return fail("evaluation failed (see the diagnostics above)");

  if (outPath.empty()) {
    for (auto [i, t] : llvm::enumerate(*results))
      printOutput(outputName(func, i), t);
    return 0;
  }
  nlohmann::json doc = nlohmann::json::object();
  for (auto [i, t] : llvm::enumerate(*results)) {
    int64_t next = 0;
    doc[outputName(func, i)] = {{"dtype", kindName(t.kind)},
                                {"shape", t.shape},
                                {"values", jsonNested(t, 0, next)}};
  }
  if (Status s = writeFileAtomically(outPath, doc.dump() + "\n"); !s)
    return fail(s.message());
  return 0;
}

} // namespace llmc
