//===- OpSignatures.h - How JSON nodes map onto llmc ops --------*- C++ -*-===//
//
// MLIR builds an op generically from an OperationState, but it cannot tell at
// run time which operands are optional, which attributes are required, or
// what an attribute's kind is. This table says so for every llmc op, so that
// the importer can check a node before it builds anything and report
// "nodes[3].attrs.axis: expected an integer" instead of crashing in an
// accessor. A unit test checks the table against the registered ops, so a
// new op without an entry fails the build's tests, not a user.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_FRONTENDS_JSON_OPSIGNATURES_H
#define LLMC_FRONTENDS_JSON_OPSIGNATURES_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace llmc::json {

/// How a JSON attribute value maps onto an MLIR attribute.
enum class AttrKind {
  Int,               // JSON integer or dim name -> i64 IntegerAttr
  Float,             // JSON number -> f64 FloatAttr
  Unit,              // JSON bool -> UnitAttr present / absent
  IntList,           // list of integers or dim names -> DenseI64ArrayAttr
  GeluApproximation, // "erf" | "tanh"
  ComparePredicate,  // "eq" | "ne" | "lt" | "le" | "gt" | "ge"
  LossReduction,     // "mean" | "sum" | "none"
  Elements,          // constant value: number, bool or nested list
};

struct OperandSpec {
  enum class Arity { One, Optional, Variadic };
  std::string name;
  Arity arity = Arity::One;
};

struct AttrSpec {
  std::string name;
  AttrKind kind;
  bool required;
};

struct OpSignature {
  std::string op; // mnemonic without the "llmc." prefix
  std::vector<OperandSpec> operands;
  std::vector<AttrSpec> attrs;
  bool variadicResults = false;

  const AttrSpec *findAttr(llvm::StringRef name) const;
  /// Optional operands before the last one need a placeholder (null) in the
  /// node's input list; with AttrSizedOperandSegments the op needs sizes.
  bool hasOptionalOperands() const;
};

/// Every op the JSON format can express, by mnemonic.
const std::vector<OpSignature> &opSignatures();
const OpSignature *lookupOpSignature(llvm::StringRef op);

/// The kind of an attribute name; attribute names mean the same thing in
/// every op that has them (axis, epsilon, causal, ...).
std::optional<AttrKind> attrKindOf(llvm::StringRef name);

/// What a value of `kind` looks like, for messages: "an integer",
/// "one of \"erf\", \"tanh\"", ...
std::string describeAttrKind(AttrKind kind);

/// The accepted spellings of an enum kind, in enum order.
std::vector<std::string> enumSpellings(AttrKind kind);

} // namespace llmc::json

#endif // LLMC_FRONTENDS_JSON_OPSIGNATURES_H
