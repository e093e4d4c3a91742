//===- OnnxGraph.cpp - Walk an ONNX graph into func @forward --------------===//
//
// 1. Decode the initializers: float ones become llmc.param arguments with
//    their values as llmc.init; integer and bool ones become import-time
//    constants (llmc.constant where an op reads them).
// 2. Bind the symbolic dims of the graph inputs from the options and make
//    the inputs llmc.input arguments.
// 3. Import the nodes in order through the op handlers.
// 4. Return the graph outputs (llmc.output), warn about parameters the
//    exporter merged, and verify the module.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"
#include "frontends/onnx/OnnxTorchMetadata.h"
#include "frontends/onnx/onnx.pb.h"

#include "dialects/llmc/LlmcOps.h"
#include "dialects/llmc/TensorSize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"


using namespace mlir;

namespace llmc::onnximport {

//===----------------------------------------------------------------------===//
// Types and attributes
//===----------------------------------------------------------------------===//

FailureOr<Type> llmcElementType(DType type, MLIRContext *ctx) {
  Builder b(ctx);
  switch (type) {
  case DType::Float: return b.getF32Type();
  case DType::Float16: return b.getF16Type();
  case DType::BFloat16: return b.getBF16Type();
  // Reference-only: the evaluator computes in it, the GPU compiler refuses
  // it (docs/reference-evaluator.md), and f64 initializers are refused at
  // import (llmc trains f32 parameters).
  case DType::Double: return b.getF64Type();
  case DType::Int32: return b.getIntegerType(32);
  case DType::Int64: return b.getIntegerType(64);
  case DType::Bool: return b.getIntegerType(1);
  default: return failure();
  }
}

DType dtypeOf(Type type) {
  if (type.isF32()) return DType::Float;
  if (type.isF16()) return DType::Float16;
  if (type.isBF16()) return DType::BFloat16;
  if (type.isF64()) return DType::Double;
  if (type.isInteger(1)) return DType::Bool;
  if (type.isInteger(32)) return DType::Int32;
  if (type.isInteger(64)) return DType::Int64;
  return DType::Undefined;
}

/// Resource keys print as bare identifiers; keep them parseable.
static std::string blobKey(llvm::StringRef name) {
  std::string key;
  for (char c : name)
    key += (llvm::isAlnum(c) || c == '_' || c == '.') ? c : '_';
  if (key.empty() || !(llvm::isAlpha(key[0]) || key[0] == '_'))
    key = "_" + key;
  return key;
}

FailureOr<ElementsAttr> toElementsAttr(const TensorData &t, MLIRContext *ctx,
                                       llvm::StringRef blobName,
                                       int64_t resourceThreshold) {
  auto elt = llmcElementType(t.dtype(), ctx);
  if (failed(elt))
    return failure();
  auto type = RankedTensorType::get(t.shape(), *elt);
  int64_t n = t.numElements();
  if (n > resourceThreshold && t.dtype() != DType::Bool) {
    // The blob holds the ONNX bytes as they are: MLIR's layout of these
    // types is the same little-endian, native-width one.
    auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
        t.bytes(), dtypeSize(t.dtype()));
    return cast<ElementsAttr>(
        DenseResourceElementsAttr::get(type, blobKey(blobName), std::move(blob)));
  }
  switch (t.dtype()) {
  case DType::Float:
  case DType::Float16:
  case DType::BFloat16: {
    const llvm::fltSemantics &sem = cast<FloatType>(*elt).getFloatSemantics();
    SmallVector<APFloat> values;
    for (int64_t i = 0; i < n; ++i) {
      APFloat f(t.getDouble(i));
      bool lost;
      f.convert(sem, APFloat::rmNearestTiesToEven, &lost);
      values.push_back(f);
    }
    return cast<ElementsAttr>(DenseElementsAttr::get(type, values));
  }
  case DType::Bool: {
    SmallVector<bool> values;
    for (int64_t i = 0; i < n; ++i)
      values.push_back(t.getInt(i) != 0);
    return cast<ElementsAttr>(DenseElementsAttr::get(type, values));
  }
  default: {
    unsigned width = cast<IntegerType>(*elt).getWidth();
    SmallVector<APInt> values;
    for (int64_t i = 0; i < n; ++i)
      values.push_back(APInt(width, static_cast<uint64_t>(t.getInt(i)),
                             /*isSigned=*/true));
    return cast<ElementsAttr>(DenseElementsAttr::get(type, values));
  }
  }
}

