//===- JsonNodes.cpp - Import one JSON node as one llmc op ----------------===//
//
// A node is {"op", "inputs", "outputs", "attrs"}. It is imported in four
// steps, each reporting the JSON path of what it rejects:
//   1. look the op up in the signature table (OpSignatures.h);
//   2. resolve the inputs to values defined above and match them to the
//      op's operands (null stands for an absent optional operand);
//   3. convert the attrs by kind; "shape"/"dtype" give the result type of
//      ops that do not infer it (reshape, broadcast_to, cast, iota,
//      constant);
//   4. build the op generically from an OperationState, infer its result
//      types through InferTypeOpInterface, and run its verifier, whose
//      messages carry the node's location NameLoc("nodes[i]").
//
//===----------------------------------------------------------------------===//
#include "dialects/llmc/LlmcOps.h"
#include "dialects/llmc/ShapeUtils.h"
#include "frontends/json/GraphImporter.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

using namespace mlir;

namespace llmc::json {

/// "input, weight (optional), bias (optional)" for arity messages.
static std::string describeOperands(const OpSignature &sig) {
  std::string s;
  for (const OperandSpec &o : sig.operands) {
    if (!s.empty())
      s += ", ";
    s += o.name;
    if (o.arity == OperandSpec::Arity::Optional)
      s += " (optional)";
    if (o.arity == OperandSpec::Arity::Variadic)
      s += " (one or more)";
  }
  return s.empty() ? "no inputs" : s;
}

FailureOr<SmallVector<Value>>
GraphImporter::readOperands(const Json &node, const OpSignature &sig,
                            const std::string &path,
                            SmallVectorImpl<int32_t> &segments) {
  static const Json kEmpty = Json::array();
  const Json *inputs = member(node, "inputs");
  if (inputs && !inputs->is_array())
    return error(path + ".inputs")
           << "expected a list of value names, got " << describe(*inputs);
  const Json &list = inputs ? *inputs : kEmpty;
  bool variadic = !sig.operands.empty() &&
                  sig.operands.front().arity == OperandSpec::Arity::Variadic;
  size_t required = 0;
  for (const OperandSpec &o : sig.operands)
    required += o.arity != OperandSpec::Arity::Optional;
  if ((variadic && list.empty()) ||
      (!variadic &&
       (list.size() < required || list.size() > sig.operands.size())))
    return error(path + ".inputs")
           << "op '" << sig.op << "' takes " << describeOperands(sig)
           << "; got " << list.size() << " input"
           << (list.size() == 1 ? "" : "s");

  SmallVector<Value> operands;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string at = path + ".inputs[" + std::to_string(i) + "]";
    const OperandSpec &spec = variadic ? sig.operands.front() : sig.operands[i];
    if (list[i].is_null()) {
      if (spec.arity != OperandSpec::Arity::Optional)
        return error(at) << "operand '" << spec.name << "' of op '" << sig.op
                         << "' is required";
      segments.push_back(0);
      continue;
    }
    if (!list[i].is_string())
      return error(at) << "expected a value name or null, got "
                       << describe(list[i]);
    auto it = values.find(list[i].get<std::string>());
    if (it == values.end())
      return error(at) << "unknown value '" << list[i].get<std::string>()
                       << "' (op '" << sig.op
                       << "'): not a parameter, an input or an output of an "
                          "earlier node";
    operands.push_back(it->second.first);
    segments.push_back(1);
  }
  // Trailing optional operands may be left out of the list.
  for (size_t i = list.size(); !variadic && i < sig.operands.size(); ++i)
    segments.push_back(0);
  return operands;
}

