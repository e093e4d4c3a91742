//===- Executor.h - Runs a plan on one GPU ----------------------*- C++ -*-===//
//
// Life cycle (docs/runtime.md):
//
//   create    validate the plan; init the driver; retain the device's primary
//             context; allocate ONE arena (plan.arenaBytes + cuBLASLt
//             workspace) and zero it; upload initial data and scalar slots;
//             load every kernel's cubin (recompiling the source with NVRTC
//             when the cubin is for another arch); create the cuBLASLt handle
//             and prepare every matmul (heuristic algorithm) once
//   per step  setScalar / writeBuffer (async copies into the arena), then
//             replay() (the captured CUDA graph) or runPlain() (each step
//             enqueued on the stream, for debugging)
//   after     readScalar / readBuffer (synchronize, copy back), lastRunMs
//
// replay() captures the launch sequence as a CUDA graph on its first call and
// then only relaunches it: every pointer is arena base + offset, fixed at
// create, and everything that changes between steps lives in the arena. The
// graph records the timing events and copies the loss to pinned memory
// itself, and may begin with copies of graph inputs from device memory that
// a caller names per replay; so one replay is one driver call when nothing
// changed (docs/jit-api.md, "What one call costs").
//
// Work is queued on the executor's own stream unless an embedding caller
// moves it to its own stream (useStream): the caller's stream order then
// replaces an event record/wait pair per call.
//
// No method throws or aborts; every failure is a Status naming the step,
// kernel and bundle.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_EXECUTOR_H
#define LLMC_RUNTIME_EXECUTOR_H

#include "runtime/CudaApi.h"
#include "runtime/DeviceMemory.h"
#include "runtime/HostClock.h"
#include "runtime/LoadPhases.h"
#include "runtime/Plan.h"
#include "runtime/PublishedScalar.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace llmc {

class PreparedMatmul;
struct PreparedAttention; // ExecutorAttention.h

/// A buffer the captured graph fills itself at its start, by a copy of
/// `bytes` from device memory named per replay.
struct GraphInput {
  std::string buffer;
  uint64_t bytes = 0;
};

/// What a profiled replay measured. GPU times (readProfiled) are in ms from
/// an event recorded on the stream right before the graph launch; host
/// times (replayProfiled) are spans on hostNowMs().
struct GpuTimeline {
  std::vector<float> startMs, endMs; // per plan step
  float graphEndMs = 0;              // an event right after the graph
  HostSpan host;       // from before the start event's record to the host's
                       // return from waiting for the end event
  HostSpan launchCall; // the host in cuGraphLaunch
};

struct ExecutorOptions {
  int device = 0;
  std::string source;        // bundle path or test name, for messages
  std::string cacheDir;      // kernel cache for recompiles; "" = default dir
  bool syncEachStep = false; // runPlain: synchronize after every step so a
                             // fault is reported at the step that caused it
  // cuBLASLt algorithms timed per matmul shape at first load, the choice
  // cached in cacheDir (docs/runtime.md "Matmul tuning"): the heuristic's
  // first N answers; 1 takes its first; -1 the default (8).
  // LLMC_MATMUL_TUNE=N overrides.
  int matmulCandidates = -1;
};

/// True when a driver and at least one GPU are present; otherwise false and
/// `why` says what is missing ("no CUDA driver found: ...", "no GPU").
bool gpuAvailable(std::string &why);

