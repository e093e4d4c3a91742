//===- GraphImporter.h - State of one JSON graph import ---------*- C++ -*-===//
//
// Internal to the JSON frontend. The import walks the graph once, top to
// bottom: dims, parameters and inputs (the function arguments), nodes in list
// order (each input must name a value defined above it), then outputs.
// Every check reports the JSON path of the offending field.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_FRONTENDS_JSON_GRAPHIMPORTER_H
#define LLMC_FRONTENDS_JSON_GRAPHIMPORTER_H

#include "frontends/json/Json.h"
#include "frontends/json/JsonImporter.h"
#include "frontends/json/OpSignatures.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"

namespace llmc::json {

class GraphImporter {
public:
  GraphImporter(mlir::MLIRContext &context, const JsonImportOptions &options,
                std::string sourceName);

  mlir::OwningOpRef<mlir::ModuleOp> run(const Json &root);

private:
  // Messages (GraphImporter.cpp). `path` is the JSON path of the field.
  mlir::InFlightDiagnostic error(const std::string &path);

  // Graph level (GraphImporter.cpp).
  mlir::LogicalResult checkHeader(const Json &root);
  mlir::LogicalResult readDims(const Json &root);
  mlir::LogicalResult
  readArguments(const Json &root, llvm::SmallVectorImpl<mlir::Type> &types,
                llvm::SmallVectorImpl<mlir::DictionaryAttr> &attrs,
                std::vector<std::string> &names);
  mlir::FailureOr<mlir::DictionaryAttr>
  readParameter(const Json &param, const std::string &path,
                mlir::RankedTensorType type);
  mlir::FailureOr<mlir::Attribute>
  readSafetensorsInit(const Json &init, const std::string &path,
                      mlir::RankedTensorType type);
  mlir::LogicalResult defineValue(const std::string &name, mlir::Value value,
                                  const std::string &path);

  // Types and values (JsonTypes.cpp).
  mlir::FailureOr<mlir::Type> readDtype(const Json &value,
                                        const std::string &path);
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  readShape(const Json &value, const std::string &path,
            bool allowInferred = false);
  mlir::FailureOr<int64_t> readDim(const Json &value, const std::string &path,
                                   bool allowInferred = false);
  /// `suffix` names the op in messages: " (op 'concat')".
  mlir::FailureOr<mlir::Attribute> readAttr(const Json &value, AttrKind kind,
                                            const std::string &path,
                                            const std::string &suffix);
  mlir::FailureOr<mlir::DenseElementsAttr>
  readElements(const Json &value, mlir::Type elementType,
               std::optional<llvm::ArrayRef<int64_t>> shape,
               const std::string &path);

  // Nodes (JsonNodes.cpp).
  mlir::LogicalResult importNode(size_t index, const Json &node);
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  readOperands(const Json &node, const OpSignature &sig,
               const std::string &path,
               llvm::SmallVectorImpl<int32_t> &segments);
  mlir::FailureOr<llvm::SmallVector<mlir::Type>>
  explicitResultTypes(const Json *attrs, llvm::ArrayRef<mlir::Value> operands,
                      const std::string &op, const std::string &path);

  mlir::MLIRContext &context;
  const JsonImportOptions &options;
  std::string sourceName;
  mlir::OpBuilder builder;
  mlir::Location fileLoc;
  DimBindings dims;
  /// Every named value: arguments and node outputs, with where it was
  /// defined ("parameters[2]", "nodes[5]") for duplicate-name messages.
  llvm::StringMap<std::pair<mlir::Value, std::string>> values;
};

} // namespace llmc::json

#endif // LLMC_FRONTENDS_JSON_GRAPHIMPORTER_H