//===----------------------------------------------------------------------===//
// GraphImporter
//===----------------------------------------------------------------------===//

GraphImporter::GraphImporter(const onnx::ModelProto &model,
                             llvm::StringRef path,
                             const OnnxImportOptions &options,
                             MLIRContext &ctx)
    : model(model), path(path.str()), options(options), ctx(ctx),
      builder(&ctx) {
  baseDir = llvm::sys::path::parent_path(path).str();
  if (baseDir.empty())
    baseDir = ".";
}

Location GraphImporter::fileLoc() {
  return FileLineColLoc::get(&ctx, path, 0, 0);
}

Location GraphImporter::nameLoc(llvm::StringRef name) {
  return NameLoc::get(StringAttr::get(&ctx, name), fileLoc());
}

std::string GraphImporter::unboundHint() const {
  if (unbound.empty())
    return "";
  std::string dims, flags;
  llvm::StringSet<> seen;
  for (const UnboundDim &u : unbound) {
    if (!dims.empty())
      dims += ", ";
    dims += "input '" + u.input + "' dim " + std::to_string(u.dim);
    if (u.symbol.empty()) {
      dims += " (unnamed)";
      continue;
    }
    dims += " ('" + u.symbol + "')";
    if (seen.insert(u.symbol).second)
      flags += " --shape " + u.symbol + "=VALUE";
  }
  std::string hint = "; the model's symbolic dims " + dims + " are not bound";
  if (!flags.empty())
    hint += ": pass" + flags;
  else
    hint += " and have no name: re-export the model with static or named "
            "dynamic dims";
  return hint;
}

/// An earlier constant of `block` with the type and bytes of `attr`, a
/// resource blob; null when there is none. The exporter's optimizer folds a
/// table once per use: RoPE's cos and sin come as 4 equal initializers each
/// in hf_llama_dynamo_opt_loss (one per layer and q/k), where the plain
/// export computes them once. As one value, CSE merges what is computed
/// from them, as in the plain export (the rotary backward's negated sin
/// tables: 12 launches of the step otherwise). Small constants are uniqued
/// attributes, which CSE merges already.
static Value equalConstant(Block *block, ElementsAttr attr) {
  auto resource = dyn_cast<DenseResourceElementsAttr>(attr);
  AsmResourceBlob *blob =
      resource ? resource.getRawHandle().getBlob() : nullptr;
  if (!blob || !block)
    return {};
  for (auto c : block->getOps<mlir::llmc::ConstantOp>()) {
    auto other = dyn_cast<DenseResourceElementsAttr>(c.getValue());
    if (!other || other.getType() != resource.getType())
      continue;
    AsmResourceBlob *otherBlob = other.getRawHandle().getBlob();
    if (otherBlob && otherBlob->getData() == blob->getData())
      return c.getResult();
  }
  return {};
}

FailureOr<Value> GraphImporter::materialize(ImportValue &v, Location loc,
                                            llvm::StringRef name) {
  if (v.value)
    return v.value;
  if (v.isSequence()) {
    emitError(loc) << "value '" << name
                   << "' is a sequence, which only SequenceAt can read";
    return failure();
  }
  if (!v.isConstant()) {
    emitError(loc) << "value '" << name << "' was never computed";
    return failure();
  }
  auto attr = toElementsAttr(*v.constant, &ctx, name);
  if (failed(attr)) {
    emitError(loc) << "value '" << name << "' has element type "
                   << dtypeName(static_cast<int32_t>(v.constant->dtype()))
                   << ", which llmc ops do not take (llmc has f32, f16, "
                      "bf16, f64, i32, i64 and i1)";
    return failure();
  }
  if (Value same = equalConstant(builder.getInsertionBlock(), *attr))
    return v.value = same;
  v.value = builder.create<mlir::llmc::ConstantOp>(loc, *attr);
  return v.value;
}

