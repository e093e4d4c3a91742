//===- EvalMemory.h - Host memory of the reference evaluator ----*- C++ -*-===//
//
// The evaluator holds every tensor as float64 or int64, 8 bytes an element,
// so a model that trains on a GPU can still be far too large for the host.
// Every tensor it allocates (arguments, op results) is checked here first:
// a step too large for the machine is an error naming the tensor, never
// std::bad_alloc (docs/limits.md).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_EVAL_EVALMEMORY_H
#define LLMC_COMPILER_EVAL_EVALMEMORY_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <string>

namespace llmc {

/// The host memory the evaluator may hold at once, in bytes: the machine's
/// physical memory, or LLMC_EVAL_MEMORY_LIMIT when set to an integer
/// (tests use it to be independent of the machine).
int64_t evalMemoryLimit();

/// "" when a tensor of `shape` fits next to `heldBytes` already held, else
/// why not, ready to follow the tensor's name: "has shape [300000, 300000]
/// (90000000000 elements, 671 GiB as float64 on the host), more than the
/// 23.5 GiB of host memory llmc may use; ...". The compiler holds initial
/// parameter values the same way, so it checks them here too.
std::string evalAllocationError(llvm::ArrayRef<int64_t> shape,
                                int64_t heldBytes = 0);

/// The same check for a host buffer of `elementBytes` per element (the
/// compiler's initial parameter bytes, in the device's element type).
std::string hostAllocationError(llvm::ArrayRef<int64_t> shape,
                                int64_t elementBytes, int64_t heldBytes = 0);

} // namespace llmc

#endif // LLMC_COMPILER_EVAL_EVALMEMORY_H
