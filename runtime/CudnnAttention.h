//===- CudnnAttention.h - Flash attention through cuDNN's graphs -*- C++ -*-===//
//
// The forward (O and the row log-sum-exp) and the backward (dQ, dK, dV) of
// scaled dot-product attention as cuDNN operation graphs, built and
// finalized once (at load) and executed on a stream, inside a CUDA-graph
// capture like every other step (docs/codegen.md, "cuDNN attention").
//
// The graphs are the composite ones cuDNN's fused flash-attention engines
// match (the op sequence cudnn-frontend's SDPA nodes build): forward
//   S = Q Kᵀ · scale, [causal: select(row >= col, S, lowest)],
//   m = max S, e = exp(S - m), l = sum e, stats = m + log l, P = e / l,
//   O = P V;
// backward
//   D = sum(dO ∘ O) (f32, workspace), P = exp(S - stats), dV = Pᵀ dO,
//   dS = P ∘ (dO Vᵀ - D) · scale, dK = dSᵀ Q, dQ = dS K.
// cuDNN's stats are the natural log of each row's softmax denominator of
// the scaled scores: exactly llmc's `lse` (LlmcGradOps.td), no conversion.
//
// Every tensor is [b, h, s, d] with arbitrary element strides (d's stride
// 1), so q, k, v may be head windows of one packed [B, T, 3C] buffer.
// GQA: k and v have hkv heads, hq a multiple of hkv.
//
// Deterministic backward: dQ written by the matmul itself (the engine keeps
// dP in its workspace) instead of accumulated into an f32 buffer with
// atomics; two runs give the same bits. The atomic variant is faster and is
// there to measure what determinism costs.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CUDNNATTENTION_H
#define LLMC_RUNTIME_CUDNNATTENTION_H

#include "runtime/CudnnApi.h"

#include <cuda.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llmc {

struct CudnnPlanRecord; // CudnnPlanCache.h

using Strides4 = std::array<int64_t, 4>; // elements, [b, h, s, d]

/// What one cuDNN attention graph computes.
struct CudnnAttentionDesc {
  bool backward = false;
  bool bf16 = true; // else f16; stats and the scale are f32
  bool causal = false;
  bool deterministic = true; // backward only
  double scale = 0;          // applied to q kᵀ
  int64_t b = 0, hq = 0, hkv = 0, sq = 0, skv = 0, d = 0;
  // Strides of q, k, v, o; the backward also dO, dQ, dK, dV.
  Strides4 q{}, k{}, v{}, o{}, dO{}, dQ{}, dK{}, dV{};
};

/// "cudnn attention fwd bf16 causal [16, 12/12, 1024x1024, 64]".
std::string describe(const CudnnAttentionDesc &desc);

/// Checks what cuDNN's fused engines accept before any descriptor is made:
/// head dim a multiple of 8 up to 128, hq a multiple of hkv, unit stride
/// on d, positive sizes. The Status says which.
Status checkSupported(const CudnnAttentionDesc &desc);

/// The workspace create() gives a plan of `desc` (workspaceBytes()),
/// computed without a GPU so that the compiler's memory plan counts it
/// (DeviceMemory.h; docs/memory.md, "cuDNN's attention workspace"): the
/// engine's own (modelledEngineWorkspace) plus the f32 buffers this graph
/// keeps after it: the backward's row dot D, [b, hq, sq], and dQ's
/// accumulator, [b, hq, sq, d], when atomic. CudnnWorkspaceGpuTest checks
/// it against the plans cuDNN makes.
uint64_t modelledWorkspaceBytes(const CudnnAttentionDesc &desc);
/// The engine's own part, as cuDNN 9.14's Hopper engines ask for it: a
/// deterministic backward keeps dP there, 2 bytes per score with the rows
/// padded to 64 and the columns to 128 (b * hq * sq64 * skv128; dQ = dS K
/// reads it back; measured with sq = skv only, which cannot tell the two
/// apart), and every plan, forward or backward, 256 bytes more (a few
/// bytes, 256-aligned).
uint64_t modelledEngineWorkspace(const CudnnAttentionDesc &desc);

