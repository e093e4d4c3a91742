//===- LlmcInterfaces.h - Op interfaces of the llmc dialect -----*- C++ -*-===//
#ifndef LLMC_DIALECTS_LLMC_LLMCINTERFACES_H
#define LLMC_DIALECTS_LLMC_LLMCINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

namespace mlir::llmc {

/// The precision classes of PrecisionPolicyOpInterface (docs/precision.md).
enum class PrecisionPolicy {
  Follow,        // the widest of the dimensioned float operands' types
  LowerOperands, // matmul, attention: low-type operands and result
  Fp32Norm,      // layer_norm, rms_norm
  Fp32Softmax,   // softmax, log_softmax
  Fp32Loss,      // cross_entropy
  Fp32Reduction, // reduce_sum, reduce_mean
  Fp32Math,      // exp, log, pow, rsqrt, reciprocal (autocast's fp32 list)
  Explicit,      // cast: its result type is the point
};

/// True for the Fp32* classes.
inline bool isFp32Policy(PrecisionPolicy p) {
  return p != PrecisionPolicy::Follow && p != PrecisionPolicy::LowerOperands &&
         p != PrecisionPolicy::Explicit;
}

/// One dim of one value: what llmc-pad-shapes pads (PaddableOpInterface).
struct PadTie {
  Value value;
  int64_t dim;
};

} // namespace mlir::llmc

#include "dialects/llmc/LlmcInterfaces.h.inc"

namespace mlir::llmc {

/// Llmc_ReadsElementwise (LlmcInterfaces.td): a marker, nothing to verify.
template <typename ConcreteType>
class ReadsElementwise
    : public ::mlir::OpTrait::TraitBase<ConcreteType, ReadsElementwise> {};

} // namespace mlir::llmc

#endif // LLMC_DIALECTS_LLMC_LLMCINTERFACES_H
