//===- MemoryPlan.cpp - Arena offsets from live ranges --------------------===//
//
// 1. Resolve aliases to roots; widen each root's range and persistence.
// 2. Stack the persistent roots from 0 in request order.
// 3. Sort the transient roots by size (largest first; ties by definition,
//    then index, so plans are deterministic) and give each the lowest aligned
//    offset above the persistent region that clears every placed transient
//    whose live range intersects its own.
//
// Largest-first first-fit is the classic heuristic for this offline interval
// packing problem (TFLite's and XLA's arena planners use it); it is within a
// few percent of the peak live bytes on transformer graphs, where a few
// [B, T, V] buffers dominate.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/MemoryPlan.h"
#include "runtime/CheckedSize.h"

#include <algorithm>
#include <numeric>

namespace llmc::codegen {

namespace {

int64_t rootOf(const std::vector<BufferRequest> &requests, int64_t i) {
  while (requests[i].aliasOf >= 0)
    i = requests[i].aliasOf;
  return i;
}

/// Bytes from the root's start to request i's (the aliasOffsets of its chain).
uint64_t offsetInRoot(const std::vector<BufferRequest> &requests, int64_t i) {
  uint64_t offset = 0;
  for (; requests[i].aliasOf >= 0; i = requests[i].aliasOf)
    offset += requests[i].aliasOffset;
  return offset;
}

struct Placed {
  uint64_t offset, end;
  int64_t first, last;
};

} // namespace

MemoryLayout planMemory(const std::vector<BufferRequest> &requests) {
  size_t n = requests.size();
  MemoryLayout out;
  out.offsets.assign(n, 0);
  out.roots.resize(n);

  // 1. Roots with the union of their aliases' ranges.
  std::vector<BufferRequest> roots(requests);
  std::vector<bool> isRoot(n, false);
  for (size_t i = 0; i < n; ++i) {
    int64_t r = rootOf(requests, static_cast<int64_t>(i));
    out.roots[i] = r;
    isRoot[r] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    int64_t r = out.roots[i];
    if (r == static_cast<int64_t>(i))
      continue;
    BufferRequest &root = roots[r];
    root.persistent = root.persistent || requests[i].persistent;
    root.first = std::min(root.first, requests[i].first);
    root.last = std::max(root.last, requests[i].last);
    root.bytes = std::max(root.bytes, offsetInRoot(requests, int64_t(i)) +
                                          requests[i].bytes);
  }

  // No offset or sum below can wrap once every root and the persistent
  // stack stay within kMaxArenaBytes (2^40): n * 2^40 < 2^64 for any
  // realistic number of buffers, and each partial sum is checked.
  const uint64_t limit = static_cast<uint64_t>(kMaxArenaBytes);
  CheckedSize total(0);
  for (size_t i = 0; i < n; ++i) {
    if (!isRoot[i])
      continue;
    total += CheckedSize(static_cast<int64_t>(
        std::min<uint64_t>(roots[i].bytes, uint64_t(INT64_MAX))));
    out.tooLarge |= roots[i].bytes > limit;
  }
  out.neededBytes = total.approx();
  if (out.tooLarge)
    return out;

  // 2. Persistent roots, stacked.
  uint64_t next = 0;
  std::vector<size_t> transient;
  for (size_t i = 0; i < n; ++i) {
    if (!isRoot[i])
      continue;
    uint64_t bytes = std::max<uint64_t>(1, roots[i].bytes);
    out.unplannedBytes += alignUp(bytes);
    if (!roots[i].persistent) {
      transient.push_back(i);
      continue;
    }
    out.offsets[i] = next;
    next = alignUp(next + bytes);
    if (next > limit) {
      out.tooLarge = true;
      out.neededBytes = std::max(out.neededBytes, double(next));
      return out;
    }
  }
  out.persistentBytes = next;

  // 3. Transient roots: largest first, first fit.
  std::stable_sort(transient.begin(), transient.end(), [&](size_t a, size_t b) {
    if (roots[a].bytes != roots[b].bytes)
      return roots[a].bytes > roots[b].bytes;
    return roots[a].first < roots[b].first;
  });
  std::vector<Placed> placed;
  uint64_t end = next;
  for (size_t i : transient) {
    const BufferRequest &r = roots[i];
    uint64_t bytes = std::max<uint64_t>(1, r.bytes);
    std::vector<const Placed *> conflicts;
    for (const Placed &p : placed)
      if (p.first <= r.last && r.first <= p.last)
        conflicts.push_back(&p);
    std::sort(
        conflicts.begin(), conflicts.end(),
        [](const Placed *a, const Placed *b) { return a->offset < b->offset; });
    uint64_t offset = out.persistentBytes;
    for (const Placed *p : conflicts) {
      if (offset + bytes <= p->offset)
        break;
      offset = std::max(offset, alignUp(p->end));
    }
    out.offsets[i] = offset;
    placed.push_back({offset, offset + bytes, r.first, r.last});
    end = std::max(end, alignUp(offset + bytes));
    if (end > limit) {
      out.tooLarge = true;
      out.neededBytes = std::max(out.neededBytes, double(end));
      return out;
    }
  }
  out.arenaBytes = end;

  for (size_t i = 0; i < n; ++i)
    out.offsets[i] = out.offsets[out.roots[i]] +
                     offsetInRoot(requests, static_cast<int64_t>(i));
  return out;
}

/// Every root its own bytes, stacked in creation order (aliases at their
/// root's plus their offsets; what an alias aliases is an earlier request):
/// the unplanned layout.
MemoryLayout stackMemory(const std::vector<BufferRequest> &requests) {
  MemoryLayout layout;
  layout.offsets.resize(requests.size());
  layout.roots.resize(requests.size());
  uint64_t next = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    int64_t root = rootOf(requests, static_cast<int64_t>(i));
    layout.roots[i] = root;
    if (root != static_cast<int64_t>(i)) {
      layout.offsets[i] =
          layout.offsets[requests[i].aliasOf] + requests[i].aliasOffset;
      continue;
    }
    layout.offsets[i] = next;
    next = alignUp(next + std::max<uint64_t>(1, requests[i].bytes));
  }
  // Each request is within kMaxArenaBytes (2^40) and there are far fewer
  // than 2^24 of them, so the sum cannot wrap; it can pass the limit.
  if (next > static_cast<uint64_t>(kMaxArenaBytes)) {
    layout.tooLarge = true;
    layout.neededBytes = double(next);
  }
  layout.arenaBytes = layout.unplannedBytes = next;
  return layout;
}

} // namespace llmc::codegen