FailureOr<SmallVector<Type>>
GraphImporter::explicitResultTypes(const Json *attrs, ArrayRef<Value> operands,
                                   const std::string &op,
                                   const std::string &path) {
  auto input = operands.empty()
                   ? RankedTensorType()
                   : cast<RankedTensorType>(operands.front().getType());
  const Json *dtype = attrs ? member(*attrs, "dtype") : nullptr;
  const Json *shape = attrs ? member(*attrs, "shape") : nullptr;
  Type element;
  if (dtype) {
    auto t = readDtype(*dtype, path + ".attrs.dtype");
    if (failed(t))
      return failure();
    element = *t;
  } else if (input && op != "cast") {
    element = input.getElementType();
  } else {
    return error(path + ".attrs.dtype")
           << "op '" << op << "' needs the result's dtype";
  }
  SmallVector<int64_t> dims;
  if (shape) {
    auto s = readShape(*shape, path + ".attrs.shape", op == "reshape");
    if (failed(s))
      return failure();
    dims = *s;
  } else if (input) {
    dims.assign(input.getShape().begin(), input.getShape().end());
  } else {
    return error(path + ".attrs.shape")
           << "op '" << op << "' needs the result's shape";
  }
  // reshape may leave one dim as -1, computed from the element count.
  if (llvm::count(dims, -1) > 1)
    return error(path + ".attrs.shape") << "at most one dim may be -1";
  if (llvm::is_contained(dims, -1)) {
    std::vector<int64_t> knownDims;
    for (int64_t d : dims)
      if (d != -1)
        knownDims.push_back(d);
    auto knownCount = mlir::llmc::staticElementCount(knownDims);
    if (!knownCount)
      return error(path + ".attrs.shape")
             << "the known dims of " << mlir::llmc::shapeToString(dims)
             << " have more elements than a 64-bit count holds";
    int64_t known = *knownCount;
    int64_t total = input.getNumElements();
    if (known == 0 || total % known != 0)
      return error(path + ".attrs.shape")
             << "cannot infer the -1 dim: " << total
             << " elements do not divide into "
             << mlir::llmc::shapeToString(dims);
    *llvm::find(dims, -1) = total / known;
  }
  return SmallVector<Type>{RankedTensorType::get(dims, element)};
}

