//===- MemoryPlan.h - Arena offsets from live ranges ------------*- C++ -*-===//
//
// The memory planner of docs/codegen.md §2, free of MLIR so that it is
// tested on synthetic live ranges. Each request is one buffer:
//
//   - persistent: lives for the whole step and across steps (parameters,
//     gradients, optimizer state, inputs, outputs, constants); these are
//     stacked first, in request order, from offset 0;
//   - transient: lives over [first, last] in program positions (inclusive);
//     placed after the persistent region, largest first, at the lowest
//     256-byte aligned offset that overlaps no placed buffer whose range
//     intersects its own (greedy first fit);
//   - an alias of another request: shares its root's offset, or starts
//     `aliasOffset` bytes into the request it aliases (a contiguous slice
//     read in place, compiler/codegen/SliceViews.h). The root's range
//     grows to cover the alias's, and a persistent alias makes its root
//     persistent (a reshape of a parameter, an in-place update).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_MEMORYPLAN_H
#define LLMC_COMPILER_CODEGEN_MEMORYPLAN_H

#include <cstdint>
#include <vector>

namespace llmc::codegen {

struct BufferRequest {
  uint64_t bytes = 0;
  bool persistent = false;
  int64_t first = 0, last = 0; // transient: positions of definition, last use
  int64_t aliasOf = -1;        // index of another request, or -1
  uint64_t aliasOffset = 0;    // alias: bytes into aliasOf's
};

struct MemoryLayout {
  std::vector<uint64_t> offsets; // per request (aliases: their root's plus
                                 // their aliasOffsets along the chain)
  std::vector<int64_t> roots;    // per request: the request owning the bytes
  uint64_t persistentBytes = 0;  // [0, persistentBytes): persistent buffers
  uint64_t arenaBytes = 0;       // end of the last buffer, aligned
  uint64_t unplannedBytes = 0;   // what one buffer per root would take
  /// The arena would pass kMaxArenaBytes (runtime/CheckedSize.h): the
  /// offsets are then meaningless, and `neededBytes` says about how much
  /// the step asked for (a lower bound once a sum overflows).
  bool tooLarge = false;
  double neededBytes = 0;
};

constexpr uint64_t kBufferAlignment = 256;

inline uint64_t alignUp(uint64_t n, uint64_t alignment = kBufferAlignment) {
  return (n + alignment - 1) / alignment * alignment;
}

/// Places every request. Alias chains must end at a non-alias (no cycles);
/// requests of 0 bytes get 1 so that every buffer has an address of its own.
/// Every offset and sum is checked: an arena past kMaxArenaBytes sets
/// `tooLarge` instead of wrapping.
MemoryLayout planMemory(const std::vector<BufferRequest> &requests);

/// Every root its own bytes, stacked in request order, aliases inside their
/// roots (the unplanned layout: every value keeps its buffer).
MemoryLayout stackMemory(const std::vector<BufferRequest> &requests);

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_MEMORYPLAN_H