LogicalResult GraphImporter::bindDims(llvm::StringMap<int64_t> &bound) {
  for (const auto &[name, value] : options.dims) {
    if (value < 1)
      return emitError(fileLoc())
             << "--shape " << name << "=" << value << ": dims must be >= 1";
    bound[name] = value;
  }
  llvm::StringSet<> symbols;
  for (const auto &input : model.graph().input()) {
    if (initializerNames.count(input.name()))
      continue;
    const auto &tt = input.type().tensor_type();
    int symbolic = 0;
    for (const auto &d : tt.shape().dim()) {
      if (!d.has_dim_param())
        continue;
      symbols.insert(d.dim_param());
      bool tokens = isIntegerType(static_cast<DType>(tt.elem_type()));
      if (!tokens)
        continue;
      // --batch/--seq bind the first and second symbolic dim of integer
      // inputs (token ids and targets are [batch, seq]).
      std::optional<int64_t> shorthand =
          symbolic == 0 ? options.batch : symbolic == 1 ? options.seq
                                                        : std::nullopt;
      const char *flag = symbolic == 0 ? "--batch" : "--seq";
      ++symbolic;
      if (!shorthand)
        continue;
      auto it = bound.find(d.dim_param());
      if (it != bound.end() && it->second != *shorthand)
        return emitError(fileLoc())
               << flag << " " << *shorthand << " binds dim '" << d.dim_param()
               << "' of input '" << input.name() << "', but it is already "
               << it->second << " (from --shape or another input)";
      bound[d.dim_param()] = *shorthand;
    }
  }
  for (const auto &[name, value] : options.dims) {
    if (!symbols.count(name)) {
      std::string known;
      for (const auto &s : symbols)
        known += (known.empty() ? "" : ", ") + s.getKey().str();
      emitWarning(fileLoc()) << "--shape " << name << "=" << value
                             << " names no symbolic dim of the model's inputs"
                             << (known.empty() ? " (it has none)"
                                               : " (its symbols: " + known +
                                                     ")");
    }
  }
  if ((options.batch || options.seq) && symbols.empty() &&
      !options.batchSeqAreDefaults)
    emitWarning(fileLoc()) << "--batch/--seq have no effect: the model's "
                              "inputs have static shapes";
  return success();
}

