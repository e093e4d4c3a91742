//===- OnnxNode.cpp - One node as an op handler sees it -------------------===//
//
// Inputs, attributes, outputs and the small builders every handler uses.
// Errors start with "node 'NAME' (OP_TYPE): " so that the user can find the
// node in a model viewer.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"
#include "frontends/onnx/OnnxSizes.h"
#include "frontends/onnx/onnx.pb.h"

#include "dialects/llmc/LlmcOps.h"
#include "runtime/CheckedSize.h"

#include "llvm/ADT/STLExtras.h"

#include <cstdio>
#include <cstdlib>

using namespace mlir;

namespace llmc::onnximport {

OnnxNode::OnnxNode(GraphImporter &graph, const onnx::NodeProto &proto,
                   llvm::StringRef name, Location loc)
    : graph(graph), proto(proto), loc(loc), b(graph.builder),
      nodeName(name.str()) {}

llvm::StringRef OnnxNode::opType() const { return proto.op_type(); }
int64_t OnnxNode::opset() const { return graph.opsetVersion; }
const OnnxImportOptions &OnnxNode::options() const { return graph.options; }

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

unsigned OnnxNode::numInputs() const { return proto.input_size(); }

bool OnnxNode::hasInput(unsigned i) const {
  return i < numInputs() && !proto.input(i).empty();
}

llvm::StringRef OnnxNode::inputName(unsigned i) const {
  return i < numInputs() ? llvm::StringRef(proto.input(i)) : "";
}

const ImportValue &OnnxNode::input(unsigned i) const {
  // An absent input reads as an empty value: handlers then fail on its
  // missing shape or through value()/requireConstant(), never crash.
  static const ImportValue absent;
  if (!hasInput(i))
    return absent;
  // GraphImporter::importNode checked that every named input is defined.
  return graph.values.find(proto.input(i))->second;
}

const TensorData *OnnxNode::constant(unsigned i) const {
  if (!hasInput(i))
    return nullptr;
  return input(i).constant.get();
}

FailureOr<const TensorData *> OnnxNode::requireConstant(unsigned i,
                                                        llvm::StringRef role) {
  if (const TensorData *t = constant(i))
    return t;
  if (!hasInput(i)) {
    emitError() << "needs input " << i << " (the " << role << ")";
    return failure();
  }
  emitError() << "cannot infer the " << role << " (input " << i << ", '"
              << inputName(i)
              << "'): llmc needs it at import time, but it is computed at "
                 "run time"
              << (graph.unbound.empty()
                      ? " from data, not from shapes"
                      : graph.unboundHint());
  return failure();
}

FailureOr<const TensorData *> OnnxNode::requireScalar(unsigned i,
                                                      llvm::StringRef role) {
  auto t = requireConstant(i, role);
  if (succeeded(t) && (*t)->numElements() != 1) {
    emitError() << "the " << role << " (input " << i << ") must have one "
                << "element, it has " << (*t)->numElements();
    return failure();
  }
  return t;
}

FailureOr<Value> OnnxNode::value(unsigned i) {
  if (!hasInput(i)) {
    emitError() << "needs input " << i;
    return failure();
  }
  auto &iv = graph.values.find(proto.input(i))->second;
  return graph.materialize(iv, loc, proto.input(i));
}

DType OnnxNode::dtype(unsigned i) const {
  const ImportValue &iv = input(i);
  if (iv.isConstant())
    return iv.constant->dtype();
  if (iv.value)
    return dtypeOf(mlir::cast<ShapedType>(iv.value.getType()).getElementType());
  return DType::Undefined;
}

SmallVector<int64_t> OnnxNode::shape(unsigned i) const {
  const ImportValue &iv = input(i);
  if (iv.isConstant())
    return SmallVector<int64_t>(iv.constant->shape());
  if (iv.value)
    return SmallVector<int64_t>(
        mlir::cast<ShapedType>(iv.value.getType()).getShape());
  return {};
}

LogicalResult OnnxNode::requireStaticShape(unsigned i, llvm::StringRef why) {
  SmallVector<int64_t> s = shape(i);
  if (llvm::none_of(s, ShapedType::isDynamic))
    return success();
  std::string dims;
  for (int64_t d : s)
    dims += (dims.empty() ? "" : ", ") +
            (ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d));
  return emitError() << "cannot infer a shape: " << why << " needs the shape "
                     << "of '" << inputName(i) << "', which is [" << dims
                     << "]" << graph.unboundHint();
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

const onnx::AttributeProto *OnnxNode::attr(llvm::StringRef name) const {
  for (const onnx::AttributeProto &a : proto.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t OnnxNode::getInt(llvm::StringRef name, int64_t dflt) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->i() : dflt;
}

float OnnxNode::getFloat(llvm::StringRef name, float dflt) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->f() : dflt;
}

double OnnxNode::getFloatAsDouble(llvm::StringRef name, float dflt) const {
  return shortestDouble(getFloat(name, dflt));
}

double shortestDouble(float f) {
  // The double nearest to 1e-5f is 9.9999997473787516e-06. Take the
  // shortest decimal that reads back as the same float instead, which is
  // what the exporter wrote (1e-05).
  char buf[32];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, double(f));
    double d = std::strtod(buf, nullptr);
    if (static_cast<float>(d) == f)
      return d;
  }
  return f;
}

