//===- LlmcDialect.h - The llmc graph dialect ---------------------*- C++ -*-===//
#ifndef LLMC_DIALECTS_LLMC_LLMCDIALECT_H
#define LLMC_DIALECTS_LLMC_LLMCDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/llmc/LlmcDialect.h.inc"

#endif // LLMC_DIALECTS_LLMC_LLMCDIALECT_H