mlir::OwningOpRef<ModuleOp> GraphImporter::run() {
  const onnx::GraphProto &graph = model.graph();
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc());
  (*module)->setAttr("llmc.source",
                     builder.getStringAttr(llvm::sys::path::filename(path)));

  // 1. Initializers.
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  SmallVector<NamedAttrList> argAttrs;
  SmallVector<std::string> argNames;
  bool ok = true;
  for (auto [i, init] : llvm::enumerate(graph.initializer())) {
    if (initializerNames.count(init.name())) {
      emitError(nameLoc(init.name()))
          << "initializer '" << init.name() << "' is defined twice (entry "
          << i << " of the graph's initializers repeats an earlier name; "
          << "the file is damaged)";
      return nullptr;
    }
    initializerNames[init.name()] = true;
  }
  if (failed(checkSingleDefinitions()))
    return nullptr;
  TorchMetadata torch = readTorchMetadata(graph);
  const llvm::StringMap<std::string> &kinds = torch.valueKinds;
  // A data file that cannot be read is reported once, not once for each of
  // the hundreds of weights stored in it.
  llvm::StringSet<> unreadableFiles;
  for (const onnx::TensorProto &init : graph.initializer()) {
    Location loc = nameLoc(init.name());
    std::string file = externalDataFile(init, baseDir);
    if (!file.empty() && unreadableFiles.contains(file)) {
      ok = false;
      continue;
    }
    auto data = decodeTensor(init, baseDir, "initializer");
    if (!data) {
      emitError(loc) << llvm::toString(data.takeError());
      ok = false;
      int fd = -1;
      if (!file.empty() && llvm::sys::fs::openFileForRead(file, fd))
        unreadableFiles.insert(file);
      if (fd >= 0)
        llvm::sys::Process::SafelyCloseFileDescriptor(fd);
      continue;
    }
    DType type = data->dtype();
    // The dynamo exporter's optimizer (optimize=True) folds the scalar
    // constants of decomposed ops (GELU's 0.044715, a pow's exponent) into
    // initializers of their own. torch.export's signature, which marks every
    // real parameter and buffer, does not list them: a one-element float
    // initializer it does not know is such a constant, not a weight (folded
    // weights are never that small), so the raising patterns see it.
    bool folded = torch.isDynamoExport() && !kinds.count(init.name());
    bool foldedScalar = folded && data->numElements() == 1;
    // A larger folded initializer is a constant of the model when no
    // parameter is among what it was folded from (the causal mask, RoPE's
    // cos/sin from the inv_freq buffer): PyTorch does not train it, and the
    // raising patterns must see its values (a folded causal mask is
    // `causal` as in the plain export). Folded from parameters, it is a
    // copy llmc trains in their place (warnFoldedParams).
    bool foldedConstant = false;
    if (folded && !foldedScalar && isFloatType(type) &&
        torch.foldedFrom.count(init.name())) {
      std::vector<std::string> params = torch.foldedParameters(init.name());
      foldedConstant = params.empty();
      if (!foldedConstant)
        foldedParams.push_back({init.name(), std::move(params)});
    }
    // torch.export's lifted tensor constants (`lifted_tensor_N`: CodeGen's
    // and GPT-J's causal-mask fill value, DeBERTa's scale) are constants of
    // the program, not state: as constants the raising patterns see their
    // values (CodeGen's mask is where(causal, lifted_tensor_0, min), causal
    // only when lifted_tensor_0 is known to be 0).
    bool liftedConstant = kinds.lookup(init.name()) == "CONSTANT_TENSOR";
    if (!isFloatType(type) || foldedScalar || foldedConstant ||
        liftedConstant) {
      values[init.name()] = ImportValue::of(std::move(*data));
      continue;
    }
    if (type == DType::Double) {
      emitError(loc) << "initializer '" << init.name()
                     << "' is float64, which llmc does not train: export the "
                        "model in float32 (model.float())";
      ok = false;
      continue;
    }
    auto attr = toElementsAttr(*data, &ctx, init.name());
    NamedAttrList attrs;
    attrs.append("llmc.param", builder.getStringAttr(init.name()));
    attrs.append("llmc.init", *attr);
    // Buffers (rotary inv_freq, ...) keep their value but are not trained:
    // they are not parameters of the PyTorch model.
    llvm::StringRef kind = kinds.lookup(init.name());
    if (kind == "BUFFER")
      attrs.append("llmc.frozen", builder.getUnitAttr());
    argTypes.push_back(cast<TypedAttr>(*attr).getType());
    argLocs.push_back(loc);
    argAttrs.push_back(attrs);
    argNames.push_back(init.name());
  }

  // 2. Graph inputs, with their symbolic dims bound.
  llvm::StringMap<int64_t> bound;
  if (failed(bindDims(bound)))
    return nullptr;
  SmallVector<NamedAttribute> dimNames;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializerNames.count(input.name()))
      continue;
    Location loc = nameLoc(input.name());
    if (!input.type().has_tensor_type()) {
      emitError(loc) << "graph input '" << input.name()
                     << "' is not a tensor; llmc imports tensor inputs only";
      ok = false;
      continue;
    }
    const auto &tt = input.type().tensor_type();
    auto elt = llmcElementType(static_cast<DType>(tt.elem_type()), &ctx);
    if (failed(elt)) {
      emitError(loc) << "graph input '" << input.name()
                     << "' has element type " << dtypeName(tt.elem_type())
                     << ", which llmc does not take (f32, f16, bf16, f64, "
                        "i32, i64, bool)";
      ok = false;
      continue;
    }
    SmallVector<int64_t> shape;
    SmallVector<Attribute> symbols;
    bool anySymbol = false;
    for (auto [i, d] : llvm::enumerate(tt.shape().dim())) {
      symbols.push_back(builder.getStringAttr(d.dim_param()));
      if (d.has_dim_value()) {
        if (d.dim_value() < 0) {
          emitError(loc) << "graph input '" << input.name() << "' has dim "
                         << i << " of size " << d.dim_value();
          return nullptr;
        }
        shape.push_back(d.dim_value());
        continue;
      }
      anySymbol |= d.has_dim_param();
      auto it = bound.find(d.dim_param());
      if (d.has_dim_param() && it != bound.end()) {
        shape.push_back(it->second);
        continue;
      }
      shape.push_back(ShapedType::kDynamic);
      unbound.push_back({input.name(), d.dim_param(), int64_t(i)});
    }
    if (anySymbol)
      dimNames.push_back(builder.getNamedAttr(input.name(),
                                              builder.getArrayAttr(symbols)));
    NamedAttrList attrs;
    attrs.append("llmc.input", builder.getStringAttr(input.name()));
    auto type = RankedTensorType::get(shape, *elt);
    if (std::string why = mlir::llmc::tensorTypeSizeError(type); !why.empty()) {
      emitError(loc) << "graph input '" << input.name() << "' " << why
                     << "; lower --batch, --seq or --shape";
      return nullptr;
    }
    argTypes.push_back(type);
    argLocs.push_back(loc);
    argAttrs.push_back(attrs);
    argNames.push_back(input.name());
  }
  if (!ok)
    return nullptr;
  if (!dimNames.empty())
    (*module)->setAttr("llmc.dim_names", builder.getDictionaryAttr(dimNames));

  builder.setInsertionPointToEnd(module->getBody());
  auto func = builder.create<func::FuncOp>(
      fileLoc(), "forward", builder.getFunctionType(argTypes, {}));
  Block *body = func.addEntryBlock();
  for (auto [i, arg] : llvm::enumerate(body->getArguments())) {
    arg.setLoc(argLocs[i]);
    func.setArgAttrs(i, argAttrs[i].getDictionary(&ctx));
    values[argNames[i]] = ImportValue::of(Value(arg));
  }
  builder.setInsertionPointToEnd(body);

  // 3. Nodes.
  for (const onnx::NodeProto &node : graph.node())
    for (const std::string &in : node.input())
      ++useCounts[in];
  for (const onnx::ValueInfoProto &out : graph.output())
    ++useCounts[out.name()];
  for (auto [i, node] : llvm::enumerate(graph.node()))
    if (failed(importNode(node, static_cast<int>(i))))
      return nullptr;

  // 4. Outputs.
  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &out : graph.output()) {
    auto it = values.find(out.name());
    if (it == values.end()) {
      emitError(nameLoc(out.name()))
          << "graph output '" << out.name()
          << "' is not produced by any node, initializer or input";
      return nullptr;
    }
    auto v = materialize(it->second, nameLoc(out.name()), out.name());
    if (failed(v))
      return nullptr;
    results.push_back(*v);
  }
  builder.create<func::ReturnOp>(fileLoc(), results);
  func.setFunctionType(
      builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [i, out] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, "llmc.output", builder.getStringAttr(out.name()));

  warnSharedNormParams();
  warnFoldedParams(torch);
  if (failed(verify(*module))) {
    emitError(fileLoc()) << "the imported module does not verify (an importer "
                            "bug: please report it with the model)";
    return nullptr;
  }
  return module;
}

