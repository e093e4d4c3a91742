//===- FloatFormats.h - Rounding to the narrow float formats ------*- C++
//-*-===//
//
// The reference evaluator computes in double and rounds each op's result to
// the op's declared element type; codegen rounds initial weights and
// constants to the device's types. These helpers do both, for f32,
// f16, bf16, f8E4M3FN and f8E5M2 (IEEE round-to-nearest, ties to even), and
// convert between the formats and their bit patterns (to read bf16/f16 data
// from files). They use only the C++ standard library, so the runtime can
// reuse them.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_COMMON_FLOATFORMATS_H
#define LLMC_COMPILER_COMMON_FLOATFORMATS_H

#include <cstdint>

namespace llmc {

/// The float formats of the llmc dialect, plus f64.
enum class FloatFormat { F64, F32, F16, BF16, F8E4M3FN, F8E5M2 };

/// Rounds `x` to the nearest value of `format` (ties to even). Overflow
/// gives +-inf, except for f8E4M3FN, which has no infinity: there values
/// whose rounding exceeds 448, and infinities, become NaN (as in PyTorch and
/// APFloat). NaN stays NaN; the sign of zero is kept; subnormals are kept.
double roundToFormat(double x, FloatFormat format);

/// The bit pattern of `x` rounded to a 16-bit format (F16 or BF16) or an
/// 8-bit one (F8E4M3FN, F8E5M2). NaN encodes as the format's quiet NaN.
uint32_t floatToBits(double x, FloatFormat format);

/// The value of a bit pattern of a 16- or 8-bit format (F16, BF16, F8*), or
/// of F32 (the 32 bits of a float).
double bitsToFloat(uint32_t bits, FloatFormat format);

/// `x` rounded to f32 and then to TF32 (10 mantissa bits, f32's range) as
/// a TF32 tensor-core GEMM reads an f32 operand: to nearest, ties away from
/// zero (PTX cvt.rna.tf32.f32; cuBLAS turns 1024.5 into 1025, where ties to
/// even and truncation both give 1024: docs/precision.md). Subnormals,
/// infinities and NaN pass through the same bit arithmetic (a carry out of
/// the largest binade gives inf).
double roundToTf32(double x);

/// Largest finite value of `format`.
double maxFinite(FloatFormat format);

} // namespace llmc

#endif // LLMC_COMPILER_COMMON_FLOATFORMATS_H
