//===- OnnxImporter.cpp - Read an ONNX file and import it -----------------===//
//
// Entry points: parse the protobuf (a damaged file is an error, never a
// crash), check the opset, then hand the graph to GraphImporter. Also the
// op registry and --list-unsupported, which reports every op the importer
// lacks at once instead of stopping at the first.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxGraph.h"
#include "frontends/onnx/onnx.pb.h"

#include "dialects/llmc/LlmcDialect.h"
#include "dialects/llmc/TensorSize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/MemoryBuffer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <climits>

using namespace mlir;

namespace llmc {
namespace onnximport {

const OpRegistry &opHandlers() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    registerElementwiseOps(r);
    registerShapeOps(r);
    registerNNOps(r);
    registerDecomposedOps(r);
    registerEinsumOp(r);
    return r;
  }();
  return registry;
}

static bool isDefaultDomain(llvm::StringRef domain) {
  return domain.empty() || domain == "ai.onnx";
}

// Opsets 22 to 25 changed none of the imported ops' semantics (they added
// element types and new ops, which are refused by name). Older opsets are
// checked op by op (oldestOpset, OnnxOpsets.cpp).
constexpr int64_t kMinOpset = 1, kMaxOpset = 25;
constexpr const char *kReexport =
    "re-export with torch.onnx.export(..., opset_version=18), or convert the "
    "file with onnx.version_converter.convert_version(model, 18)";

/// Inputs an op cannot do without (ONNX schemas); handlers may then read
/// them unchecked. Ops not listed need one.
static unsigned requiredInputs(llvm::StringRef op) {
  static const llvm::StringMap<unsigned> counts = {
      {"Constant", 0},         {"Range", 3},
      {"Where", 3},            {"Reshape", 2},
      {"Expand", 2},           {"Gather", 2},
      {"GatherElements", 2},   {"GatherND", 2},
      {"MatMul", 2},           {"Gemm", 2},
      {"Pad", 2},              {"Slice", 3},
      {"CastLike", 2},         {"SequenceAt", 2},
      {"LayerNormalization", 2},
      {"SoftmaxCrossEntropyLoss", 2},
      {"NegativeLogLikelihoodLoss", 2},
      {"Add", 2},              {"Sub", 2},
      {"Mul", 2},              {"Div", 2},
      {"Pow", 2},              {"Mod", 2},
      {"Equal", 2},            {"Less", 2},
      {"LessOrEqual", 2},      {"Greater", 2},
      {"GreaterOrEqual", 2},   {"And", 2},
      {"Or", 2},               {"Xor", 2},
      {"Tile", 2},             {"PRelu", 2},
      {"CumSum", 2},
  };
  auto it = counts.find(op);
  return it == counts.end() ? 1 : it->second;
}

/// Parses the bytes of a model named `path` into `model`; emits an error on
/// failure.
static LogicalResult parseModel(llvm::StringRef bytes, const std::string &path,
                                MLIRContext &ctx, onnx::ModelProto &model) {
  Location loc = FileLineColLoc::get(&ctx, path, 0, 0);
  google::protobuf::io::ArrayInputStream stream(
      bytes.data(), static_cast<int>(std::min<size_t>(bytes.size(), INT_MAX)));
  google::protobuf::io::CodedInputStream coded(&stream);
  // Models with weights inline reach protobuf's 2 GB message limit; accept
  // everything up to it instead of the smaller default.
  coded.SetTotalBytesLimit(INT_MAX);
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage() ||
      bytes.size() > static_cast<size_t>(INT_MAX))
    return emitError(loc) << "'" << path
                          << "' is not a valid ONNX model: protobuf parsing "
                             "failed (the file is truncated, or not ONNX)";
  if (!model.has_graph() || model.ir_version() <= 0)
    return emitError(loc) << "'" << path
                          << "' is not an ONNX model: it has no "
                          << (model.has_graph() ? "ir_version" : "graph");
  return success();
}

/// Reads and parses the file `path` into `model`; emits an error on failure.
static LogicalResult loadModel(const std::string &path, MLIRContext &ctx,
                               onnx::ModelProto &model) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return emitError(FileLineColLoc::get(&ctx, path, 0, 0))
           << "cannot read '" << path << "': " << buffer.getError().message();
  return parseModel((*buffer)->getBuffer(), path, ctx, model);
}