/// Device pointers of one execution: the forward reads q, k, v and writes o
/// and stats; the backward reads q, k, v, o, dO and stats, writes dQ, dK,
/// dV. `workspace` holds workspaceBytes() (16-byte aligned).
struct CudnnAttentionArgs {
  CUdeviceptr q = 0, k = 0, v = 0, o = 0, stats = 0;
  CUdeviceptr dO = 0, dQ = 0, dK = 0, dV = 0;
  CUdeviceptr workspace = 0;
};

/// Where create() keeps finalized plans across processes
/// (CudnnPlanCache.h). An empty `dir` keeps none.
struct CudnnPlanCacheOptions {
  std::string dir;    // the compile cache's folder
  std::string device; // "NVIDIA H100 80GB HBM3 sm_90": part of the key
};

/// One finalized execution plan and its descriptors.
class CudnnAttention {
public:
  /// Builds the graph, asks cuDNN's heuristics for engine configurations and
  /// finalizes the first that works (for a deterministic backward, the
  /// first without CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC). Needs the
  /// device's context current. A shape no engine takes is a Status that
  /// names cuDNN's reason. With a cache, a plan stored by an earlier build
  /// is restored instead (no graph, heuristics or compile), and a fresh
  /// build is stored; a file that does not restore is rebuilt and replaced.
  static Status create(const CudnnAttentionDesc &desc,
                       std::unique_ptr<CudnnAttention> &out,
                       const CudnnPlanCacheOptions &cache = {});
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention &) = delete;
  CudnnAttention &operator=(const CudnnAttention &) = delete;

  const CudnnAttentionDesc &desc() const { return desc_; }
  /// The plan's workspace plus the f32 buffers the graph keeps there (the
  /// backward's row dot D, and dQ's accumulator when not deterministic).
  uint64_t workspaceBytes() const { return workspaceBytes_; }
  /// The engine chosen ("engine 8", with its knob choices' count).
  const std::string &engineName() const { return engine_; }
  int64_t cudnnVersion() const { return version_; }
  /// Whether the plan was restored from the cache rather than built.
  bool fromCache() const { return fromCache_; }
  /// Where the plan came from: "restored from the cache", "built, stored in
  /// the cache", "built (no cache)", or "built (...)" with why the cache was
  /// not used (a rejected file, a plan cuDNN cannot serialize).
  const std::string &planSource() const { return source_; }

  /// Queues one execution on `stream` (capturable: no allocation, no
  /// synchronization). Binds the variant pack on the first call and
  /// rebuilds it only when a pointer changes.
  Status run(CUstream stream, const CudnnAttentionArgs &args);

private:
  CudnnAttention() = default;
  void layOut(); // the variant pack's tensors and the workspace's f32 buffers
  Status build(bool maskAfterStats);
  Status buildEither(); // the mask before the stats, else after
  Status restore(const CudnnPlanRecord &record);
  std::string store(const std::string &path, const std::string &key);
  Status finishPlan(const std::string &context); // the workspace's size
  void reset(); // destroys what a failed build made
  Status bindVariantPack(const CudnnAttentionArgs &args);

  CudnnAttentionDesc desc_;
  const cuda::CudnnApi *api_ = nullptr;
  cudnnHandle_t handle_ = nullptr;
  std::vector<cudnnBackendDescriptor_t> owned_; // destroyed in reverse
  cudnnBackendDescriptor_t plan_ = nullptr;
  cudnnBackendDescriptor_t pack_ = nullptr;
  CudnnAttentionArgs bound_{};
  uint64_t planWorkspace_ = 0, workspaceBytes_ = 0;
  uint64_t rowDotOffset_ = 0, dqAccumOffset_ = 0, extraBytes_ = 0;
  int64_t engineIndex_ = -1;
  bool noted_ = false, fromCache_ = false;
  std::string engine_, source_;
  int64_t version_ = 0;
  // By-value scalars: the variant pack points at them.
  float scaleValue_ = 1, oneValue_ = 1, lowestValue_ = 0;
  std::vector<int64_t> packUids_;
  std::vector<void *> packPointers_;
};

} // namespace llmc

#endif // LLMC_RUNTIME_CUDNNATTENTION_H