class Executor {
public:
  /// Loads `plan` onto the GPU. On error `out` is null and nothing leaks.
  static Status create(Plan plan, const ExecutorOptions &options,
                       std::unique_ptr<Executor> &out);
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  const Plan &plan() const { return plan_; }
  /// "sm_90": the device's architecture.
  const std::string &arch() const { return arch_; }
  CUdeviceptr arenaBase() const { return arena_; }
  /// The stream every run and copy is ordered on, and the device's primary
  /// context: what an embedding caller orders its own streams against
  /// (compiler/jit, docs/jit-api.md).
  CUstream stream() const { return stream_; }
  /// The stream copies, replays and reads are queued on now: stream(), or
  /// the one last given to useStream.
  CUstream workStream() const { return work_; }
  /// Queues later copies, replays and reads on `s` (an embedding caller's
  /// stream; stream() for the executor's own). A change orders `s` after
  /// everything queued before it: on the last replay's completion event,
  /// which the graph records itself, or on an event recorded on the previous
  /// stream when something else came last. The caller keeps `s` alive while
  /// it is the work stream; once a replay came last, the previous stream is
  /// not touched again.
  Status useStream(CUstream s);
  CUcontext cudaContext() const { return context_; }
  const cuda::DriverApi &driver() const { return *cu_; }
  /// The device memory this executor takes beyond its context, by item
  /// (runtime/DeviceMemory.h), with what loading learnt: the kernels' local
  /// memory and the GPU's resident threads.
  DeviceMemoryPlan memoryPlan() const {
    return planDeviceMemory(plan_, facts_, moduleBytes_);
  }
  /// Kernels whose source was recompiled because the cubin did not fit.
  size_t recompiledKernels() const { return recompiled_; }

  /// Host to device, ordered before the next run on the executor's stream.
  Status setScalar(const std::string &name, double value);
  Status writeBuffer(const std::string &name, const void *data, size_t bytes);

  /// Enqueues every step on the stream, one by one.
  Status runPlain();
  /// runPlain with an event pair around every step: `stepMs[i]` is the GPU
  /// time of step i (the breakdown of `llmc train --profile`). Slower than a
  /// replay by the launch gaps, which the per-step times leave out.
  Status runProfiled(std::vector<float> &stepMs);
  /// One replay of a second captured graph (ExecutorProfile.cpp): the same
  /// launches in the same order, each between two event-record nodes, so
  /// the per-kernel times, the gaps between launches and the graph's start
  /// latency are those of a graph replay, not of kernel-by-kernel launches
  /// (CUPTI activity records would be the other way; the runtime only has
  /// the driver API). Waits for the replay and fills the host spans of
  /// `timeline`; readProfiled fills its GPU times afterwards, so reading
  /// the events is not part of the step.
  Status replayProfiled(GpuTimeline &timeline);
  Status readProfiled(GpuTimeline &timeline);
  /// The device's copy bandwidth in GB/s (bytes read plus written per
  /// second), the best of a few device-to-device copies of 256 MiB into two
  /// buffers allocated for it: the ceiling the profile's bandwidth table
  /// measures memory-bound kernels against. Fails when the memory is not
  /// free.
  Status measureCopyBandwidth(double &gbPerS);
  /// Captures and instantiates the profiled graph ahead of its replay, so
  /// that the profiled step does not pay for it (replayProfiled captures
  /// when this was not called).
  Status prepareProfiled();
  /// Captures the launch sequence as a CUDA graph (once) and instantiates it.
  Status capture();
  /// Launches the captured graph; captures first when needed. With gradient
  /// accumulation (Plan::accumulateSteps) this graph is the apply sequence.
  Status replay();
  /// Gradient accumulation: launches the accumulate sequence (the plan's
  /// first accumulateSteps steps), captured once as a graph of its own, on
  /// the work stream. No event, loss read-back or input copy: the inputs
  /// are written before it and the apply replay reads what it accumulated.
  Status replayAccumulate();
  /// How often the accumulate sequence was captured (1 after any number of
  /// replays), and its graph's nodes.
  size_t accumulateCaptureCount() const { return accCaptures_; }
  size_t accumulateGraphNodeCount() const { return accNodes_; }
  /// Declares the graph inputs (before the first replay; bytes at most the
  /// buffer's). replay(sources) then copies input i from `sources[i]`, a
  /// device pointer in this context, or, where it is 0, leaves the buffer as
  /// written (a host copy, say). The copies are memcpy nodes at the graph's
  /// start, captured from the first replay's sources; a changed source
  /// updates its node, a 0 disables it, and a source the graph cannot take
  /// (other memory, or no node) is copied on the work stream before the
  /// launch instead.
  Status setGraphInputs(std::vector<GraphInput> inputs);
  Status replay(const std::vector<CUdeviceptr> &sources);
  /// How many graph inputs the last replay copied by a graph node, and how
  /// many node updates (source changed, enabled, disabled) all replays made.
  size_t graphInputNodesUsed() const { return nodesUsed_; }
  size_t graphInputUpdates() const { return nodeUpdates_; }
  bool captured() const { return graphExec_ != nullptr; }
  /// How often the sequence was captured: 1 after any number of replays.
  size_t captureCount() const { return captures_; }
  /// Nodes of the captured graph (0 before capture).
  size_t graphNodeCount() const { return graphNodes_; }