std::string OnnxNode::getString(llvm::StringRef name,
                                llvm::StringRef dflt) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->s() : dflt.str();
}

std::optional<std::vector<int64_t>>
OnnxNode::getInts(llvm::StringRef name) const {
  const onnx::AttributeProto *a = attr(name);
  if (!a)
    return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

//===----------------------------------------------------------------------===//
// Outputs
//===----------------------------------------------------------------------===//

unsigned OnnxNode::numOutputs() const { return proto.output_size(); }

bool OnnxNode::outputUsed(unsigned i) const {
  if (i >= numOutputs() || proto.output(i).empty())
    return false;
  return graph.useCounts.lookup(proto.output(i)) > 0;
}

void OnnxNode::setOutput(unsigned i, ImportValue v) {
  if (i < numOutputs() && !proto.output(i).empty())
    graph.values[proto.output(i)] = std::move(v);
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

InFlightDiagnostic OnnxNode::emitError() const {
  InFlightDiagnostic diag = mlir::emitError(loc);
  diag << "node '" << nodeName << "' (" << opType() << "): ";
  return diag;
}

LogicalResult OnnxNode::evalError(llvm::Error err) const {
  return emitError() << llvm::toString(std::move(err));
}

bool OnnxNode::canFold(llvm::ArrayRef<int64_t> shape) const {
  return ::llmc::elementCount(shape).fitsIn(options().foldLimit);
}

LogicalResult checkResultSize(const OnnxNode &n, llvm::ArrayRef<int64_t> shape,
                              int64_t elementBytes, llvm::StringRef what) {
  std::string why = ::llmc::tensorSizeError(shape, elementBytes);
  if (why.empty())
    return success();
  return n.emitError() << what << " " << why;
}

FailureOr<int64_t> OnnxNode::normalizeAxis(int64_t axis, int64_t rank,
                                           llvm::StringRef what) const {
  if (axis < -rank || axis >= rank) {
    emitError() << what << " " << axis << " is out of range for rank " << rank;
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

FailureOr<Value> OnnxNode::constantValue(const TensorData &t) {
  ImportValue iv = ImportValue::of(t);
  return graph.materialize(iv, loc, nodeName);
}

Value OnnxNode::splat(RankedTensorType type, double v) {
  Type elementType = type.getElementType();
  Attribute attr;
  if (auto ft = dyn_cast<FloatType>(elementType)) {
    APFloat f(v);
    bool lost;
    f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    attr = DenseElementsAttr::get(type, f);
  } else if (elementType.isInteger(1)) {
    attr = DenseElementsAttr::get(type, v != 0);
  } else {
    // A fuzzed model's 9.2e18 found the undefined conversion here.
    attr = DenseElementsAttr::get(
        type, APInt(elementType.getIntOrFloatBitWidth(),
                    static_cast<uint64_t>(saturatingInt64(v)), true));
  }
  return b.create<mlir::llmc::ConstantOp>(loc, mlir::cast<ElementsAttr>(attr));
}

Value OnnxNode::reshape(Value v, llvm::ArrayRef<int64_t> shape) {
  auto type = mlir::cast<RankedTensorType>(v.getType());
  if (type.getShape() == shape)
    return v;
  return b.create<mlir::llmc::ReshapeOp>(loc, type.clone(shape), v);
}

Value OnnxNode::cast(Value v, Type elementType) {
  auto type = mlir::cast<RankedTensorType>(v.getType());
  if (type.getElementType() == elementType)
    return v;
  return b.create<mlir::llmc::CastOp>(loc, type.clone(elementType), v);
}

} // namespace llmc::onnximport
