//===- DeviceTensors.h - RefTensors as device bytes and back ----*- C++ -*-===//
//
// The reference evaluator's host tensors and the bytes a device buffer
// holds (runtime/Plan.h's DType: f32, bf16 and f16 bits, i32, i64, i1 as one
// byte): what the GPU tests and `llmc verify --device cuda` write into
// buffers and compare results with. Codegen never sees a RefTensor; its
// initial data comes from compiler/codegen/DeviceBytes.h.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_EVAL_DEVICETENSORS_H
#define LLMC_COMPILER_EVAL_DEVICETENSORS_H

#include "compiler/eval/RefTensor.h"

#include <cstdint>
#include <vector>

namespace llmc {

/// Bytes of one element of `kind` in memory: 8 for f64 and i64, 4 for f32
/// and i32, 2 for f16 and bf16, 1 for f8 and i1 (resource blobs store
/// elements so too).
size_t elementBytes(ElementKind kind);

/// A tensor's bytes as the device stores it (f32, bf16 and f16 bits, i32,
/// i64, i1 as one byte); f64 and f8 tensors, which never reach the device,
/// give zero bytes.
std::vector<uint8_t> toDeviceBytes(const RefTensor &t);

/// The tensor of `kind` and `shape` whose device bytes are `bytes`.
RefTensor fromDeviceBytes(const std::vector<uint8_t> &bytes, ElementKind kind,
                          std::vector<int64_t> shape);

} // namespace llmc

#endif // LLMC_COMPILER_EVAL_DEVICETENSORS_H
