//===- HostMemory.h - Host memory llmc may hold at once ---------*- C++ -*-===//
//
// A model that trains on a GPU can still be too large for the host: the
// reference evaluator holds every tensor as 8-byte values, and the compiler
// holds each parameter's initial bytes before the bundle is written. Both
// check a buffer here before allocating it, so that a step too large for
// the machine is an error naming the tensor, never std::bad_alloc
// (docs/limits.md).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_COMMON_HOSTMEMORY_H
#define LLMC_COMPILER_COMMON_HOSTMEMORY_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <string>

namespace llmc {

/// The host memory llmc may hold at once, in bytes: the machine's physical
/// memory, or LLMC_EVAL_MEMORY_LIMIT when set to an integer (tests use it
/// to be independent of the machine).
int64_t hostMemoryLimit();

/// "" when a buffer of `shape` with `elementBytes` per element fits next to
/// `heldBytes` already held, else why not, ready to follow the tensor's
/// name: "has shape [300000, 300000] (90000000000 elements, 671 GiB as
/// float64 on the host), more than the 23.5 GiB of host memory llmc may
/// use; ..." (" as float64" for 8-byte elements, the evaluator's).
std::string hostAllocationError(llvm::ArrayRef<int64_t> shape,
                                int64_t elementBytes, int64_t heldBytes = 0);

} // namespace llmc

#endif // LLMC_COMPILER_COMMON_HOSTMEMORY_H