LogicalResult GraphImporter::importNode(size_t index, const Json &node) {
  std::string path = "nodes[" + std::to_string(index) + "]";
  if (!node.is_object())
    return error(path) << "expected an object, got " << describe(node);
  for (auto it = node.begin(); it != node.end(); ++it)
    if (it.key() != "//" && it.key() != "op" && it.key() != "inputs" &&
        it.key() != "outputs" && it.key() != "attrs")
      return error(path + "." + it.key())
             << "unknown field; a node has op, inputs, outputs and attrs";

  // 1. The op.
  const Json *opJson = member(node, "op");
  if (!opJson || !opJson->is_string())
    return error(path + ".op") << "expected an op name, got "
                               << (opJson ? describe(*opJson) : "nothing");
  llvm::StringRef opRef = opJson->get_ref<const std::string &>();
  opRef.consume_front("llmc.");
  std::string op = opRef.str();
  const OpSignature *sig = lookupOpSignature(op);
  auto name = RegisteredOperationName::lookup("llmc." + op, &context);
  if (!sig || !name)
    return error(path + ".op")
           << "unknown op '" << op << "'; docs/json-format.md lists the ops";
  std::string where = " (op '" + op + "')";

  // 2. Inputs.
  SmallVector<int32_t> segments;
  auto operands = readOperands(node, *sig, path, segments);
  if (failed(operands))
    return failure();

  // 3. Attributes.
  const Json *attrs = member(node, "attrs");
  if (attrs && !attrs->is_object())
    return error(path + ".attrs")
           << "expected an object, got " << describe(*attrs);
  bool infers = name->hasInterface<InferTypeOpInterface>() && op != "constant";
  NamedAttrList namedAttrs;
  if (attrs) {
    for (auto it = attrs->begin(); it != attrs->end(); ++it) {
      std::string at = path + ".attrs." + it.key();
      if (it.key() == "//")
        continue; // a comment
      if (!infers && (it.key() == "shape" || it.key() == "dtype"))
        continue; // read with the result type
      const AttrSpec *spec = sig->findAttr(it.key());
      if (!spec) {
        InFlightDiagnostic diag = error(at)
                                  << "op '" << op << "' has no attribute '"
                                  << it.key() << "'";
        if (sig->attrs.empty() && infers)
          diag << "; it takes none";
        else
          diag << "; it has:";
        for (const AttrSpec &a : sig->attrs)
          diag << " " << a.name;
        if (!infers)
          diag << " shape dtype";
        return failure();
      }
      if (spec->kind == AttrKind::Elements)
        continue; // the constant's value, read below
      auto value = readAttr(it.value(), spec->kind, at, where);
      if (failed(value))
        return failure();
      if (*value)
        namedAttrs.append(it.key(), *value);
    }
  }
  for (const AttrSpec &a : sig->attrs)
    if (a.required && !(attrs && member(*attrs, a.name.c_str())))
      return error(path + ".attrs." + a.name)
             << "missing; op '" << op << "' needs it ("
             << describeAttrKind(a.kind) << ")";

  // Outputs: names of the results, new in the graph.
  const Json *outputs = member(node, "outputs");
  if (!outputs || !outputs->is_array() || outputs->empty())
    return error(path + ".outputs") << "expected a non-empty list of names";
  for (size_t i = 0; i < outputs->size(); ++i)
    if (!(*outputs)[i].is_string())
      return error(path + ".outputs[" + std::to_string(i) + "]")
             << "expected a name, got " << describe((*outputs)[i]);
  if (!sig->variadicResults && outputs->size() != 1)
    return error(path + ".outputs") << "op '" << op << "' has one result; "
                                    << "got " << outputs->size() << " names";

  // 4. Build, infer, verify.
  Location loc = NameLoc::get(builder.getStringAttr(path), fileLoc);
  SmallVector<Type> resultTypes;
  if (op == "constant") {
    const Json *dtype = member(*attrs, "dtype");
    Type element = builder.getF32Type();
    if (dtype) {
      auto t = readDtype(*dtype, path + ".attrs.dtype");
      if (failed(t))
        return failure();
      element = *t;
    }
    std::optional<SmallVector<int64_t>> shape;
    if (const Json *s = member(*attrs, "shape")) {
      auto dims = readShape(*s, path + ".attrs.shape");
      if (failed(dims))
        return failure();
      shape = *dims;
    }
    auto value = readElements(*member(*attrs, "value"), element,
                              shape ? std::optional<ArrayRef<int64_t>>(*shape)
                                    : std::nullopt,
                              path + ".attrs.value");
    if (failed(value))
      return failure();
    namedAttrs.set("value", *value);
    resultTypes.push_back(value->getType());
  } else if (!infers) {
    auto types = explicitResultTypes(attrs, *operands, op, path);
    if (failed(types))
      return failure();
    resultTypes = *types;
  } else {
    // Placeholders, replaced by the inferred types below: inference needs
    // the op's properties, which exist once the op does.
    resultTypes.assign(outputs->size(),
                       RankedTensorType::get({}, builder.getF32Type()));
  }
  OperationState state(loc, *name);
  state.addOperands(*operands);
  state.addAttributes(namedAttrs);
  if (sig->hasOptionalOperands() &&
      name->hasTrait<OpTrait::AttrSizedOperandSegments>())
    state.addAttribute("operandSegmentSizes",
                       builder.getDenseI32ArrayAttr(segments));
  state.addTypes(resultTypes);
  Operation *created = builder.create(state);
  auto fail = [&]() {
    created->erase();
    return failure();
  };
  if (infers) {
    SmallVector<Type> inferred;
    auto iface = cast<InferTypeOpInterface>(created);
    if (failed(iface.inferReturnTypes(&context, loc, created->getOperands(),
                                      created->getRawDictionaryAttrs(),
                                      created->getPropertiesStorage(),
                                      created->getRegions(), inferred)))
      return fail();
    if (inferred.size() != outputs->size())
      return error(path + ".outputs")
                 << "op '" << op << "' yields " << inferred.size()
                 << " results; the node names " << outputs->size(),
             fail();
    for (auto [result, type] : llvm::zip(created->getResults(), inferred))
      result.setType(type);
  }
  if (failed(verify(created)))
    return fail();
  for (size_t i = 0; i < outputs->size(); ++i)
    if (failed(defineValue((*outputs)[i].get<std::string>(),
                           created->getResult(i),
                           path + ".outputs[" + std::to_string(i) + "]")))
      return failure();
  return success();
}

} // namespace llmc::json
