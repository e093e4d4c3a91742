//===- GraphImporter.cpp - Graph-level import of llmc JSON graphs ---------===//
//
// The header, dims, parameters, inputs and outputs of a graph, and the public
// entry points. Nodes are imported by JsonNodes.cpp, JSON values converted by
// JsonTypes.cpp.
//
//===----------------------------------------------------------------------===//
#include "frontends/json/GraphImporter.h"
#include "dialects/llmc/LlmcDialect.h"
#include "dialects/llmc/ShapeUtils.h"
#include "dialects/llmc/TensorSize.h"
#include "frontends/json/InitRule.h"
#include "frontends/ModelPath.h"
#include "runtime/CheckedSize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir;

namespace llmc::json {

GraphImporter::GraphImporter(MLIRContext &context,
                             const JsonImportOptions &options,
                             std::string sourceName)
    : context(context), options(options), sourceName(std::move(sourceName)),
      builder(&context),
      fileLoc(FileLineColLoc::get(&context, this->sourceName, 0, 0)) {}

InFlightDiagnostic GraphImporter::error(const std::string &path) {
  InFlightDiagnostic diag = emitError(fileLoc);
  if (!path.empty())
    diag << path << ": ";
  return diag;
}

/// Fails with a message naming each key of `object` not in `allowed`. The
/// key "//" is always allowed: it holds comments.
static std::optional<std::string>
unknownKey(const Json &object, std::initializer_list<const char *> allowed) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (it.key() == "//")
      continue;
    bool ok = false;
    for (const char *a : allowed)
      ok |= it.key() == a;
    if (!ok)
      return it.key();
  }
  return std::nullopt;
}

LogicalResult GraphImporter::checkHeader(const Json &root) {
  if (!root.is_object())
    return error("") << "a graph is a JSON object, got " << describe(root);
  if (auto key = unknownKey(root, {"format", "version", "name", "inputs",
                                   "parameters", "dims", "nodes", "outputs"}))
    return error(*key) << "unknown field; a graph has format, version, name, "
                          "dims, inputs, parameters, nodes and outputs";
  const Json *format = member(root, "format");
  if (!format || !format->is_string() || *format != "llmc-graph")
    return error("format") << "expected \"llmc-graph\", got "
                           << (format ? describe(*format) : "nothing");
  const Json *version = member(root, "version");
  if (!version || asInt(*version) != 1)
    return error("version") << "this llmc reads version 1, got "
                            << (version ? describe(*version) : "nothing");
  if (const Json *name = member(root, "name"); name && !name->is_string())
    return error("name") << "expected a string, got " << describe(*name);
  for (const char *list : {"inputs", "nodes", "outputs"}) {
    const Json *v = member(root, list);
    if (!v || !v->is_array())
      return error(list) << "expected a list, got "
                         << (v ? describe(*v) : "nothing");
  }
  if (const Json *p = member(root, "parameters"); p && !p->is_array())
    return error("parameters") << "expected a list, got " << describe(*p);
  return success();
}

LogicalResult GraphImporter::readDims(const Json &root) {
  const Json *d = member(root, "dims");
  if (!d)
    return success();
  if (!d->is_object())
    return error("dims") << "expected an object of name: size, got "
                         << describe(*d);
  for (auto it = d->begin(); it != d->end(); ++it) {
    if (it.key() == "//")
      continue; // a comment
    std::string path = "dims." + it.key(), message;
    auto value = asInt(it.value());
    if (!value)
      return error(path) << "expected a positive integer, got "
                         << describe(it.value());
    if (!dims.addDefault(it.key(), *value, message))
      return error(path) << message;
  }
  for (const DimOverride &o : options.shapes)
    dims.addOverride(o);
  return success();
}

LogicalResult GraphImporter::defineValue(const std::string &name, Value value,
                                         const std::string &path) {
  if (name.empty())
    return error(path) << "a value name must not be empty";
  auto [it, inserted] = values.try_emplace(name, value, path);
  if (!inserted)
    return error(path) << "duplicate value name '" << name
                       << "': already defined by " << it->second.second;
  return success();
}

