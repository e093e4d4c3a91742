//===- DeviceBytes.h - Initial data as device bytes, directly ---*- C++ -*-===//
//
// The bytes a bundle stores for parameters and constants, computed without a
// detour through the reference evaluator's doubles (RefTensor): GPT-2 124M
// has 124M parameter elements, and per-element conversions through
// std::vector<double> were most of `llmc compile`'s codegen time.
//
//   - an elements attribute of a device type: its raw little-endian bytes
//     (dense_resource blobs are copied as they are; dense attributes via
//     their raw data, a splat repeated; i1 as one byte per element);
//   - llmc.init_rule "zeros", "ones", "normal(STD)": drawn from the same
//     stream as the evaluator's initialParameter (normalSampleRange), in
//     parallel chunks, rounded once to the element type, so the CPU and
//     the GPU start from bit-identical weights.
//
// Anything else (a malformed rule, a type mismatch) takes the evaluator's
// path, which produces the same bytes or the error message users see.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_DEVICEBYTES_H
#define LLMC_COMPILER_CODEGEN_DEVICEBYTES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llmc::codegen {

/// The device bytes of `attr`; nullopt with `error` set when it cannot be
/// read (an unsupported type, a resource without data).
std::optional<std::vector<uint8_t>> attrDeviceBytes(mlir::ElementsAttr attr,
                                                    std::string &error);

/// The initial device bytes of parameter argument `index` of `func`
/// (llmc.init or llmc.init_rule under `seed`); nullopt with `error` set.
std::optional<std::vector<uint8_t>>
initialParameterBytes(mlir::func::FuncOp func, unsigned index, uint64_t seed,
                      std::string &error);

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_DEVICEBYTES_H
