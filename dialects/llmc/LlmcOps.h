//===- LlmcOps.h - Ops of the llmc graph dialect ------------------*- C++ -*-===//
#ifndef LLMC_DIALECTS_LLMC_LLMCOPS_H
#define LLMC_DIALECTS_LLMC_LLMCOPS_H

#include "dialects/llmc/LlmcDialect.h"
#include "dialects/llmc/LlmcInterfaces.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/llmc/LlmcEnums.h.inc"

#define GET_OP_CLASSES
#include "dialects/llmc/LlmcOps.h.inc"

#endif // LLMC_DIALECTS_LLMC_LLMCOPS_H
