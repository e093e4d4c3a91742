//===- Passes.td - llmc pass declarations ------------------*- tablegen -*-===//
//
// Every llmc pass is declared here, grouped under banners and alphabetical
// within each group. Each one lives in passes/<DefNameWithoutPass>.cpp and is
// tested by test/lit/passes/<argument-without-llmc->.mlir.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_TD
#define LLMC_PASSES_TD

include "mlir/Pass/PassBase.td"

#endif // LLMC_PASSES_TD
