//===- ExecutorAttention.h - The executor's cuDNN attention steps -*- C++ -*-===//
//
// Per attention step (Plan.h's AttentionStep): the finalized cuDNN plan,
// shared by steps that differ only in their buffers (a model's layers),
// and the step's device pointers once the arena is placed. Executor.h only
// forward-declares this, so that its includers do not parse cuDNN's header.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_EXECUTORATTENTION_H
#define LLMC_RUNTIME_EXECUTORATTENTION_H

#include "runtime/CudnnAttention.h"

#include <memory>
#include <vector>

namespace llmc {

struct PreparedAttention {
  std::vector<std::shared_ptr<CudnnAttention>> plans; // per step, or null
  std::vector<CudnnAttentionArgs> args;               // per step
  size_t distinct = 0;  // plans finalized
  size_t fromCache = 0; // of them, restored from the cache
};

} // namespace llmc

#endif // LLMC_RUNTIME_EXECUTORATTENTION_H
