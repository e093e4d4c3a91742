//===- ClassifierCluster.h - A cross-entropy row over a cluster -*- C++ -*-===//
//
// The cluster row cache of the cross-entropy row kernel (ClassifierEmitter.cpp,
// LLMC_CE_ROW_CACHE=cluster): a thread-block cluster per row, each CTA
// staging its slice in its own shared memory, the partials merged through
// distributed shared memory. Only ClassifierEmitter.cpp includes this.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_CLASSIFIERCLUSTER_H
#define LLMC_COMPILER_CODEGEN_CLASSIFIERCLUSTER_H

#include <cstdint>
#include <functional>
#include <string>

namespace llmc::codegen {

/// What the cluster body shares with the one-block bodies: the per-vector
/// statements (`fold` of vector `in` at index `v` into m, s; `grads`
/// storing d[v]) and the expressions the emitter builds from the op's types.
struct ClusterRowParts {
  std::string fold, grads;
  std::string weight;      // the gradient's weight w (valid rows)
  std::string zero;        // 0.0f as the gradient's storage type
  std::string logitType;   // storage type of one logit
  bool loss = false;       // store the row's loss
  int64_t sharedBytes = 0; // one CTA's slice
  /// With the last-row reduction (LastRowReduce, ClassifierEmitter.cpp):
  /// the statement that stores `total` (the sum of `row_loss`, over
  /// `count` for a mean) to `out`; storeLoss then also draws the ticket.
  std::string outStore;
  /// The loss store of a value, and a logit's storage value as f32.
  std::function<std::string(const std::string &)> storeLoss, loadLogit;
  /// A loop over this thread's kIters vectors, v = `thread` + i * kBlock.
  std::function<std::string(const std::string &, const std::string &)>
      unrolled;
};

/// Device functions of the cluster kernel (after the block-reduction
/// helpers: it uses warpOnline).
std::string clusterHelpers();

/// The kernel's body (after its opening brace, through its closing one):
/// on sm_90, the cluster; elsewhere (a bundle recompiled for an older GPU)
/// CTA 0 of each cluster alone, with the same bits.
std::string clusterRowsBody(const ClusterRowParts &p);

/// The kernel's attributes before its name.
std::string clusterRowsAttributes();

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_CLASSIFIERCLUSTER_H
