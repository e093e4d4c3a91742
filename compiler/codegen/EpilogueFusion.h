//===- EpilogueFusion.h - Bias adds fused into matmul epilogues -*- C++ -*-===//
//
// The backend's first fusion, a peephole over a lowered function's kernel
// groups rather than an IR pass:
//
//   add(matmul(x, w), b) => matmul(x, w) + bias b    (one cuBLASLt call)
//
// The matmul's MatmulStep adds b in cuBLASLt's BIAS epilogue
// (LoweredOp::bias); the add emits nothing and its result is the matmul's
// buffer (an Alias of the matmul result's operand). It lives here because
// the op set has no matmul-with-bias op for a pass to produce, while the
// runtime already has the epilogue; the fusion pass (docs/codegen.md,
// step 1) can subsume it.
//
// Both plan builders read the decision from the LoweredFunction, so the
// unplanned and the planned plan launch the same steps.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_EPILOGUEFUSION_H
#define LLMC_COMPILER_CODEGEN_EPILOGUEFUSION_H

#include "compiler/codegen/FunctionLowering.h"

namespace llmc::codegen {

/// Fuses every add of `f` that qualifies (EpilogueFusion.cpp lists the
/// conditions; anything else stays as it is). Returns how many it fused.
unsigned fuseBiasEpilogues(LoweredFunction &f);

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_EPILOGUEFUSION_H
