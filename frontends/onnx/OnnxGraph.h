//===- OnnxGraph.h - Importer state shared by the op handlers ----*- C++ -*-===//
//
// GraphImporter walks an ONNX graph in order and keeps, for every ONNX value
// name, an ImportValue: either a constant the importer knows (TensorData), an
// MLIR value computed at run time, or a sequence of those (SplitToSequence).
// OnnxNode is what an op handler sees of one node: its inputs, attributes,
// location, and helpers that build llmc ops without aborting on a shape
// mismatch (the error names the node instead).
//
// Op handlers live in OnnxElementwise.cpp, OnnxShapeOps.cpp and
// OnnxNNOps.cpp; each file registers its handlers by op type.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_FRONTENDS_ONNX_ONNXGRAPH_H
#define LLMC_FRONTENDS_ONNX_ONNXGRAPH_H

#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxTensor.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/StringMap.h"

#include <memory>

namespace onnx {
class ModelProto;
class NodeProto;
class AttributeProto;
class GraphProto;
} // namespace onnx

namespace llmc::onnximport {

struct TorchMetadata;

/// One ONNX value as the importer knows it.
struct ImportValue {
  /// The run-time value; for a constant, its llmc.constant once some op
  /// needed it as an operand (materialized once, then reused).
  mlir::Value value;
  /// The value when the importer knows it.
  std::shared_ptr<const TensorData> constant;
  /// The elements of an ONNX sequence (SplitToSequence).
  std::shared_ptr<std::vector<ImportValue>> sequence;

  static ImportValue of(mlir::Value v) {
    ImportValue iv;
    iv.value = v;
    return iv;
  }
  static ImportValue of(TensorData t) {
    ImportValue iv;
    iv.constant = std::make_shared<const TensorData>(std::move(t));
    return iv;
  }
  bool isConstant() const { return constant != nullptr; }
  bool isSequence() const { return sequence != nullptr; }
};

/// The llmc element type of an ONNX one; failure for types llmc lacks.
mlir::FailureOr<mlir::Type> llmcElementType(DType type, mlir::MLIRContext *ctx);
/// The ONNX type of an llmc element type.
DType dtypeOf(mlir::Type type);
/// An ElementsAttr holding `t`: dense<> up to `resourceThreshold` elements,
/// a dense_resource blob named `blobName` above it. Fails for element types
/// llmc lacks.
mlir::FailureOr<mlir::ElementsAttr>
toElementsAttr(const TensorData &t, mlir::MLIRContext *ctx,
               llvm::StringRef blobName, int64_t resourceThreshold = 16);

/// The shortest decimal that reads back as `f`, as a double (1e-5f gives
/// 1e-05, not 9.9999997473787516e-06): what an exporter wrote in f32.
double shortestDouble(float f);

class GraphImporter;

class OnnxNode {
public:
  OnnxNode(GraphImporter &graph, const onnx::NodeProto &proto,
           llvm::StringRef name, mlir::Location loc);

  GraphImporter &graph;
  const onnx::NodeProto &proto;
  mlir::Location loc;
  mlir::OpBuilder &b;

  llvm::StringRef name() const { return nodeName; }
  llvm::StringRef opType() const;
  int64_t opset() const;
  const OnnxImportOptions &options() const;

  //===-------------------------------------------------------------------===//
  // Inputs. Absent optional inputs have the empty name.
  //===-------------------------------------------------------------------===//
  unsigned numInputs() const;
  bool hasInput(unsigned i) const;
  llvm::StringRef inputName(unsigned i) const;
  const ImportValue &input(unsigned i) const;
  /// The input's value when known at import time, else nullptr.
  const TensorData *constant(unsigned i) const;
  /// The input's value, or an error saying that `role` ("shape", "axes")
  /// must be known at import time.
  mlir::FailureOr<const TensorData *> requireConstant(unsigned i,
                                                      llvm::StringRef role);
  /// The input as an MLIR value (constants are materialized).
  /// requireConstant for a one-element tensor (Range bounds, Trilu's k).
  mlir::FailureOr<const TensorData *> requireScalar(unsigned i,
                                                    llvm::StringRef role);
  mlir::FailureOr<mlir::Value> value(unsigned i);
  DType dtype(unsigned i) const;
  llvm::SmallVector<int64_t> shape(unsigned i) const;
  int64_t rank(unsigned i) const { return shape(i).size(); }
  /// Fails (naming the unbound dim symbols) unless the input's shape is
  /// static; `why` says what needed it.
  mlir::LogicalResult requireStaticShape(unsigned i, llvm::StringRef why);