FailureOr<Attribute> GraphImporter::readSafetensorsInit(const Json &init,
                                                        const std::string &path,
                                                        RankedTensorType type) {
  if (auto key = unknownKey(init, {"safetensors", "tensor"}))
    return error(path + "." + *key)
           << "unknown field; a safetensors init has safetensors and tensor";
  const Json *file = member(init, "safetensors");
  const Json *tensor = member(init, "tensor");
  if (!file || !file->is_string() || !tensor || !tensor->is_string())
    return error(path) << "expected {\"safetensors\": FILE, \"tensor\": NAME} "
                          "with two strings";
  // Only files inside the graph's folder (the working directory for stdin),
  // symbolic links resolved: a downloaded graph must not read arbitrary
  // files into its weights (docs/trust-model.md).
  std::string location = file->get<std::string>();
  std::string modelDir =
      sourceName == "<stdin>"
          ? std::string(".")
          : llvm::sys::path::parent_path(sourceName).str();
  std::string why;
  std::optional<std::string> resolved =
      resolveModelPath(modelDir, location, why);
  if (!resolved)
    return error(path + ".safetensors")
           << "refusing '" << location << "', " << why
           << " (keep the safetensors file in the graph's folder and name it "
              "relative to that folder)";
  std::string filePath = *resolved;
  LoadedTensor loaded;
  std::string message;
  const SafetensorsLoader &load =
      options.loadSafetensors ? options.loadSafetensors
                              : SafetensorsLoader(readSafetensorsTensor);
  if (!load(filePath, tensor->get<std::string>(), loaded, message))
    return error(path) << message;
  static const std::pair<const char *, const char *> kDtypes[] = {
      {"F32", "f32"},
      {"F16", "f16"},
      {"BF16", "bf16"},
      {"F8_E4M3", "f8E4M3FN"},
      {"F8_E5M2", "f8E5M2"}};
  std::string expected;
  llvm::raw_string_ostream os(expected);
  os << type.getElementType();
  bool dtypeOk = false;
  for (auto [st, mlirName] : kDtypes)
    dtypeOk |= loaded.dtype == st && expected == mlirName;
  if (!dtypeOk || llvm::ArrayRef(loaded.shape) != type.getShape())
    return error(path) << "tensor '" << tensor->get<std::string>() << "' is "
                       << loaded.dtype << " "
                       << mlir::llmc::shapeToString(loaded.shape)
                       << " but the parameter is " << expected << " "
                       << mlir::llmc::shapeToString(type.getShape());
  // Aligned to the element size, so that readers may view it as an array.
  auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      llvm::ArrayRef<char>(loaded.bytes),
      static_cast<size_t>(safetensorsDtypeBytes(loaded.dtype)));
  return Attribute(DenseResourceElementsAttr::get(
      type, tensor->get<std::string>(), std::move(blob)));
}

FailureOr<DictionaryAttr> GraphImporter::readParameter(const Json &param,
                                                       const std::string &path,
                                                       RankedTensorType type) {
  NamedAttrList attrs;
  attrs.append("llmc.param", builder.getStringAttr(
                                 (*member(param, "name")).get<std::string>()));
  const Json *init = member(param, "init");
  if (!init)
    return error(path + ".init")
           << "missing; give a rule (\"normal(0.02)\", \"zeros\", \"ones\") "
              "or {\"safetensors\": FILE, \"tensor\": NAME}";
  if (init->is_string()) {
    std::string message;
    auto rule = parseInitRule(init->get<std::string>(), message);
    if (!rule)
      return error(path + ".init") << message;
    attrs.append("llmc.init_rule", builder.getStringAttr(rule->str()));
  } else if (init->is_object()) {
    auto value = readSafetensorsInit(*init, path + ".init", type);
    if (failed(value))
      return failure();
    attrs.append("llmc.init", *value);
  } else {
    return error(path + ".init") << "expected a rule string or a safetensors "
                                    "object, got "
                                 << describe(*init);
  }
  if (const Json *frozen = member(param, "frozen")) {
    if (!frozen->is_boolean())
      return error(path + ".frozen")
             << "expected true or false, got " << describe(*frozen);
    if (frozen->get<bool>())
      attrs.append("llmc.frozen", builder.getUnitAttr());
  }
  return attrs.getDictionary(&context);
}

