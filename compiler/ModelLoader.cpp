//===- ModelLoader.cpp - One way to read a model for every command --------===//
#include "compiler/ModelLoader.h"
#include "compiler/Pipeline.h"
#include "dialects/llmc/LlmcDialect.h"
#include "dialects/llmc/LlmcOps.h"
#include "dialects/llmc/TensorSize.h"
#include "frontends/json/JsonImporter.h"
#include "frontends/onnx/OnnxImporter.h"
#include "passes/Passes.h"
#include "runtime/ParseInteger.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace llmc {

const char *const kModelOptionsHelp =
    "  --shape NAME=VALUE     bind the symbolic dim NAME (repeatable)\n"
    "  --batch B              ONNX: the first symbolic dim of every integer\n"
    "                         input (token ids, targets); JSON: dim \"batch\"\n"
    "  --seq T                ONNX: their second symbolic dim; JSON: \"seq\"\n"
    "  --no-raise             keep the graph as imported (no raising to\n"
    "                         the composite ops)\n"
    "  --fold-limit N         ONNX: evaluate ops on constants with at most\n"
    "                         N result elements at import (default 65536)\n";

/// A dim a user binds is at most 2^40: anything larger makes a tensor past
/// kMaxTensorBytes whatever its other dims (runtime/CheckedSize.h).
static constexpr int64_t kMaxDim = int64_t(1) << 40;

bool parseModelOption(const Args &args, size_t &i, ModelOptions &options,
                      std::string &error) {
  const std::string &a = args[i];
  auto value = [&](std::string &out) {
    if (i + 1 >= args.size())
      return false;
    out = args[++i];
    return true;
  };
  std::string v;
  int64_t n = 0;
  if (a == "--shape" || a.rfind("--shape=", 0) == 0) {
    if (a == "--shape" ? !value(v) : (v = a.substr(8), false)) {
      error = "--shape needs NAME=VALUE";
      return true;
    }
    size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0 ||
        !parseInteger(v.substr(eq + 1), 1, kMaxDim, n))
      error = "--shape '" + v + "' is not NAME=VALUE with VALUE " +
              integerRangeText(1, kMaxDim);
    else
      options.dims[v.substr(0, eq)] = n;
    return true;
  }
  if (a == "--batch" || a == "--seq" || a == "--fold-limit") {
    bool given = value(v);
    if (!given || !parseInteger(v, 1, kMaxDim, n)) {
      error = a + " needs " + integerRangeText(1, kMaxDim) +
              (given ? ", got '" + v + "'" : "");
      return true;
    }
    if (a == "--fold-limit")
      options.foldLimit = n;
    else
      (a == "--batch" ? options.batch : options.seq) = n;
    return true;
  }
  if (a == "--no-raise") {
    options.raise = false;
    return true;
  }
  return false;
}

std::optional<ModelFormat> modelFormatOf(const std::string &path) {
  llvm::StringRef p(path);
  if (p.ends_with(".onnx"))
    return ModelFormat::Onnx;
  if (p.ends_with(".json") || p == "-")
    return ModelFormat::Json;
  if (p.ends_with(".mlir"))
    return ModelFormat::Mlir;
  return std::nullopt;
}

/// An input the graph never reads is almost always an export mistake:
/// torch.onnx.export given one tensor for two inputs (`(idx, idx)`) binds
/// every use to one of them, and the model then trains on the wrong data.
static void warnUnusedInputs(mlir::ModuleOp module) {
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  if (!forward)
    return;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto name = forward.getArgAttrOfType<mlir::StringAttr>(i, "llmc.input");
    if (name && forward.getArgument(i).use_empty())
      mlir::emitWarning(forward.getLoc())
          << "graph input '" << name.getValue()
          << "' is read by no op; if the exporter was given one tensor for "
             "two inputs (torch.onnx.export(m, (x, x), ...)), it bound both "
             "to one input: export with distinct tensors";
  }
}

