//===- ExecutorGraph.cpp - The step as one captured CUDA graph ------------===//
//
// Executor::replay (Executor.h): the plan's launch sequence captured once as
// a CUDA graph, instantiated once and relaunched each step; graph inputs as
// memcpy nodes at its start, repointed per replay. captureSequence is the
// one capture both graphs go through (this one and replayProfiled's,
// ExecutorProfile.cpp).
//
//===----------------------------------------------------------------------===//
#include "runtime/Executor.h"

namespace llmc {

/// Thread-local mode: another thread's unrelated CUDA calls cannot
/// invalidate (or join) the capture. The capture is ended on every path, or
/// the stream stays unusable; on failure no graph is left.
Status Executor::captureSequence(const std::string &ctx,
                                 const std::function<Status()> &enqueue,
                                 CUgraph &graph) {
  graph = nullptr;
  LLMC_CU(cu_->cuCtxSetCurrent(context_), context());
  LLMC_CU(
      cu_->cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
      ctx);
  Status enqueued = enqueue();
  CUgraph captured = nullptr;
  CUresult ended = cu_->cuStreamEndCapture(stream_, &captured);
  if (!enqueued) {
    if (captured)
      cu_->cuGraphDestroy(captured);
    return enqueued.withContext(ctx);
  }
  LLMC_CU(ended, ctx);
  graph = captured;
  return Status::ok();
}

/// An event-record node: recorded by every launch of the graph, not used for
/// the capture's dependencies.
Status Executor::recordExternal(CUevent event, const std::string &what) {
  LLMC_CU(
      cu_->cuEventRecordWithFlags(event, stream_, CU_EVENT_RECORD_EXTERNAL),
      what);
  return Status::ok();
}

Status Executor::capture() { return captureGraph(nullptr); }

void Executor::destroyGraph() {
  if (graphExec_)
    cu_->cuGraphExecDestroy(graphExec_);
  if (graph_)
    cu_->cuGraphDestroy(graph_);
  graphExec_ = nullptr;
  graph_ = nullptr;
  inputNodes_.clear();
}

/// Captures once: the start event, the graph inputs whose `sources` entry is
/// set, the plan, the loss mirror, the stop event. The events are external
/// (event record nodes), so each launch records them: stop_ then marks the
/// launch's end for a host wait or another stream, with no driver call per
/// launch of its own.
Status Executor::captureGraph(const std::vector<CUdeviceptr> *sources) {
  if (graphExec_)
    return Status::ok();
  std::string ctx = "capturing the CUDA graph of " + context();
  const ScalarSlot *loss = plan_.findScalar("loss");
  graphPublishes_ = false;
  bool publishes = false;
  CUgraph graph = nullptr;
  LLMC_RETURN_IF_ERROR(captureSequence(
      ctx,
      [&]() -> Status {
        LLMC_RETURN_IF_ERROR(recordExternal(start_, "the start event"));
        for (size_t i = 0; sources && i < graphInputs_.size(); ++i)
          if ((*sources)[i])
            LLMC_CU(cu_->cuMemcpyDtoDAsync(
                        arena_ +
                            plan_.findBuffer(graphInputs_[i].buffer)->offset,
                        (*sources)[i], graphInputs_[i].bytes, stream_),
                    "graph input '" + graphInputs_[i].buffer + "'");
        // The apply sequence when the plan accumulates (replayAccumulate
        // runs the rest).
        LLMC_RETURN_IF_ERROR(
            enqueueRange(plan_.accumulateSteps, plan_.steps.size()));
        if (loss && published_) {
          // The last kernel publishes the loss to host memory: a read is a
          // spin, not a driver call (PublishedScalar.h).
          LLMC_RETURN_IF_ERROR(published_->enqueue(
              stream_, arena_ + loss->offset,
              static_cast<unsigned>(dtypeSize(loss->dtype))));
          publishes = true;
        } else if (loss) {
          LLMC_CU(cu_->cuMemcpyDtoHAsync(pinned_ + 8 * (kScalarRing + 1),
                                         arena_ + loss->offset,
                                         dtypeSize(loss->dtype), stream_),
                  "the loss read-back");
        }
        return recordExternal(stop_, "the stop event");
      },
      graph));
  if (loss)
    mirrored_ = loss;
  graph_ = graph;
  size_t nodes = 0;
  LLMC_CU(cu_->cuGraphGetNodes(graph_, nullptr, &nodes), ctx);
  graphNodes_ = nodes;
  inputNodes_.assign(graphInputs_.size(), InputNode());
  if (sources) {
    bool found = false;
    if (Status s = findInputNodes(*sources, found); !s) {
      destroyGraph();
      return s;
    }
    if (!found) {
      // A captured input copy that is not a memcpy node could not be
      // repointed or disabled, and would read a stale pointer: capture
      // again without input copies (they go outside the graph).
      destroyGraph();
      return captureGraph(nullptr);
    }
  }
  ++captures_;
  LLMC_CU(cu_->cuGraphInstantiate(&graphExec_, graph_, 0), ctx);
  graphPublishes_ = publishes;
  return Status::ok();
}

/// The memcpy node of each captured graph input: the one whose destination
/// is its buffer and whose source is what the capture copied from.
Status Executor::findInputNodes(const std::vector<CUdeviceptr> &sources,
                                bool &found) {
  std::string ctx = "finding the input copies in the CUDA graph of " +
                    context();
  std::vector<CUgraphNode> nodes(graphNodes_);
  size_t count = nodes.size();
  LLMC_CU(cu_->cuGraphGetNodes(graph_, nodes.data(), &count), ctx);
  found = true;
  for (size_t i = 0; i < graphInputs_.size(); ++i) {
    if (!sources[i])
      continue;
    CUdeviceptr dst = arena_ + plan_.findBuffer(graphInputs_[i].buffer)->offset;
    InputNode &in = inputNodes_[i];
    for (size_t n = 0; n < count && !in.node; ++n) {
      CUgraphNodeType type;
      LLMC_CU(cu_->cuGraphNodeGetType(nodes[n], &type), ctx);
      if (type != CU_GRAPH_NODE_TYPE_MEMCPY)
        continue;
      CUDA_MEMCPY3D p = {};
      LLMC_CU(cu_->cuGraphMemcpyNodeGetParams(nodes[n], &p), ctx);
      // A node may name an address as a base plus an x offset.
      if (p.dstDevice + p.dstXInBytes == dst &&
          p.srcDevice + p.srcXInBytes == sources[i] &&
          p.WidthInBytes == graphInputs_[i].bytes) {
        in.node = nodes[n];
        in.params = p;
        in.source = sources[i];
      }
    }
    found &= in.node != nullptr;
  }
  return Status::ok();
}

Status Executor::setGraphInputs(std::vector<GraphInput> inputs) {
  if (graph_)
    return Status::error("setGraphInputs: the graph of " + context() +
                         " is captured already");
  for (const GraphInput &in : inputs) {
    const BufferInfo *b = plan_.findBuffer(in.buffer);
    if (!b || in.bytes == 0 || in.bytes > b->bytes)
      return Status::error("setGraphInputs: " + context() +
                           (b ? " cannot copy " + std::to_string(in.bytes) +
                                    " bytes into buffer '" + in.buffer + "'"
                              : " has no buffer '" + in.buffer + "'"));
  }
  graphInputs_ = std::move(inputs);
  return Status::ok();
}

/// Points each graph input's node at its source for the next launch, with a
/// driver call only for a change; copies outside the graph what no node can.
Status Executor::feedInputs(const std::vector<CUdeviceptr> &sources) {
  nodesUsed_ = 0;
  for (size_t i = 0; i < graphInputs_.size(); ++i) {
    CUdeviceptr src = sources[i];
    InputNode &in = inputNodes_[i];
    auto what = [&] {
      return "graph input '" + graphInputs_[i].buffer + "' of " + context();
    };
    if (in.node && src && src != in.source) {
      CUDA_MEMCPY3D p = in.params;
      p.srcDevice = src;
      p.srcXInBytes = 0;
      ++nodeUpdates_;
      if (cu_->cuGraphExecMemcpyNodeSetParams(graphExec_, in.node, &p,
                                              context_) == CUDA_SUCCESS) {
        in.source = src;
      } else {
        // Memory the node cannot take (another kind of mapping): this input
        // is copied outside the graph from now on.
        if (in.enabled)
          LLMC_CU(cu_->cuGraphNodeSetEnabled(graphExec_, in.node, 0), what());
        in.node = nullptr;
      }
    }
    if (in.node) {
      bool wanted = src != 0;
      if (wanted != in.enabled) {
        ++nodeUpdates_;
        LLMC_CU(cu_->cuGraphNodeSetEnabled(graphExec_, in.node, wanted),
                what());
        in.enabled = wanted;
      }
      if (wanted) {
        ++nodesUsed_;
        continue;
      }
    }
    if (src)
      LLMC_CU(cu_->cuMemcpyDtoDAsync(
                  arena_ + plan_.findBuffer(graphInputs_[i].buffer)->offset,
                  src, graphInputs_[i].bytes, work_),
              what());
  }
  return Status::ok();
}

Status Executor::replay() {
  return replay(std::vector<CUdeviceptr>(graphInputs_.size(), 0));
}

Status Executor::replay(const std::vector<CUdeviceptr> &sources) {
  if (sources.size() != graphInputs_.size())
    return Status::error("replay: " + std::to_string(sources.size()) +
                         " sources for the " +
                         std::to_string(graphInputs_.size()) +
                         " graph inputs of " + context());
  LLMC_RETURN_IF_ERROR(captureGraph(&sources));
  LLMC_RETURN_IF_ERROR(feedInputs(sources));
  LLMC_CU(cu_->cuGraphLaunch(graphExec_, work_),
          "replaying the CUDA graph of " + context());
  if (graphPublishes_)
    published_->launched();
  ran_ = true;
  tailIsReplay_ = true;
  mirrorCurrent_ = mirrored_ != nullptr;
  return Status::ok();
}

void Executor::destroyAccumulate() {
  if (accExec_)
    cu_->cuGraphExecDestroy(accExec_);
  if (accGraph_)
    cu_->cuGraphDestroy(accGraph_);
  accExec_ = nullptr;
  accGraph_ = nullptr;
}

Status Executor::replayAccumulate() {
  if (plan_.accumulateSteps == 0)
    return Status::error("replayAccumulate: " + context() +
                         " has no accumulate sequence (it was compiled "
                         "without gradient accumulation)");
  std::string ctx = "the accumulate graph of " + context();
  if (!accExec_) {
    CUgraph graph = nullptr;
    LLMC_RETURN_IF_ERROR(captureSequence(
        "capturing " + ctx,
        [&] { return enqueueRange(0, plan_.accumulateSteps); }, graph));
    accGraph_ = graph;
    LLMC_CU(cu_->cuGraphGetNodes(accGraph_, nullptr, &accNodes_),
            "capturing " + ctx);
    if (CUresult r = cu_->cuGraphInstantiate(&accExec_, accGraph_, 0);
        r != CUDA_SUCCESS) {
      destroyAccumulate();
      LLMC_CU(r, "instantiating " + ctx);
    }
    ++accCaptures_;
  }
  // Queued on the work stream like a replay, but it records no stop event:
  // a later stream switch or read orders itself by an event of its own.
  LLMC_CU(cu_->cuGraphLaunch(accExec_, work_), "replaying " + ctx);
  ran_ = true;
  tailIsReplay_ = false;
  mirrorCurrent_ = false;
  return Status::ok();
}

} // namespace llmc
