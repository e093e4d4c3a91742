//===- DeviceMemory.h - What a plan takes on the GPU, by name ---*- C++ -*-===//
//
// The memory report printed before a step runs (`llmc compile`, `llmc
// train --device cuda`): the arena the compiler planned plus every fixed
// cost the runtime adds around it, each by name, and their total. It is
// what `cuMemGetInfo` should show the executor taking, from just before
// Executor::create to just after the first replay, on a context that
// already existed (the context itself is the driver's, and the same for any
// plan): `test/gpu/train/MemoryPlanGpuTest.cpp` compares the two.
//
// Items (docs/memory.md):
//   arena buffers        the planned buffers (MemoryPlan.h), 256-aligned
//   scalar slots         lr, step, loss: one 256-byte slot each, in the arena
//   cuBLASLt workspace   plan.workspaceBytes, after the arena, same cuMemAlloc
//   cuDNN workspace      after cuBLASLt's, same cuMemAlloc: the largest
//                        attention plan's, modelled from the plan's
//                        attention steps (modelCudnnWorkspace) until
//                        the executor has made the plans
//   allocation rounding  that one cuMemAlloc rounds up to 2 MiB pages
//   modules              the loaded cubins (code, constants, globals)
//   local memory         per-thread local memory above the context's stack
//                        reserve, for every resident thread of every SM
//   CUDA graph           the instantiated graph, per node
//   cuBLASLt library     the handle and the library kernels its calls load
//   input staging        0: the batch is copied from host memory straight
//                        into its arena buffer (no device staging buffer)
//
// Arena, slots, workspace and rounding are exact; the others are the
// driver's and cuBLASLt's, modelled by the constants in DeviceMemory.cpp
// that the GPU test measures. What only a loaded executor knows (the GPU's
// SM count, the kernels' local memory) is in DeviceFacts; without it
// (`llmc compile` on a machine without a GPU) local memory is reported as
// unknown and counted as 0.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_DEVICEMEMORY_H
#define LLMC_RUNTIME_DEVICEMEMORY_H

#include "runtime/Plan.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llmc {

/// What the device and the loaded kernels add to the plan's own numbers.
struct DeviceFacts {
  bool loaded = false;              // the fields below are known
  uint64_t localBytesPerThread = 0; // largest over the plan's kernels
  uint64_t stackBytesPerThread = 0; // the context's CU_LIMIT_STACK_SIZE
  uint64_t residentThreads = 0;     // SMs * max threads per SM
  // The largest cuDNN attention plan's workspace (ExecutorAttention.cpp),
  // known once the plans are finalized, before the arena is allocated;
  // unset, the report models it (modelCudnnWorkspace).
  std::optional<uint64_t> cudnnWorkspaceBytes;
};

struct DeviceMemoryItem {
  std::string name;
  uint64_t bytes = 0;
  std::string note; // how the number was found ("exact", "model: ...")
};

/// What cuMemGetInfo can show for a plan, counted in the driver's 2 MiB
/// pages. The arena's one cuMemAlloc takes exactly its rounded size. The
/// driver places the other items (modules, local memory, the graph, the
/// cuBLASLt library) in pages of its own pools, which the context or an
/// earlier item may already have opened with room to spare: each costs
/// between nothing and its bytes rounded up to whole pages. So the device
/// shows one value in [low, high], a different one from call to call (the
/// tiny GPT measured 36 and 42 MiB for 40.91 planned, in [34, 42]).
struct DevicePageBounds {
  uint64_t low = 0, high = 0;
};

struct DeviceMemoryPlan {
  std::vector<DeviceMemoryItem> items;
  uint64_t total() const;
  /// The interval the device's page counting can show for this plan.
  DevicePageBounds pageBounds() const;
  /// The bytes of the item `name` (0 when absent).
  uint64_t bytesOf(const std::string &name) const;
};

/// 2 MiB: the page cuMemAlloc rounds to and cuMemGetInfo counts in.
constexpr uint64_t kDevicePageBytes = 2ull << 20;

/// The report for `plan` (its kernels' cubins must still be in it: call
/// before the executor drops them, or pass `moduleBytes` measured earlier;
/// ~0 means "sum the plan's cubins").
DeviceMemoryPlan planDeviceMemory(const Plan &plan, const DeviceFacts &facts,
                                  uint64_t moduleBytes = ~uint64_t(0));

/// The modelled device bytes of the plan's cubins (what "modules" reports).
uint64_t moduleFootprint(const Plan &plan);

/// The workspace the executor will allocate for the plan's cuDNN attention
/// steps: the largest step's modelledWorkspaceBytes (CudnnAttention.h),
/// 256-aligned as Executor::prepareAttention rounds it; 0 bytes and no
/// step without any.
struct CudnnWorkspaceModel {
  uint64_t bytes = 0;
  const AttentionStep *largest = nullptr; // the step that needs them
};
CudnnWorkspaceModel modelCudnnWorkspace(const Plan &plan);

/// The largest batch below `batch` whose plan would fit in `freeBytes`,
/// assuming (as the memory planner's layout makes nearly true) that the
/// fixed costs and the persistent buffers (parameters, gradients,
/// optimizer state, inputs, outputs, constants) stay and the transient
/// part of the arena and the cuDNN workspace (every term of it is
/// per sequence) scale with the batch; 0 when not even batch 1 fits.
int64_t batchThatFits(const Plan &plan, const DeviceMemoryPlan &memory,
                      uint64_t freeBytes, int64_t batch);

/// The batch of a training or eval plan: dim 0 of its first integer rank-2
/// input buffer (the token ids, runtime/PlanStepEngine.h); 0 when none.
int64_t planBatch(const Plan &plan);

/// One line per item and a total line, each starting with `prefix`.
std::string formatDeviceMemory(const DeviceMemoryPlan &plan,
                               const std::string &prefix = "  ");

/// "1.63 MiB", "5.80 GiB".
std::string formatMemoryBytes(uint64_t bytes);

} // namespace llmc

#endif // LLMC_RUNTIME_DEVICEMEMORY_H