  /// Waits for everything queued (on the work stream too), then makes the
  /// executor's own stream the work stream.
  Status synchronize();
  /// Milliseconds between the events recorded around the last run (inside
  /// the graph for a replay: the GPU time of its nodes); waits for it.
  Status lastRunMs(float &ms);

  /// Whether a replay publishes the loss to host memory (read by a spin,
  /// PublishedScalar.h) rather than by an event wait; and how many reads
  /// fell back to the event (a step longer than the spin).
  /// How long create() took, phase by phase (a warm start's split).
  const LoadPhases &loadTimes() const { return loadTimes_; }
  /// "15 matmul shapes: 15 timed (...), 0 from the cache", or "" when no
  /// matmul was tuned.
  const std::string &matmulTuning() const { return matmulTuning_; }

  bool publishesLoss() const { return published_ != nullptr; }
  uint64_t lossEventWaits() const {
    return published_ ? published_->eventWaits() : 0;
  }

  /// Device to host; synchronizes the stream first.
  Status readBuffer(const std::string &name, std::vector<uint8_t> &bytes);
  Status readScalar(const std::string &name, double &value);

private:
  Executor() = default;
  Status init();
  Status checkFits();
  Status allocateArena();
  int matmulCandidates() const;
  std::string tuneDir() const;
  Status tuneMatmuls();
  void startUpload();
  Status finishUpload();
  Status loadKernels();
  Status loadFacts();
  Status prepareSteps();
  Status prepareAttention(); // ExecutorAttention.cpp
  Status enqueueStep(size_t index);
  Status enqueueAll();
  Status enqueueRange(size_t first, size_t last);
  void destroyAccumulate();
  Status captureSequence(const std::string &ctx,
                         const std::function<Status()> &enqueue,
                         CUgraph &graph);
  Status recordExternal(CUevent event, const std::string &what);
  Status captureGraph(const std::vector<CUdeviceptr> *sources);
  Status findInputNodes(const std::vector<CUdeviceptr> &sources, bool &found);
  void destroyGraph();
  Status feedInputs(const std::vector<CUdeviceptr> &sources);
  Status captureProfiled();
  void destroyProfiled();
  std::string context() const;
  std::string stepContext(size_t index) const;

  struct ResolvedLaunch {
    CUfunction function = nullptr;
    std::vector<uint64_t> values; // one 8-byte slot per argument
    std::vector<void *> params;   // pointers into `values`
  };