  //===-------------------------------------------------------------------===//
  // Attributes
  //===-------------------------------------------------------------------===//
  const onnx::AttributeProto *attr(llvm::StringRef name) const;
  int64_t getInt(llvm::StringRef name, int64_t dflt) const;
  float getFloat(llvm::StringRef name, float dflt) const;
  /// A float attribute as the shortest double that rounds to it (1e-05,
  /// not 9.9999997473787516e-06), for f64 attributes such as epsilon.
  double getFloatAsDouble(llvm::StringRef name, float dflt) const;
  std::string getString(llvm::StringRef name, llvm::StringRef dflt) const;
  std::optional<std::vector<int64_t>> getInts(llvm::StringRef name) const;

  //===-------------------------------------------------------------------===//
  // Outputs
  //===-------------------------------------------------------------------===//
  unsigned numOutputs() const;
  /// True when output `i` exists and some node or the graph reads it.
  bool outputUsed(unsigned i) const;
  void setOutput(unsigned i, ImportValue v);
  void setOutput(unsigned i, mlir::Value v) { setOutput(i, ImportValue::of(v)); }
  void setOutput(unsigned i, TensorData t) {
    setOutput(i, ImportValue::of(std::move(t)));
  }

  //===-------------------------------------------------------------------===//
  // Helpers for handlers
  //===-------------------------------------------------------------------===//
  /// An error that starts with "node 'NAME' (OP): ".
  mlir::InFlightDiagnostic emitError() const;
  /// Reports an evaluation error of the constant evaluator.
  mlir::LogicalResult evalError(llvm::Error err) const;
  /// True when a constant result of this shape is small enough to evaluate
  /// at import time (OnnxImportOptions::foldLimit).
  bool canFold(llvm::ArrayRef<int64_t> shape) const;
  /// Normalizes an ONNX axis, or reports it as out of range.
  mlir::FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                         llvm::StringRef what = "axis") const;
  /// Materializes a constant as an llmc.constant at this node.
  mlir::FailureOr<mlir::Value> constantValue(const TensorData &t);
  /// A constant of `type` with every element `v`.
  mlir::Value splat(mlir::RankedTensorType type, double v);
  /// A rank-0 constant of `elementType` holding `v`.
  mlir::Value scalar(mlir::Type elementType, double v) {
    return splat(mlir::RankedTensorType::get({}, elementType), v);
  }
  /// llmc.reshape to `shape` (no op when the type already matches).
  mlir::Value reshape(mlir::Value v, llvm::ArrayRef<int64_t> shape);
  /// llmc.cast to `elementType` (no op when it already has it).
  mlir::Value cast(mlir::Value v, mlir::Type elementType);

  /// Builds OpTy after running its type inference; a shape or type mismatch
  /// becomes an error on this node instead of an abort.
  template <typename OpTy>
  mlir::FailureOr<mlir::Operation *>
  createOp(mlir::ValueRange operands,
           llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
    mlir::MLIRContext *ctx = b.getContext();
    auto dict = mlir::DictionaryAttr::get(ctx, attrs);
    llvm::SmallVector<mlir::Type> types;
    std::string message;
    mlir::LogicalResult inferred = mlir::failure();
    {
      mlir::ScopedDiagnosticHandler capture(ctx, [&](mlir::Diagnostic &d) {
        message = d.str();
        return mlir::success();
      });
      if constexpr (OpTy::hasProperties()) {
        typename OpTy::Properties props;
        if (mlir::succeeded(OpTy::setPropertiesFromAttr(
                props, dict, [&] { return mlir::emitError(loc); })))
          inferred = OpTy::inferReturnTypes(ctx, loc, operands, dict,
                                            mlir::OpaqueProperties(&props),
                                            {}, types);
      } else {
        inferred = OpTy::inferReturnTypes(ctx, loc, operands, dict,
                                          mlir::OpaqueProperties(nullptr), {},
                                          types);
      }
    }
    if (mlir::failed(inferred)) {
      emitError() << "cannot be imported: " << message;
      return mlir::failure();
    }
    return b.create<OpTy>(loc, types, operands, attrs).getOperation();
  }
  template <typename OpTy>
  mlir::FailureOr<mlir::Value>
  create(mlir::ValueRange operands,
         llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
    auto op = createOp<OpTy>(operands, attrs);
    if (mlir::failed(op))
      return mlir::failure();
    return (*op)->getResult(0);
  }

private:
  std::string nodeName;
};

