//===- DeviceMemory.cpp - What a plan takes on the GPU, by name -----------===//
//
// The exact items come from the plan; the driver's and cuBLASLt's costs are
// modelled by the constants below, each named for what
// MemoryPlanGpuTest measures (it prints the measured and planned figures per
// stage of loading, so a new driver that changes one shows which).
//
//===----------------------------------------------------------------------===//
#include "runtime/DeviceMemory.h"

#include "runtime/PlanAttention.h"

#include <algorithm>
#include <cstdio>

namespace llmc {
namespace {

uint64_t roundUp(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

// A loaded module's code, constant banks and globals, per module: the cubin
// is an upper bound of what it places on the device (it also holds symbols
// and debug-free ELF headers), rounded to the driver's module granularity.
constexpr uint64_t kModuleAlignment = 64ull << 10;
// An instantiated graph keeps each node's launch parameters on the device.
constexpr uint64_t kGraphBytesPerNode = 1ull << 10;
// The cuBLASLt handle and the library kernels a plan's calls load lazily
// (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2). Measured by
// MemoryPlanGpuTest on an H100 (driver 580, CUDA 13): the first replay took
// one more 2 MiB page for the tiny GPT and none for GPT-2 124M (whose
// arena's page rounding had room), so 2 MiB, not the 8 first guessed.
constexpr uint64_t kCublasLtLibraryBytes = 2ull << 20;
// Each scalar slot is its own 256-byte aligned request (PlanBuilder).
constexpr uint64_t kScalarSlotBytes = 256;

} // namespace

uint64_t moduleFootprint(const Plan &plan) {
  uint64_t bytes = 0;
  for (const KernelInfo &k : plan.kernels)
    bytes += roundUp(k.cubin.size(), kModuleAlignment);
  return bytes;
}

CudnnWorkspaceModel modelCudnnWorkspace(const Plan &plan) {
  CudnnWorkspaceModel m;
  for (const Step &s : plan.steps) {
    const auto *step = std::get_if<AttentionStep>(&s.op);
    if (!step)
      continue;
    uint64_t bytes = roundUp(modelledWorkspaceBytes(attentionDesc(*step)), 256);
    if (!m.largest || bytes > m.bytes)
      m = {bytes, step};
  }
  return m;
}

uint64_t DeviceMemoryPlan::total() const {
  uint64_t sum = 0;
  for (const DeviceMemoryItem &item : items)
    sum += item.bytes;
  return sum;
}

DevicePageBounds DeviceMemoryPlan::pageBounds() const {
  DevicePageBounds b;
  for (const DeviceMemoryItem &item : items) {
    // The arena's allocation: buffers, slots, workspace and its rounding
    // add up to whole pages, taken whatever the pools hold.
    bool allocated = item.name == "arena buffers" ||
                     item.name == "scalar slots" ||
                     item.name == "cuBLASLt workspace" ||
                     item.name == "cuDNN workspace" ||
                     item.name == "allocation rounding";
    if (allocated) {
      b.low += item.bytes;
      b.high += item.bytes;
    } else {
      b.high += roundUp(item.bytes, kDevicePageBytes);
    }
  }
  return b;
}

uint64_t DeviceMemoryPlan::bytesOf(const std::string &name) const {
  for (const DeviceMemoryItem &item : items)
    if (item.name == name)
      return item.bytes;
  return 0;
}

std::string formatMemoryBytes(uint64_t bytes) {
  char text[64];
  if (bytes == 0)
    return "0 bytes";
  if (bytes >= (1ull << 30))
    std::snprintf(text, sizeof text, "%.2f GiB", bytes / double(1ull << 30));
  else if (bytes >= (1ull << 20))
    std::snprintf(text, sizeof text, "%.2f MiB", bytes / double(1ull << 20));
  else
    std::snprintf(text, sizeof text, "%.2f KiB", bytes / 1024.0);
  return text;
}

DeviceMemoryPlan planDeviceMemory(const Plan &plan, const DeviceFacts &facts,
                                  uint64_t moduleBytes) {
  DeviceMemoryPlan out;
  auto add = [&](const char *name, uint64_t bytes, std::string note) {
    out.items.push_back({name, bytes, std::move(note)});
  };
  uint64_t arena = roundUp(plan.arenaBytes, 256);
  uint64_t slots = plan.scalars.size() * kScalarSlotBytes;
  if (slots > arena)
    slots = arena;
  add("arena buffers", arena - slots,
      std::to_string(plan.buffers.size()) + " buffers, planned");
  add("scalar slots", slots,
      std::to_string(plan.scalars.size()) + " slots of 256 bytes");
  add("cuBLASLt workspace", plan.workspaceBytes, "after the arena");
  CudnnWorkspaceModel modelled = modelCudnnWorkspace(plan);
  uint64_t cudnn = facts.cudnnWorkspaceBytes.value_or(modelled.bytes);
  if (modelled.largest) {
    const AttentionStep &step = *modelled.largest;
    std::string what = describe(attentionDesc(step)) +
                       (step.backward && step.deterministic
                            ? ": its dP (2 bytes a score) and f32 row sums"
                        : step.backward ? ": f32 row sums and dQ accumulator"
                                        : "");
    add("cuDNN workspace", cudnn,
        facts.cudnnWorkspaceBytes
            ? "after cuBLASLt's, the largest attention plan's; modelled " +
                  formatMemoryBytes(modelled.bytes)
            : "modelled: " + what);
  }
  // The executor's one cuMemAlloc (Executor::allocateArena).
  uint64_t allocation = arena + plan.workspaceBytes + cudnn;
  if (allocation == 0)
    allocation = 256;
  add("allocation rounding", roundUp(allocation, kDevicePageBytes) - allocation,
      "the arena's cuMemAlloc in 2 MiB pages");

  uint64_t modules = moduleBytes;
  if (moduleBytes == ~uint64_t(0))
    modules = moduleFootprint(plan);
  add("modules", modules,
      std::to_string(plan.kernels.size()) + " cubins, 64 KiB granules");

  if (facts.loaded) {
    uint64_t extra = facts.localBytesPerThread > facts.stackBytesPerThread
                         ? facts.localBytesPerThread - facts.stackBytesPerThread
                         : 0;
    add("local memory", extra * facts.residentThreads,
        std::to_string(facts.localBytesPerThread) + " bytes/thread at most, " +
            std::to_string(facts.stackBytesPerThread) +
            " reserved with the context");
  } else {
    add("local memory", 0, "known when loaded on a GPU");
  }

  bool matmuls = false;
  for (const Step &s : plan.steps)
    matmuls |= std::holds_alternative<MatmulStep>(s.op);
  add("CUDA graph", roundUp(plan.steps.size() * kGraphBytesPerNode, 256),
      std::to_string(plan.steps.size()) + " nodes");
  add("cuBLASLt library", matmuls ? kCublasLtLibraryBytes : 0,
      matmuls ? "handle and lazily loaded kernels" : "no cuBLASLt call");
  add("input staging", 0, "batches are copied straight into the arena");
  return out;
}

int64_t batchThatFits(const Plan &plan, const DeviceMemoryPlan &memory,
                      uint64_t freeBytes, int64_t batch) {
  uint64_t persistent = 0;
  for (const BufferInfo &b : plan.buffers) {
    bool stays = b.role == BufferRole::Param || b.role == BufferRole::Grad ||
                 b.role == BufferRole::OptimizerState ||
                 b.role == BufferRole::Input || b.role == BufferRole::Output ||
                 b.hasInit();
    if (stays)
      persistent += roundUp(b.bytes, 256);
  }
  uint64_t arena = roundUp(plan.arenaBytes, 256);
  // The cuDNN workspace is per sequence like the activations (dP is b * h *
  // t * t scores): at B 256 it is 6 GiB, at B 240 a sixteenth less.
  uint64_t cudnn = memory.bytesOf("cuDNN workspace");
  uint64_t scaled = arena + cudnn;
  uint64_t fixed = memory.total() > scaled ? memory.total() - scaled : 0;
  uint64_t transient = arena > persistent ? arena - persistent + cudnn : cudnn;
  if (batch <= 1 || transient == 0 || freeBytes <= fixed + persistent)
    return 0;
  double fits = double(batch) * double(freeBytes - fixed - persistent) /
                double(transient);
  return std::min<int64_t>(batch - 1, static_cast<int64_t>(fits));
}

int64_t planBatch(const Plan &plan) {
  for (const BufferInfo &b : plan.buffers)
    if (b.role == BufferRole::Input && b.shape.size() == 2 &&
        (b.dtype == DType::I32 || b.dtype == DType::I64))
      return b.shape[0];
  return 0;
}

std::string formatDeviceMemory(const DeviceMemoryPlan &plan,
                               const std::string &prefix) {
  std::string s;
  char buf[256];
  for (const DeviceMemoryItem &item : plan.items) {
    std::snprintf(buf, sizeof buf, "%s%-20s %12s  (%s)\n", prefix.c_str(),
                  item.name.c_str(), formatMemoryBytes(item.bytes).c_str(),
                  item.note.c_str());
    s += buf;
  }
  uint64_t total = plan.total();
  std::snprintf(buf, sizeof buf, "%s%-20s %12s  (%llu bytes)\n", prefix.c_str(),
                "total", formatMemoryBytes(total).c_str(),
                static_cast<unsigned long long>(total));
  s += buf;
  DevicePageBounds pages = plan.pageBounds();
  std::snprintf(buf, sizeof buf,
                "%s%-20s %12s to %s  (cuMemGetInfo's 2 MiB pages: the driver "
                "may fit modules, graph and library in pages it holds)\n",
                prefix.c_str(), "on the device",
                formatMemoryBytes(pages.low).c_str(),
                formatMemoryBytes(pages.high).c_str());
  s += buf;
  return s;
}

} // namespace llmc
