//===- FusionExplain.h - What was fused, and why not the rest ---*- C++ -*-===//
//
// `llmc compile --explain` and `--explain-json FILE` (docs/fusion.md): every
// llmc.kernel group of the lowered function in launch order, its kind and
// its members with their ONNX node names (the importer's NameLocs), and for
// each value it reads from another group where a fusion rule could have
// applied, why it did not. The reasons come from the predicates the fusion
// passes decide by (passes/FusionUtils.h), so they cannot disagree.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_FUSIONEXPLAIN_H
#define LLMC_COMPILER_FUSIONEXPLAIN_H

#include "compiler/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace llmc {

struct FusionExplanation {
  std::string text;
  std::string json; // one JSON document
};

FusionExplanation explainFusion(mlir::func::FuncOp func,
                                const FusionConfig &fusion);

} // namespace llmc

#endif // LLMC_COMPILER_FUSIONEXPLAIN_H