/// After raising, a softmax over the last dim of a [B, H, T, S] tensor whose
/// probabilities (or a reshape of them) are the left operand of a matmul is
/// attention that did not raise: it trains correctly, with its [T, S]
/// matrix materialized. One note per model says so, and where.
static void noteUnraisedAttention(mlir::ModuleOp module) {
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  if (!forward)
    return;
  int count = 0;
  mlir::Location first = forward.getLoc();
  forward.walk([&](mlir::llmc::SoftmaxOp softmax) {
    auto type = llvm::cast<mlir::RankedTensorType>(softmax.getType());
    if (type.getRank() != 4 ||
        (softmax.getAxis() != -1 && softmax.getAxis() != 3))
      return;
    auto feedsMatmul = [](mlir::Value v) {
      return llvm::any_of(v.getUses(), [](mlir::OpOperand &use) {
        return llvm::isa<mlir::llmc::MatmulOp>(use.getOwner()) &&
               use.getOperandNumber() == 0;
      });
    };
    bool attention = feedsMatmul(softmax.getResult());
    for (mlir::Operation *user : softmax->getUsers())
      if (auto r = llvm::dyn_cast<mlir::llmc::ReshapeOp>(user))
        attention |= feedsMatmul(r.getResult());
    if (attention && count++ == 0)
      first = softmax.getLoc();
  });
  if (count == 0)
    return;
  std::string node;
  if (auto name = llvm::dyn_cast<mlir::NameLoc>(first))
    node = " (first: node '" + name.getName().str() + "')";
  mlir::emitRemark(forward.getLoc())
      << count << " attention softmax" << (count == 1 ? "" : "es") << node
      << " did not raise to llmc.attention: trained as separate ops, with "
         "the [T, S] probabilities materialized; docs/raising.md lists the "
         "forms that raise";
}

static mlir::OwningOpRef<mlir::ModuleOp>
parseMlir(const std::string &path, mlir::MLIRContext &context) {
  llvm::SourceMgr sourceMgr;
  std::string error;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    mlir::emitError(mlir::UnknownLoc::get(&context))
        << "cannot read '" << path << "': " << buffer.getError().message();
    return nullptr;
  }
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  return mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
}

mlir::OwningOpRef<mlir::ModuleOp> loadModel(const std::string &path,
                                            const ModelOptions &options,
                                            mlir::MLIRContext &context) {
  context.loadDialect<mlir::llmc::LlmcDialect, mlir::func::FuncDialect>();
  auto format = modelFormatOf(path);
  if (!format) {
    mlir::emitError(mlir::UnknownLoc::get(&context))
        << "'" << path << "' is not a model llmc reads: use an ONNX file "
        << "(.onnx), a JSON graph (.json, docs/json-format.md) or llmc IR "
        << "(.mlir)";
    return nullptr;
  }
  mlir::OwningOpRef<mlir::ModuleOp> module;
  switch (*format) {
  case ModelFormat::Onnx: {
    OnnxImportOptions onnx;
    onnx.dims = options.dims;
    onnx.batch = options.batch;
    onnx.seq = options.seq;
    onnx.batchSeqAreDefaults = options.batchSeqAreDefaults;
    onnx.foldLimit = options.foldLimit;
    module = importOnnxFile(path, onnx, context);
    break;
  }
  case ModelFormat::Json: {
    JsonImportOptions json;
    for (const auto &[name, value] : options.dims)
      json.shapes.push_back({name, value});
    if (options.batch)
      json.shapes.push_back({"batch", *options.batch});
    if (options.seq)
      json.shapes.push_back({"seq", *options.seq});
    module = importJsonFile(path, json, context);
    break;
  }
  case ModelFormat::Mlir:
    if (!options.dims.empty() || options.batch || options.seq) {
      mlir::emitError(mlir::UnknownLoc::get(&context))
          << "'" << path << "' is llmc IR, whose shapes are fixed: "
          << "--shape/--batch/--seq apply to ONNX and JSON models";
      return nullptr;
    }
    module = parseMlir(path, context);
    // Shapes in llmc IR are the user's: a type whose count wraps must stop
    // here, before any pass or the evaluator multiplies its dims.
    if (module && mlir::failed(mlir::llmc::verifyTensorSizes(*module)))
      return nullptr;
    return module;
  }
  if (module && failed(mlir::llmc::verifyTensorSizes(*module)))
    return nullptr;
  if (module && options.raise && failed(runRaisePipeline(*module)))
    return nullptr;
  if (module)
    warnUnusedInputs(*module);
  if (module && options.raise)
    noteUnraisedAttention(*module);
  return module;
}

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

void installCliDiagnostics(mlir::MLIRContext &context, const char *command,
                           const std::string &modelPath) {
  bool withLocations = modelFormatOf(modelPath) != ModelFormat::Onnx;
  context.printOpOnDiagnostic(false);
  context.getDiagEngine().registerHandler([command, withLocations](
                                              mlir::Diagnostic &diag) {
    const char *kind =
        diag.getSeverity() == mlir::DiagnosticSeverity::Error     ? "error"
        : diag.getSeverity() == mlir::DiagnosticSeverity::Warning ? "warning"
                                                                  : "note";
    std::string where =
        withLocations ? describeLocation(diag.getLocation()) : "";
    llvm::errs() << "llmc " << command << ": " << kind << ": "
                 << (where.empty() ? "" : where + ": ") << diag.str() << "\n";
    for (const mlir::Diagnostic &note : diag.getNotes())
      llvm::errs() << "llmc " << command << ": note: " << note.str() << "\n";
    return mlir::success();
  });
}

} // namespace llmc
