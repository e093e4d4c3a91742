//===- Passes.td - llmc pass declarations ------------------*- tablegen -*-===//
//
// Every llmc pass is declared in the files included below, one per group
// (raising, training IR, kernel formation), alphabetical within each. Each
// lives in passes/<DefNameWithoutPass>.cpp and is tested by
// test/lit/passes/<argument-without-llmc->.mlir.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_TD
#define LLMC_PASSES_TD

include "mlir/Pass/PassBase.td"

include "RaisePasses.td"
include "TrainingPasses.td"
include "KernelPasses.td"

#endif // LLMC_PASSES_TD