LogicalResult GraphImporter::checkSingleDefinitions() {
  // ONNX graphs are in SSA form: every value has one definition. A second
  // writer would silently replace the first for the nodes after it.
  const onnx::GraphProto &graph = model.graph();
  llvm::StringMap<std::string> definedBy;
  for (const onnx::TensorProto &init : graph.initializer())
    definedBy.try_emplace(init.name(), "initializer '" + init.name() + "'");
  for (const onnx::ValueInfoProto &input : graph.input())
    definedBy.try_emplace(input.name(), "graph input '" + input.name() + "'");
  for (auto [i, node] : llvm::enumerate(graph.node())) {
    std::string name = node.name().empty()
                           ? node.op_type() + "#" + std::to_string(i)
                           : node.name();
    for (const std::string &out : node.output()) {
      if (out.empty())
        continue;
      auto [it, inserted] = definedBy.try_emplace(
          out, "node '" + name + "' (" + node.op_type() + ")");
      if (!inserted)
        return emitError(nameLoc(name))
               << "node '" << name << "' (" << node.op_type()
               << ") writes '" << out << "', which " << it->second
               << " already defines: every value must have one definition "
                  "(the file is damaged)";
    }
  }
  return success();
}

void GraphImporter::warnSharedNormParams() {
  // In initializer order, so that the warnings come out the same every time.
  for (const onnx::TensorProto &init : model.graph().initializer()) {
    auto it = normParamUses.find(init.name());
    if (it == normParamUses.end() || it->second.size() < 2)
      continue;
    const std::vector<std::string> &nodes = it->second;
    auto diag = emitWarning(nameLoc(init.name()));
    diag << "initializer '" << init.name() << "' is the scale or bias of "
         << nodes.size() << " LayerNormalization nodes (";
    for (size_t i = 0; i < nodes.size() && i < 3; ++i)
      diag << (i ? ", " : "") << "'" << nodes[i] << "'";
    diag << (nodes.size() > 3 ? ", ..." : "")
         << "): the exporter's optimizer merged parameters that PyTorch "
            "trains separately, and training this graph ties them. Export "
            "for training with torch.onnx.export(..., dynamo=True, "
            "optimize=False), or for TorchScript with "
            "training=torch.onnx.TrainingMode.TRAINING, "
            "do_constant_folding=False";
  }
}

