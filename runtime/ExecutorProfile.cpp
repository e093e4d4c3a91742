//===- ExecutorProfile.cpp - Launches timed one by one --------------------===//
//
// `llmc train --profile/--breakdown/--trace` (docs/trainer.md): the step's
// launch sequence captured a second time (captureSequence, shared with the
// step's own graph in ExecutorGraph.cpp), with an event-record node
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

namespace llmc {

Status Executor::runProfiled(std::vector<float> &stepMs) {
  mirrorCurrent_ = false;
  LLMC_CU(cu_->cuCtxSetCurrent(context_), context());
  LLMC_RETURN_IF_ERROR(useStream(stream_));
  tailIsReplay_ = false;
  std::vector<CUevent> events(plan_.steps.size() + 1, nullptr);
  auto destroy = [&] {
    for (CUevent e : events)
      if (e)
        cu_->cuEventDestroy(e);
  };
  auto run = [&]() -> Status {
    for (CUevent &e : events)
      LLMC_CU(cu_->cuEventCreate(&e, CU_EVENT_DEFAULT), context());
    LLMC_CU(cu_->cuEventRecord(events[0], stream_), context());
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
      LLMC_RETURN_IF_ERROR(enqueueStep(i));
      LLMC_CU(cu_->cuEventRecord(events[i + 1], stream_), stepContext(i));
    }
    LLMC_CU(cu_->cuEventSynchronize(events.back()),
            "profiling " + context() + " (a kernel fault surfaces here)");
    stepMs.assign(plan_.steps.size(), 0.0f);
    for (size_t i = 0; i < plan_.steps.size(); ++i)
      LLMC_CU(cu_->cuEventElapsedTime(&stepMs[i], events[i], events[i + 1]),
              stepContext(i));
    return Status::ok();
  };
  Status s = run();
  destroy();
  return s;
}

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

Status Executor::prepareProfiled() {
  if (profExec_)
    return Status::ok();
  Status captured = captureProfiled();
  if (!captured)
    destroyProfiled();
  return captured;
}

Status Executor::captureProfiled() {
  LLMC_CU(cu_->cuCtxSetCurrent(context_), context());
  size_t n = plan_.steps.size();
  profEvents_.assign(2 * n + 2, nullptr);
  for (CUevent &e : profEvents_)
    LLMC_CU(cu_->cuEventCreate(&e, CU_EVENT_DEFAULT), context());
  std::string ctx = "capturing the profiled CUDA graph of " + context();
  LLMC_RETURN_IF_ERROR(captureSequence(
      ctx,
      [&]() -> Status {
        for (size_t i = 0; i < n; ++i) {
          LLMC_RETURN_IF_ERROR(
              recordExternal(profEvents_[2 * i], stepContext(i)));
          LLMC_RETURN_IF_ERROR(enqueueStep(i));
          LLMC_RETURN_IF_ERROR(
              recordExternal(profEvents_[2 * i + 1], stepContext(i)));
        }
        return Status::ok();
      },
      profGraph_));
  LLMC_CU(cu_->cuGraphInstantiate(&profExec_, profGraph_, 0), ctx);
  return Status::ok();
}

Status Executor::replayProfiled(GpuTimeline &timeline) {
  LLMC_RETURN_IF_ERROR(prepareProfiled());
  LLMC_CU(cu_->cuCtxSetCurrent(context_), context());
  LLMC_RETURN_IF_ERROR(useStream(stream_));
  size_t n = plan_.steps.size();
  CUevent before = profEvents_[2 * n], after = profEvents_[2 * n + 1];
  // The loss is read with a copy of its own after this replay (this graph
  // has no mirror node), and stop_ does not mark its end.
  mirrorCurrent_ = false;
  tailIsReplay_ = false;
  // The host's reads bracket the driver calls only: what lies between them
  // and the GPU's events is the hand-off between host and GPU.
  timeline.host.startMs = hostNowMs();
  LLMC_CU(cu_->cuEventRecord(before, stream_), context());
  timeline.launchCall.startMs = hostNowMs();
  LLMC_CU(cu_->cuGraphLaunch(profExec_, stream_),
          "replaying the profiled CUDA graph of " + context());
  timeline.launchCall.endMs = hostNowMs();
  LLMC_CU(cu_->cuEventRecord(after, stream_), context());
  LLMC_CU(cu_->cuEventSynchronize(after),
          "profiling " + context() + " (a kernel fault surfaces here)");
  timeline.host.endMs = hostNowMs();
  profiledReplays_ += 1;
  return Status::ok();
}

Status Executor::readProfiled(GpuTimeline &timeline) {
  if (profiledReplays_ == 0)
    return Status::error("readProfiled: " + context() +
                         " has not replayed its profiled graph");
  LLMC_CU(cu_->cuCtxSetCurrent(context_), context());
  size_t n = plan_.steps.size();
  CUevent before = profEvents_[2 * n], after = profEvents_[2 * n + 1];
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
  return Status::ok();
}

Status Executor::measureCopyBandwidth(double &gbPerS) {
  LLMC_CU(cu_->cuCtxSetCurrent(context_), context());
  constexpr size_t kBytes = size_t{256} << 20;
  CUdeviceptr from = 0, to = 0;
  CUevent start = nullptr, stop = nullptr;
  // Released on every path: the caller goes on training after a failure.
  struct Release {
    const cuda::DriverApi *cu;
    CUdeviceptr &from, &to;
    CUevent &start, &stop;
    ~Release() {
      if (from)
        cu->cuMemFree(from);
      if (to)
        cu->cuMemFree(to);
      if (start)
        cu->cuEventDestroy(start);
      if (stop)
        cu->cuEventDestroy(stop);
    }
  } release{cu_, from, to, start, stop};
  std::string what = "measuring the copy bandwidth of " + context();
  LLMC_CU(cu_->cuMemAlloc(&from, kBytes), what);
  LLMC_CU(cu_->cuMemAlloc(&to, kBytes), what);
  LLMC_CU(cu_->cuEventCreate(&start, CU_EVENT_DEFAULT), what);
  LLMC_CU(cu_->cuEventCreate(&stop, CU_EVENT_DEFAULT), what);
  float best = 0;
  for (int i = 0; i < 6; ++i) {
    LLMC_CU(cu_->cuEventRecord(start, stream_), what);
    LLMC_CU(cu_->cuMemcpyDtoDAsync(to, from, kBytes, stream_), what);
    LLMC_CU(cu_->cuEventRecord(stop, stream_), what);
    LLMC_CU(cu_->cuEventSynchronize(stop), what);
    float ms = 0;
    LLMC_CU(cu_->cuEventElapsedTime(&ms, start, stop), what);
    if (i > 0 && (best == 0 || ms < best)) // the first copy warms up
      best = ms;
  }
  gbPerS = best > 0 ? 2.0 * kBytes / (best * 1e6) : 0;
  return Status::ok();
}

} // namespace llmc
