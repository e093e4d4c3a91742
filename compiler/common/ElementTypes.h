//===- ElementTypes.h - The plan's element types of MLIR types -*- C++ -*-===//
//
// One element-type vocabulary from the IR to the device: runtime/Plan.h's
// DType names what a buffer holds in the plan and the bundle, and codegen
// speaks it too (kernel parameter types, initial data, scratch buffers).
// The reference evaluator keeps its own host kinds (RefTensor's
// ElementKind: f64 and int64 values), which never reach the device.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_COMMON_ELEMENTTYPES_H
#define LLMC_COMPILER_COMMON_ELEMENTTYPES_H

#include "compiler/common/FloatFormats.h"
#include "runtime/Plan.h"

#include "mlir/IR/BuiltinTypes.h"

#include <optional>
#include <string>

namespace llmc {

/// The device element type of an MLIR element type: f32, bf16, f16, i32,
/// i64, and i1 as U8 (one byte an element); nullopt for any other.
std::optional<DType> dtypeOf(mlir::Type elementType);

/// The float format of a float DType; nullopt for the integer ones.
std::optional<FloatFormat> floatFormatOf(DType type);

/// "f32[2, 3]": a tensor type as the CLI's messages spell it (the MLIR
/// element type, then the shape), "f32[]" for a scalar.
std::string tensorTypeString(mlir::ShapedType type);

} // namespace llmc

#endif // LLMC_COMPILER_COMMON_ELEMENTTYPES_H