  Plan plan_;
  ExecutorOptions options_;
  const cuda::DriverApi *cu_ = nullptr;
  const cuda::CublasLtApi *lt_ = nullptr;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::string arch_;
  std::string deviceName_;
  std::string matmulTuning_; // tuneMatmuls()'s one-line summary
  CUdeviceptr arena_ = 0;
  uint64_t arenaAllocated_ = 0;
  CUdeviceptr workspace_ = 0;
  CUstream stream_ = nullptr;
  CUstream work_ = nullptr; // stream_ or a caller's stream (useStream)
  // start_/stop_ bracket the last run; a replay's are recorded by the graph
  // (external event nodes), so stop_ also says when that replay finished.
  CUevent start_ = nullptr, stop_ = nullptr;
  CUevent switched_ = nullptr; // orders a new work stream after the old
  bool tailIsReplay_ = false;  // stop_ marks everything queued on work_
  // Pinned host memory for scalar slots: uploads from a ring of entries (an
  // entry is reused once the copy that read it has run, which its group's
  // event says) and the read-back of a scalar, so that neither goes through the
  // driver's pageable staging (a synchronous ~10 us round trip per call).
  static constexpr size_t kScalarRing = 64;
  unsigned char *pinned_ = nullptr; // kScalarRing uploads, read-back, mirror
  // The graph's last node copies the `loss` slot into pinned memory, so a
  // replay's loss is read after one event wait, without a copy of its own.
  const ScalarSlot *mirrored_ = nullptr;
  bool mirrorCurrent_ = false; // the last thing run was a graph replay
  // Better still: the graph's last kernel publishes the loss with a
  // sequence number, and a read spins on host memory instead of waiting on
  // stop_ (PublishedScalar.h). Unset when its kernel did not load; then
  // the graph copies the loss into pinned_ as above.
  std::unique_ptr<PublishedScalar> published_;
  // Initial data on its way to the arena (ExecutorLoad.cpp): threads
  // that take buffers in turn; destroying it waits for them.
  struct Upload {
    std::vector<const BufferInfo *> buffers; // largest first
    std::vector<Status> statuses;            // per buffer
    std::atomic<size_t> next{0};
    std::vector<std::thread> threads;
    ~Upload() {
      for (std::thread &t : threads)
        t.join();
    }
  };
  std::unique_ptr<Upload> upload_;
  LoadPhases loadTimes_;
  bool graphPublishes_ = false; // graphExec_ holds the publishing kernel
  // One event per group of kScalarGroup ring entries, recorded after the
  // group's last upload: the group is reused once it has fired, so an upload
  // costs one copy, not a wait and a record of its own.
  static constexpr size_t kScalarGroup = 16;
  CUevent scalarCopied_[kScalarRing / kScalarGroup] = {};
  size_t scalarNext_ = 0;
  bool ran_ = false;
  cublasLtHandle_t ltHandle_ = nullptr;
  std::vector<CUmodule> modules_;
  std::vector<CUfunction> functions_;
  std::vector<ResolvedLaunch> launches_; // per step; empty for non-launches
  std::vector<std::unique_ptr<PreparedMatmul>> matmuls_; // per step
  // cuDNN attention steps: their finalized plans (shared by equal steps),
  // per-step pointers, and one workspace after cuBLASLt's in the arena.
  std::unique_ptr<PreparedAttention> attention_;
  uint64_t cudnnWorkspaceBytes_ = 0;
  CUdeviceptr cudnnWorkspace_ = 0;
  CUgraph graph_ = nullptr;
  CUgraphExec graphExec_ = nullptr;
  size_t graphNodes_ = 0;
  struct InputNode {
    CUgraphNode node = nullptr; // null: copied outside the graph
    CUDA_MEMCPY3D params = {};  // as captured; srcDevice is updated
    CUdeviceptr source = 0;     // what the node copies from now
    bool enabled = true;
  };
  std::vector<GraphInput> graphInputs_;
  std::vector<InputNode> inputNodes_;
  size_t nodesUsed_ = 0, nodeUpdates_ = 0;
  // replayProfiled's graph and its events: two per step, then one before
  // and one after the graph.
  CUgraph profGraph_ = nullptr;
  CUgraphExec profExec_ = nullptr;
  std::vector<CUevent> profEvents_;
  size_t profiledReplays_ = 0;
  // replayAccumulate's graph (the plan's accumulate sequence).
  CUgraph accGraph_ = nullptr;
  CUgraphExec accExec_ = nullptr;
  size_t accCaptures_ = 0, accNodes_ = 0;
  size_t captures_ = 0;
  size_t recompiled_ = 0;
  DeviceFacts facts_;
  uint64_t moduleBytes_ = 0; // moduleFootprint before the cubins are dropped
};

} // namespace llmc

#endif // LLMC_RUNTIME_EXECUTOR_H
