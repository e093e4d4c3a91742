//===- EvalMemory.h - Host memory of the reference evaluator ----*- C++ -*-===//
//
// The evaluator holds every tensor as float64 or int64, 8 bytes an element,
// so a model that trains on a GPU can still be far too large for the host.
// Every tensor it allocates (arguments, op results) is checked here first
// (compiler/common/HostMemory.h): a step too large for the machine is an
// error naming the tensor, never std::bad_alloc (docs/limits.md).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_EVAL_EVALMEMORY_H
#define LLMC_COMPILER_EVAL_EVALMEMORY_H

#include "compiler/common/HostMemory.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <string>

namespace llmc {

/// "" when a RefTensor of `shape` fits next to `heldBytes` already held,
/// else why not (HostMemory.h, at 8 bytes an element), ready to follow the
/// tensor's name.
std::string evalAllocationError(llvm::ArrayRef<int64_t> shape,
                                int64_t heldBytes = 0);

} // namespace llmc

#endif // LLMC_COMPILER_EVAL_EVALMEMORY_H
