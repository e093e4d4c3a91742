//===- ExecutorLoad.cpp - The arena and its initial data ------------------===//
//
// checkFits and allocateArena (moved from Executor.cpp, unchanged), and the
// upload of the initial data. A warm start uploads the weights (GPT-2 124M: 500 MB, pageable: the
// driver stages each copy through pinned memory, and the source pages
// fault in from the mapped model file) and loads the modules and prepares
// cuBLASLt, which need none of them. So the copies run on up to four
// threads of their own, largest buffers first, while create() goes on;
// finishUpload() joins them (the phase "weights to the GPU (the rest)" is
// what the load did not hide). Small plans copy inline: a thread costs
// more than their bytes.
//
//===----------------------------------------------------------------------===//
#include "runtime/Executor.h"

#include "runtime/DeviceMemory.h"

#include <algorithm>
#include <cstdio>

namespace llmc {

namespace {

constexpr uint64_t kThreadedBytes = 64ull << 20;

uint64_t alignUp(uint64_t x, uint64_t alignment) {
  return (x + alignment - 1) / alignment * alignment;
}

std::string formatBytes(uint64_t bytes) {
  char text[64];
  if (bytes >= (1ull << 30))
    std::snprintf(text, sizeof(text), "%.2f GiB", bytes / double(1ull << 30));
  else
    std::snprintf(text, sizeof(text), "%.1f MiB", bytes / double(1ull << 20));
  return text;
}

} // namespace

// Out of memory before launch, never a raw CUDA error: the whole plan
// (DeviceMemory.h) against what the device has free now.
Status Executor::checkFits() {
  DeviceFacts facts;
  facts.cudnnWorkspaceBytes = cudnnWorkspaceBytes_;
  DeviceMemoryPlan need =
      planDeviceMemory(plan_, facts, moduleFootprint(plan_));
  size_t freeBytes = 0, totalBytes = 0;
  LLMC_CU(cu_->cuMemGetInfo(&freeBytes, &totalBytes), context());
  if (need.total() <= freeBytes)
    return Status::ok();
  uint64_t buffers = alignUp(plan_.arenaBytes, 256);
  uint64_t arena = buffers + plan_.workspaceBytes + cudnnWorkspaceBytes_;
  std::string cudnn = cudnnWorkspaceBytes_ > 0
                          ? " + " + formatBytes(cudnnWorkspaceBytes_) +
                                " cuDNN attention workspace"
                          : "";
  std::string message =
      "out of GPU memory: " + context() + " needs an arena of " +
      formatBytes(arena) + " (" + std::to_string(arena) +
      " bytes: " + formatBytes(buffers) + " of buffers + " +
      formatBytes(plan_.workspaceBytes) + " cuBLASLt workspace" + cudnn +
      ") and " +
      formatBytes(need.total() - arena) +
      " of other fixed costs (llmc compile lists them), " +
      formatBytes(need.total()) + " in all, but GPU " +
      std::to_string(options_.device) + " (" + deviceName_ + ") has " +
      formatBytes(freeBytes) + " free of " + formatBytes(totalBytes) + ": ";
  int64_t batch = planBatch(plan_);
  int64_t fits = batchThatFits(plan_, need, freeBytes, batch);
  if (fits > 0)
    message += "about --batch " + std::to_string(fits) +
               " fits (this plan "
               "has batch " +
               std::to_string(batch) + ")";
  else
    message += "compile with a smaller batch size or sequence length";
  return Status::error(message);
}

Status Executor::allocateArena() {
  uint64_t arenaPart = alignUp(plan_.arenaBytes, 256);
  arenaAllocated_ = arenaPart + plan_.workspaceBytes + cudnnWorkspaceBytes_;
  if (arenaAllocated_ == 0)
    arenaAllocated_ = 256;
  CUresult result = cu_->cuMemAlloc(&arena_, arenaAllocated_);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    arena_ = 0;
    size_t freeBytes = 0, totalBytes = 0;
    cu_->cuMemGetInfo(&freeBytes, &totalBytes);
    return Status::error(
        "out of GPU memory: " + context() + " needs an arena of " +
        formatBytes(arenaAllocated_) + " (" + std::to_string(arenaAllocated_) +
        " bytes: " + formatBytes(plan_.arenaBytes) + " of buffers + " +
        formatBytes(plan_.workspaceBytes) + " cuBLASLt workspace), but GPU " +
        std::to_string(options_.device) + " (" + deviceName_ + ") has " +
        formatBytes(freeBytes) + " free of " + formatBytes(totalBytes) +
        ": compile with a smaller batch size or sequence length, or enable "
        "activation checkpointing");
  }
  LLMC_CU(result, context());
  workspace_ = arena_ + arenaPart;
  cudnnWorkspace_ = workspace_ + plan_.workspaceBytes;
  // Zero everything once: optimizer state, gradients and padding start at 0.
  LLMC_CU(cu_->cuMemsetD8Async(arena_, 0, arenaAllocated_, stream_), context());
  LLMC_CU(cu_->cuStreamSynchronize(stream_), context());
  return Status::ok();
}

void Executor::startUpload() {
  upload_ = std::make_unique<Upload>();
  Upload &u = *upload_;
  uint64_t total = 0;
  for (const BufferInfo &b : plan_.buffers)
    if (b.hasInit()) {
      u.buffers.push_back(&b);
      total += b.initBytes();
    }
  std::stable_sort(u.buffers.begin(), u.buffers.end(),
                   [](const BufferInfo *x, const BufferInfo *y) {
                     return x->initBytes() > y->initBytes();
                   });
  u.statuses.assign(u.buffers.size(), Status::ok());
  // Each thread makes the context current for itself: the driver's current
  // context is per thread.
  auto work = [this, &u] {
    CUresult r = cu_->cuCtxSetCurrent(context_);
    for (size_t i = u.next++; i < u.buffers.size(); i = u.next++) {
      const BufferInfo &b = *u.buffers[i];
      if (r == CUDA_SUCCESS)
        r = cu_->cuMemcpyHtoD(arena_ + b.offset, b.initData(), b.initBytes());
      if (r != CUDA_SUCCESS)
        u.statuses[i] = cuda::driverError(
            r, "cuMemcpyHtoD", __FILE__, __LINE__,
            "initial data of buffer '" + b.name + "' in " + context());
    }
  };
  if (total < kThreadedBytes) {
    work();
    return;
  }
  unsigned threads = std::min<unsigned>(
      4, std::max(1u, std::thread::hardware_concurrency()));
  for (unsigned t = 0; t < threads && t < u.buffers.size(); ++t)
    u.threads.emplace_back(work);
}

Status Executor::finishUpload() {
  if (!upload_)
    return Status::error("finishUpload before startUpload in " + context());
  std::unique_ptr<Upload> u = std::move(upload_);
  for (std::thread &t : u->threads)
    t.join();
  u->threads.clear();
  for (const Status &s : u->statuses)
    LLMC_RETURN_IF_ERROR(s);
  for (const ScalarSlot &slot : plan_.scalars)
    LLMC_RETURN_IF_ERROR(setScalar(slot.name, slot.init));
  LLMC_CU(cu_->cuStreamSynchronize(stream_), context());
  // Initial data is on the GPU now; the host copy is not needed again.
  for (BufferInfo &buffer : plan_.buffers) {
    std::vector<uint8_t>().swap(buffer.init);
    buffer.initView.reset();
  }
  return Status::ok();
}

} // namespace llmc
