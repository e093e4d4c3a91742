//===- LlmcInterfaces.h - Op interfaces of the llmc dialect -----*- C++ -*-===//
#ifndef LLMC_DIALECTS_LLMC_LLMCINTERFACES_H
#define LLMC_DIALECTS_LLMC_LLMCINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "dialects/llmc/LlmcInterfaces.h.inc"

#endif // LLMC_DIALECTS_LLMC_LLMCINTERFACES_H
