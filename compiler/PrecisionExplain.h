//===- PrecisionExplain.h - Every op's precision, and why -------*- C++ -*-===//
//
// `llmc compile --explain` and `--explain-json FILE` (docs/precision.md,
// "--explain"): each op of the lowered @forward in program order with the
// type it computes in, its PrecisionPolicyOpInterface class and the reason,
// as llmc-lower-precision decided them (its `explain` option records them,
// so the printout cannot disagree with the pass). The backward inherits
// these types through autodiff and is not listed.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_PRECISIONEXPLAIN_H
#define LLMC_COMPILER_PRECISIONEXPLAIN_H

#include "compiler/Train.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace llmc {

struct PrecisionExplanation {
  std::string text;
  std::string json; // one JSON object
};

/// Explains `precision` for `module`, a loaded model before the pipeline;
/// the module is not changed (the forward passes run on a copy).
PrecisionExplanation explainPrecision(mlir::ModuleOp module,
                                      const PrecisionConfig &precision);

} // namespace llmc

#endif // LLMC_COMPILER_PRECISIONEXPLAIN_H
