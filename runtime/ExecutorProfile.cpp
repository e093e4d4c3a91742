//===- ExecutorProfile.cpp - A graph replay timed launch by launch --------===//
//
// `llmc train --profile/--breakdown/--trace` (docs/trainer.md): the step's
// launch sequence captured a second time, with an event-record node
// (CU_EVENT_RECORD_EXTERNAL: recorded by the graph, not used for capture
// dependencies) before and after each launch. Replaying it gives, on the
// GPU's clock, when each kernel or cuBLASLt call started and ended inside a
// graph replay, so the launch gaps are the graph's own. The event nodes cost
// a little: docs/trainer.md compares the two graphs' replay times.
//
// CUPTI activity records would give the same without extra nodes, but CUPTI
// is not among the libraries the runtime loads (runtime/CudaApi.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/Executor.h"

#include <chrono>

namespace llmc {

void Executor::destroyProfiled() {
  if (profExec_)
    cu_->cuGraphExecDestroy(profExec_);
  if (profGraph_)
    cu_->cuGraphDestroy(profGraph_);
  for (CUevent e : profEvents_)
    if (e)
      cu_->cuEventDestroy(e);
  profExec_ = nullptr;
  profGraph_ = nullptr;
  profEvents_.clear();
}

Status Executor::captureProfiled() {
  if (profExec_)
    return Status::ok();
  LLMC_CU(cu_->cuCtxSetCurrent(context_), context());
  size_t n = plan_.steps.size();
  profEvents_.assign(2 * n + 2, nullptr);
  for (CUevent &e : profEvents_)
    LLMC_CU(cu_->cuEventCreate(&e, CU_EVENT_DEFAULT), context());
  std::string ctx = "capturing the profiled CUDA graph of " + context();
  LLMC_CU(
      cu_->cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
      ctx);
  Status enqueued = Status::ok();
  for (size_t i = 0; i < n && enqueued; ++i) {
    CUresult r = cu_->cuEventRecordWithFlags(profEvents_[2 * i], stream_,
                                             CU_EVENT_RECORD_EXTERNAL);
    if (r == CUDA_SUCCESS)
      enqueued = enqueueStep(i);
    if (r == CUDA_SUCCESS && enqueued)
      r = cu_->cuEventRecordWithFlags(profEvents_[2 * i + 1], stream_,
                                      CU_EVENT_RECORD_EXTERNAL);
    if (r != CUDA_SUCCESS)
      enqueued = cuda::driverError(r, "cuEventRecordWithFlags", __FILE__,
                                   __LINE__, stepContext(i));
  }
  // End the capture on every path, or the stream stays unusable.
  CUgraph graph = nullptr;
  CUresult ended = cu_->cuStreamEndCapture(stream_, &graph);
  if (!enqueued) {
    if (graph)
      cu_->cuGraphDestroy(graph);
    return enqueued.withContext(ctx);
  }
  LLMC_CU(ended, ctx);
  profGraph_ = graph;
  LLMC_CU(cu_->cuGraphInstantiate(&profExec_, profGraph_, 0), ctx);
  return Status::ok();
}

Status Executor::replayProfiled(GpuTimeline &timeline) {
  Status captured = captureProfiled();
  if (!captured) {
    destroyProfiled();
    return captured;
  }
  size_t n = plan_.steps.size();
  CUevent before = profEvents_[2 * n], after = profEvents_[2 * n + 1];
  // The loss is read with a copy of its own after this replay (this graph
  // has no mirror node).
  mirrorCurrent_ = false;
  LLMC_CU(cu_->cuEventRecord(before, stream_), context());
  auto t0 = std::chrono::steady_clock::now();
  LLMC_CU(cu_->cuGraphLaunch(profExec_, stream_),
          "replaying the profiled CUDA graph of " + context());
  auto t1 = std::chrono::steady_clock::now();
  LLMC_CU(cu_->cuEventRecord(after, stream_), context());
  LLMC_CU(cu_->cuEventSynchronize(after),
          "profiling " + context() + " (a kernel fault surfaces here)");
  auto t2 = std::chrono::steady_clock::now();
  timeline.launchCallMs =
      std::chrono::duration<double, std::milli>(t1 - t0).count();
  timeline.startMs.assign(n, 0.0f);
  timeline.endMs.assign(n, 0.0f);
  for (size_t i = 0; i < n; ++i) {
    LLMC_CU(cu_->cuEventElapsedTime(&timeline.startMs[i], before,
                                    profEvents_[2 * i]),
            stepContext(i));
    LLMC_CU(cu_->cuEventElapsedTime(&timeline.endMs[i], before,
                                    profEvents_[2 * i + 1]),
            stepContext(i));
  }
  LLMC_CU(cu_->cuEventElapsedTime(&timeline.graphEndMs, before, after),
          context());
  timeline.profilingMs = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - t2)
                             .count();
  return Status::ok();
}

} // namespace llmc