LogicalResult
GraphImporter::readArguments(const Json &root, SmallVectorImpl<Type> &types,
                             SmallVectorImpl<DictionaryAttr> &attrs,
                             std::vector<std::string> &names) {
  static const Json kEmpty = Json::array();
  const Json *params = member(root, "parameters");
  // All parameters together: checked before anything initializes them.
  ::llmc::CheckedSize paramBytes(0);
  for (int pass = 0; pass < 2; ++pass) {
    bool isParam = pass == 0;
    const Json &list =
        isParam ? (params ? *params : kEmpty) : *member(root, "inputs");
    for (size_t i = 0; i < list.size(); ++i) {
      const Json &entry = list[i];
      std::string path =
          (isParam ? "parameters[" : "inputs[") + std::to_string(i) + "]";
      if (!entry.is_object())
        return error(path) << "expected an object, got " << describe(entry);
      auto key =
          isParam
              ? unknownKey(entry, {"name", "dtype", "shape", "init", "frozen"})
              : unknownKey(entry, {"name", "dtype", "shape"});
      if (key)
        return error(path + "." + *key)
               << "unknown field; " << (isParam ? "a parameter" : "an input")
               << " has name, dtype, shape"
               << (isParam ? ", init and frozen" : "");
      const Json *name = member(entry, "name");
      if (!name || !name->is_string())
        return error(path + ".name") << "expected a string, got "
                                     << (name ? describe(*name) : "nothing");
      auto dtype =
          readDtype(member(entry, "dtype") ? *member(entry, "dtype") : Json(),
                    path + ".dtype");
      if (failed(dtype))
        return failure();
      if (isParam && !isa<FloatType>(*dtype))
        return error(path + ".dtype")
               << "a parameter is trained and must have a float type; use a "
                  "constant node for an integer tensor";
      const Json *shape = member(entry, "shape");
      if (!shape)
        return error(path + ".shape") << "missing";
      auto dimsOr = readShape(*shape, path + ".shape");
      if (failed(dimsOr))
        return failure();
      auto type = RankedTensorType::get(*dimsOr, *dtype);
      if (std::string why = mlir::llmc::tensorTypeSizeError(type);
          !why.empty())
        return error(path + ".shape")
               << (isParam ? "parameter '" : "input '")
               << name->get<std::string>() << "' " << why;
      if (isParam) {
        paramBytes += ::llmc::byteSize(
            type.getShape(), (type.getElementTypeBitWidth() + 7) / 8);
        if (!paramBytes.fitsIn(::llmc::kMaxModelBytes))
          return error(path + ".shape")
                 << "the parameters up to '" << name->get<std::string>()
                 << "' take " << ::llmc::bytesText(paramBytes.approx())
                 << ", more than the "
                 << ::llmc::bytesText(double(::llmc::kMaxModelBytes))
                 << " llmc allows for a model";
      }
      DictionaryAttr dict;
      if (isParam) {
        auto p = readParameter(entry, path, type);
        if (failed(p))
          return failure();
        dict = *p;
      } else {
        dict = builder.getDictionaryAttr(builder.getNamedAttr(
            "llmc.input", builder.getStringAttr(name->get<std::string>())));
      }
      types.push_back(type);
      attrs.push_back(dict);
      names.push_back(name->get<std::string>());
    }
  }
  return success();
}