/// The version of the default domain the model imports; an error when it
/// imports none or one outside [1, 25].
static FailureOr<int64_t> checkOpset(const onnx::ModelProto &model,
                                     const std::string &path,
                                     MLIRContext &ctx) {
  Location loc = FileLineColLoc::get(&ctx, path, 0, 0);
  std::optional<int64_t> version;
  for (const auto &op : model.opset_import())
    if (isDefaultDomain(op.domain()))
      version = op.version();
  if (!version) {
    emitError(loc) << "'" << path
                   << "' imports no opset of the default ONNX domain; llmc "
                      "imports opsets "
                   << kMinOpset << " to " << kMaxOpset;
    return failure();
  }
  if (*version < kMinOpset) {
    emitError(loc) << "'" << path << "' uses ONNX opset " << *version
                   << "; llmc imports opsets " << kMinOpset << " to "
                   << kMaxOpset << ": " << kReexport;
    return failure();
  }
  if (*version > kMaxOpset) {
    emitError(loc) << "'" << path << "' uses ONNX opset " << *version
                   << ", newer than llmc knows; llmc imports opsets "
                   << kMinOpset << " to " << kMaxOpset
                   << ": re-export with torch.onnx.export(..., "
                      "opset_version=18)";
    return failure();
  }
  return *version;
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node,
                                        int index) {
  std::string name = node.name().empty()
                         ? node.op_type() + "#" + std::to_string(index)
                         : node.name();
  Location loc = nameLoc(name);
  if (!isDefaultDomain(node.domain()))
    return emitError(loc)
           << "node '" << name << "' (" << node.op_type() << ") is in domain '"
           << node.domain()
           << "', which llmc does not import: llmc reads the default ONNX "
              "domain only; export without custom ops or runtime-specific "
              "fusions";
  const OpRegistry &handlers = opHandlers();
  auto handler = handlers.find(node.op_type());
  if (handler == handlers.end())
    return emitError(loc)
           << "node '" << name << "' (" << node.op_type()
           << "): llmc does not import ONNX op '" << node.op_type()
           << "'; run `llmc import --list-unsupported` to see every "
              "unsupported op of the model, and re-export it without them "
              "(docs/onnx.md lists the supported ops)";
  if (OldestOpset oldest = oldestOpset(node.op_type());
      opsetVersion < oldest.opset) {
    InFlightDiagnostic d = emitError(loc);
    d << "node '" << name << "' (" << node.op_type() << "): ";
    if (*oldest.why)
      d << "in opset " << opsetVersion << ", " << node.op_type() << " "
        << oldest.why << "; llmc imports " << node.op_type()
        << " from opset " << oldest.opset << ": " << kReexport;
    else
      d << "opset " << opsetVersion << " has no " << node.op_type()
        << " (ONNX added it in opset " << oldest.opset
        << "): the file is not valid ONNX";
    return d;
  }
  unsigned required = requiredInputs(node.op_type());
  for (unsigned i = 0; i < required; ++i)
    if (i >= unsigned(node.input_size()) || node.input(i).empty())
      return emitError(loc) << "node '" << name << "' (" << node.op_type()
                            << ") has no input " << i << "; "
                            << node.op_type() << " needs at least "
                            << required << " (the file is damaged)";
  for (const std::string &in : node.input()) {
    if (!in.empty() && !values.count(in))
      return emitError(loc)
             << "node '" << name << "' (" << node.op_type() << ") reads '"
             << in
             << "', which no earlier node, initializer or graph input "
                "defines (the file is damaged, or its nodes are not in "
                "topological order)";
  }
  OnnxNode n(*this, node, name, loc);
  if (failed(handler->second(n)))
    return failure();
  for (unsigned i = 0; i < n.numOutputs(); ++i) {
    if (n.outputUsed(i) && !values.count(node.output(i)))
      return n.emitError() << "output " << i << " ('" << node.output(i)
                           << "') is read by the graph, but llmc does not "
                              "compute that output of "
                           << node.op_type();
    // Whatever the op, its result must be a tensor llmc can count and
    // hold; the verifier would say so too, but without the node's name.
    auto it = values.find(node.output(i));
    if (it != values.end() && it->second.value)
      if (std::string why =
              mlir::llmc::tensorTypeSizeError(it->second.value.getType());
          !why.empty())
        return n.emitError()
               << "output '" << node.output(i) << "' " << why;
  }
  return success();
}

} // namespace onnximport

using namespace onnximport;

static void loadDialects(MLIRContext &context) {
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
}

static OwningOpRef<ModuleOp> importModel(onnx::ModelProto &model,
                                         const std::string &path,
                                         const OnnxImportOptions &options,
                                         MLIRContext &context) {
  auto version = checkOpset(model, path, context);
  if (failed(version))
    return nullptr;
  GraphImporter importer(model, path, options, context);
  importer.opsetVersion = *version;
  return importer.run();
}

OwningOpRef<ModuleOp> importOnnxFile(const std::string &path,
                                     const OnnxImportOptions &options,
                                     MLIRContext &context) {
  loadDialects(context);
  onnx::ModelProto model;
  if (failed(loadModel(path, context, model)))
    return nullptr;
  return importModel(model, path, options, context);
}

OwningOpRef<ModuleOp> importOnnxBuffer(llvm::StringRef bytes,
                                       const std::string &path,
                                       const OnnxImportOptions &options,
                                       MLIRContext &context) {
  loadDialects(context);
  onnx::ModelProto model;
  if (failed(parseModel(bytes, path, context, model)))
    return nullptr;
  return importModel(model, path, options, context);
}

FailureOr<std::vector<UnsupportedOnnxOp>>
listUnsupportedOnnxOps(const std::string &path, MLIRContext &context) {
  loadDialects(context);
  onnx::ModelProto model;
  if (failed(loadModel(path, context, model)))
    return failure();
  std::vector<UnsupportedOnnxOp> out;
  const OpRegistry &handlers = opHandlers();
  int64_t opset = kMaxOpset;
  for (const auto &op : model.opset_import())
    if (isDefaultDomain(op.domain()))
      opset = op.version();
  for (const auto &[i, node] : llvm::enumerate(model.graph().node())) {
    bool known =
        isDefaultDomain(node.domain()) && handlers.count(node.op_type());
    int64_t readsFrom = known ? oldestOpset(node.op_type()).opset : 0;
    if (known && opset >= readsFrom)
      continue;
    const auto &n = node; // a lambda may not capture a structured binding (C++17)
    auto it = std::find_if(out.begin(), out.end(), [&](const auto &u) {
      return u.opType == n.op_type() && u.domain == n.domain();
    });
    if (it == out.end()) {
      out.push_back({node.op_type(), node.domain(), 0, {}, known ? opset : 0,
                     readsFrom});
      it = std::prev(out.end());
    }
    ++it->count;
    if (it->firstNodes.size() < 3)
      it->firstNodes.push_back(node.name().empty()
                                   ? node.op_type() + "#" + std::to_string(i)
                                   : node.name());
  }
  return out;
}

} // namespace llmc
