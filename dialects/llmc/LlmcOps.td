//===- LlmcOps.td - All ops of the llmc dialect ------------*- tablegen -*-===//
//
// The op definitions live in one file per family; this file only gathers them
// for the single -gen-op-decls/-gen-op-defs run.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_OPS_TD
#define LLMC_OPS_TD

include "dialects/llmc/LlmcDialect.td"
include "dialects/llmc/LlmcAttrs.td"
include "dialects/llmc/LlmcInterfaces.td"
include "dialects/llmc/LlmcElementwiseOps.td"
include "dialects/llmc/LlmcShapeOps.td"
include "dialects/llmc/LlmcNNOps.td"
include "dialects/llmc/LlmcGradOps.td"
include "dialects/llmc/LlmcKernelOps.td"

#endif // LLMC_OPS_TD
