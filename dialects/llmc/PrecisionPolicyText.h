//===- PrecisionPolicyText.h - Names and reasons of the classes -*- C++ -*-===//
//
// What `llmc compile --explain` prints for an op's PrecisionPolicyOpInterface
// class (docs/precision.md): its name and why an op of that class computes
// in the type it does. By class, never by op kind: the op's interface
// decides the class, the class carries the reason.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_LLMC_PRECISIONPOLICYTEXT_H
#define LLMC_DIALECTS_LLMC_PRECISIONPOLICYTEXT_H

#include "dialects/llmc/LlmcInterfaces.h"

namespace mlir::llmc {

/// The class's name as docs/precision.md spells it ("Fp32Norm").
const char *precisionPolicyName(PrecisionPolicy p);

/// Why an op of class `p` computes in the type the class gives it
/// (autocast's lists and their reasons).
const char *precisionPolicyReason(PrecisionPolicy p);

} // namespace mlir::llmc

#endif // LLMC_DIALECTS_LLMC_PRECISIONPOLICYTEXT_H