OwningOpRef<ModuleOp> GraphImporter::run(const Json &root) {
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
  if (failed(checkHeader(root)) || failed(readDims(root)))
    return nullptr;

  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  std::vector<std::string> argNames;
  if (failed(readArguments(root, argTypes, argAttrs, argNames)))
    return nullptr;

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  module->getOperation()->setAttr("llmc.source",
                                  builder.getStringAttr(sourceName));
  if (const Json *name = member(root, "name"))
    module->getOperation()->setAttr(
        "llmc.name", builder.getStringAttr(name->get<std::string>()));
  builder.setInsertionPointToEnd(module->getBody());
  auto func = builder.create<func::FuncOp>(
      fileLoc, "forward", builder.getFunctionType(argTypes, {}));
  func.setAllArgAttrs(argAttrs);
  Block *body = func.addEntryBlock();
  size_t numParams =
      member(root, "parameters") ? member(root, "parameters")->size() : 0;
  for (size_t i = 0; i < argNames.size(); ++i) {
    std::string path = i < numParams
                           ? "parameters[" + std::to_string(i) + "]"
                           : "inputs[" + std::to_string(i - numParams) + "]";
    body->getArgument(i).setLoc(
        NameLoc::get(builder.getStringAttr(path), fileLoc));
    if (failed(defineValue(argNames[i], body->getArgument(i), path)))
      return nullptr;
  }

  builder.setInsertionPointToEnd(body);
  const Json &nodes = *member(root, "nodes");
  for (size_t i = 0; i < nodes.size(); ++i)
    if (failed(importNode(i, nodes[i])))
      return nullptr;

  const Json &outputs = *member(root, "outputs");
  if (outputs.empty())
    return error("outputs") << "a graph needs at least one output", nullptr;
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string path = "outputs[" + std::to_string(i) + "]";
    if (!outputs[i].is_string())
      return error(path) << "expected a value name, got "
                         << describe(outputs[i]),
             nullptr;
    std::string name = outputs[i].get<std::string>();
    auto it = values.find(name);
    if (it == values.end())
      return error(path) << "unknown value '" << name << "'", nullptr;
    results.push_back(it->second.first);
    resultAttrs.push_back(builder.getDictionaryAttr(
        builder.getNamedAttr("llmc.output", builder.getStringAttr(name))));
  }
  builder.create<func::ReturnOp>(fileLoc, results);
  func.setFunctionType(
      builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  func.setAllResultAttrs(resultAttrs);

  if (auto unused = dims.unusedOverrides(); !unused.empty()) {
    InFlightDiagnostic diag = error("--shape")
                              << "the graph has no dim '" << unused.front()
                              << "'; its dims are:";
    for (const std::string &n : dims.knownNames())
      diag << " " << n;
    return nullptr;
  }
  NamedAttrList bound;
  for (auto [name, value] : dims.usedValues())
    bound.append(name, builder.getI64IntegerAttr(value));
  module->getOperation()->setAttr("llmc.dims", bound.getDictionary(&context));
  return module;
}

} // namespace llmc::json

namespace llmc {

OwningOpRef<ModuleOp> importJsonText(llvm::StringRef text,
                                     llvm::StringRef sourceName,
                                     const JsonImportOptions &options,
                                     MLIRContext &context) {
  std::string message;
  auto root = json::parseText(text.str(), message);
  if (!root) {
    emitError(FileLineColLoc::get(&context, sourceName, 0, 0))
        << "invalid JSON: " << message;
    return nullptr;
  }
  return json::GraphImporter(context, options, sourceName.str()).run(*root);
}

OwningOpRef<ModuleOp> importJsonFile(llvm::StringRef path,
                                     const JsonImportOptions &options,
                                     MLIRContext &context) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path);
  std::string name = path == "-" ? "<stdin>" : path.str();
  if (!buffer) {
    emitError(FileLineColLoc::get(&context, name, 0, 0))
        << "cannot read the graph: " << buffer.getError().message();
    return nullptr;
  }
  return importJsonText((*buffer)->getBuffer(), name, options, context);
}

} // namespace llmc
