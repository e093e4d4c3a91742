//===- DeviceBytes.h - Initial data as device bytes, directly ---*- C++ -*-===//
//
// The bytes a bundle stores for parameters and constants, made without the
// reference evaluator: GPT-2 124M has 124M parameter elements, and
// per-element conversions through std::vector<double> were most of `llmc
// compile`'s codegen time. Nothing here holds a tensor's values as doubles.
//
//   - an elements attribute of a device type: its raw little-endian bytes
//     (dense_resource blobs are copied as they are, i1 blobs as 0/1 bytes;
//     dense attributes via their raw data, a splat repeated; i1 as one
//     byte per element);
//   - llmc.init_rule "zeros", "ones", "normal(STD)": drawn from the stream
//     of compiler/common/ParameterInit.h that the evaluator's
//     initialParameter draws from, in parallel chunks, each sample rounded
//     once to the element type, so the CPU and the GPU start from
//     bit-identical weights (test/unit/CodegenDeviceBytesTest.cpp).
//
// Errors (a malformed rule, a type mismatch, a blob of the wrong size) are
// the evaluator's messages, word for word.
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
/// read (an unsupported type, a resource without data or of another size).
std::optional<std::vector<uint8_t>> attrDeviceBytes(mlir::ElementsAttr attr,
                                                    std::string &error);

/// The initial device bytes of parameter argument `index` of `func`
/// (llmc.init or llmc.init_rule under `seed`); nullopt with `error` set.
std::optional<std::vector<uint8_t>>
initialParameterBytes(mlir::func::FuncOp func, unsigned index, uint64_t seed,
                      std::string &error);

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_DEVICEBYTES_H
