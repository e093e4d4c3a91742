//===- AttrTensors.h - RefTensors from MLIR elements attributes ---*- C++
//-*-===//
//
// Converts the values of `llmc.constant` and of parameters' `llmc.init`
// (DenseElementsAttr, or DenseResourceElementsAttr whose blob holds the raw
// little-endian element bytes) into RefTensors.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_EVAL_ATTRTENSORS_H
#define LLMC_COMPILER_EVAL_ATTRTENSORS_H

#include "compiler/eval/RefTensor.h"

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/Location.h"

#include <string>

namespace llmc {

/// The tensor `attr` holds. On failure (an unsupported attribute or element
/// type, a blob of the wrong size, a released blob), `error` says why.
std::optional<RefTensor> tensorFromAttr(mlir::ElementsAttr attr,
                                        std::string &error);

} // namespace llmc

#endif // LLMC_COMPILER_EVAL_ATTRTENSORS_H