using OpHandler = mlir::LogicalResult (*)(OnnxNode &node);
using OpRegistry = llvm::StringMap<OpHandler>;

/// Every handler, by op type (default domain).
const OpRegistry &opHandlers();
void registerElementwiseOps(OpRegistry &registry);
void registerShapeOps(OpRegistry &registry);
void registerIndexOps(OpRegistry &registry);
void registerNNOps(OpRegistry &registry);
void registerDecomposedOps(OpRegistry &registry);
void registerEinsumOp(OpRegistry &registry);

/// The oldest opset from which llmc reads an op as it reads opset 13's, and
/// what the op's version before it does that llmc does not read ("" when
/// ONNX added the op in that opset).
struct OldestOpset {
  int64_t opset;
  const char *why;
};
OldestOpset oldestOpset(llvm::StringRef op);
/// oldestOpset's `why` for an op missing from its table (read from 13).
extern const char *const kUnclassified;

/// Softmax, LogSoftmax and Hardmax before opset 13 coerce their input to
/// 2-D at `axis` (default 1) and normalize the rows; from 13 they normalize
/// along `axis` (default -1). The axis to normalize along, and when the
/// old form is not already along the last dim, `x` reshaped to those rows
/// (`rows`; the caller reshapes the result back to x's shape).
struct SoftmaxAxis {
  mlir::Value x;
  int64_t axis;
  bool rows;
};
mlir::FailureOr<SoftmaxAxis> softmaxAxis(OnnxNode &n, mlir::Value x);

/// The sorted, normalized axes of a ReduceX node (an input from opset 18, an
/// attribute before; empty = all); std::nullopt when the node reduces
/// nothing (noop_with_empty_axes, or a rank-0 input).
mlir::FailureOr<std::optional<std::vector<int64_t>>> reduceAxes(OnnxNode &n);

/// Sets LayerNormalization's outputs 1 (Mean) and 2 (InvStdDev) where the
/// graph reads them, computed from `x` over dims axis..<rank.
mlir::LogicalResult layerNormStatistics(OnnxNode &n, mlir::Value x,
                                        int64_t axis, double epsilon);

/// A symbolic dim of a graph input that the options did not bind.
struct UnboundDim {
  std::string input, symbol; // symbol is "" when the model names none
  int64_t dim;
};

class GraphImporter {
public:
  GraphImporter(const onnx::ModelProto &model, llvm::StringRef path,
                const OnnxImportOptions &options, mlir::MLIRContext &ctx);

  /// Builds the module; null after emitting errors.
  mlir::OwningOpRef<mlir::ModuleOp> run();

  const onnx::ModelProto &model;
  std::string path, baseDir;
  const OnnxImportOptions &options;
  mlir::MLIRContext &ctx;
  mlir::OpBuilder builder;
  int64_t opsetVersion = 0;
  llvm::StringMap<ImportValue> values;
  /// How many nodes and graph outputs read each value name.
  llvm::StringMap<int> useCounts;
  std::vector<UnboundDim> unbound;
  /// The nodes that use an initializer as a LayerNormalization scale or
  /// bias: more than one means the exporter merged parameters.
  llvm::StringMap<std::vector<std::string>> normParamUses;
  /// Initializers the exporter's optimizer folded from parameters, in
  /// initializer order, with those parameters.
  std::vector<std::pair<std::string, std::vector<std::string>>> foldedParams;
  llvm::StringMap<bool> initializerNames;
  /// Training-mode Dropout nodes so far: each gets its own offset in the
  /// dropout RNG's counter.
  int64_t dropoutSites = 0;

  mlir::Location fileLoc();
  mlir::Location nameLoc(llvm::StringRef name);
  /// " pass --shape batch=VALUE ..." when dims are unbound, else "".
  std::string unboundHint() const;
  mlir::FailureOr<mlir::Value> materialize(ImportValue &v, mlir::Location loc,
                                           llvm::StringRef name);

private:
  mlir::LogicalResult bindDims(llvm::StringMap<int64_t> &bound);
  mlir::LogicalResult importNode(const onnx::NodeProto &node, int index);
  /// Every value name is defined once: by one initializer, graph input or
  /// node output. Reports the second definition.
  mlir::LogicalResult checkSingleDefinitions();
  void warnSharedNormParams();
  /// Warns about parameters the exporter's optimizer folded into copies
  /// (foldedParams) or merged away (in the signature, gone from the graph).
  void warnFoldedParams(const TorchMetadata &torch);
};

} // namespace llmc::onnximport

#endif // LLMC_FRONTENDS_ONNX_ONNXGRAPH_H