/// The first three names of `names`, quoted, and ", ..." past them.
static std::string firstNames(llvm::ArrayRef<std::string> names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 3; ++i)
    out += (i ? ", '" : "'") + names[i] + "'";
  return out + (names.size() > 3 ? ", ..." : "");
}

static const char *kExportForTraining =
    "Export for training with torch.onnx.export(..., dynamo=True, "
    "optimize=False), or for TorchScript with "
    "training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False";

void GraphImporter::warnFoldedParams(const TorchMetadata &torch) {
  if (!foldedParams.empty()) {
    std::vector<std::string> copies, sources;
    for (const auto &[name, params] : foldedParams) {
      copies.push_back(name);
      sources.push_back(params.front());
    }
    emitWarning(nameLoc(foldedParams.front().first))
        << foldedParams.size()
        << " initializers are copies of parameters that the exporter's "
           "optimizer folded (" << firstNames(copies) << " from "
        << firstNames(sources)
        << "): training this graph trains the copies, under the folded "
           "names. " << kExportForTraining;
  }
  // In a graph the optimizer rewrote, a parameter the signature lists that
  // is neither an initializer nor a source of a folded one was merged into
  // an equal-valued initializer (all RMSNorm weights start as ones). A plain
  // export leaves such gaps for tied weights only (BERT's decoder), so it
  // gets no warning.
  if (torch.foldedFrom.empty())
    return;
  llvm::StringSet<> sources;
  for (const auto &entry : torch.foldedFrom)
    for (const std::string &src : entry.getValue())
      sources.insert(src);
  std::vector<std::string> merged;
  for (const auto &entry : torch.targetKinds)
    if (entry.getValue() == "PARAMETER" &&
        !initializerNames.count(entry.getKey()) &&
        !sources.contains(entry.getKey()))
      merged.push_back(entry.getKey().str());
  llvm::sort(merged);
  if (!merged.empty())
    emitWarning(fileLoc())
        << merged.size() << " parameters of the PyTorch model are not in "
           "the graph (" << firstNames(merged)
        << "): the exporter's optimizer merged equal-valued parameters "
           "into one initializer, and training this graph ties them (a "
           "tied or unused parameter is listed too). " << kExportForTraining;
}

} // namespace llmc::onnximport
