//===- LlmcInterfaces.h - Op interfaces of the llmc dialect -----*- C++ -*-===//
#ifndef LLMC_DIALECTS_LLMC_LLMCINTERFACES_H
#define LLMC_DIALECTS_LLMC_LLMCINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "dialects/llmc/LlmcInterfaces.h.inc"

namespace mlir::llmc {

/// Llmc_ReadsElementwise (LlmcInterfaces.td): a marker, nothing to verify.
template <typename ConcreteType>
class ReadsElementwise
    : public ::mlir::OpTrait::TraitBase<ConcreteType, ReadsElementwise> {};

} // namespace mlir::llmc

#endif // LLMC_DIALECTS_LLMC_LLMCINTERFACES_H
