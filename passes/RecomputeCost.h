//===- RecomputeCost.h - Modelled time of recomputed forward ops -*- C++ -*-===//
//
// llmc-rematerialize orders its candidates by modelled recompute time per
// byte saved (docs/memory.md, "The order"). The model prices a set of
// forward ops recomputed in the backward as kernel formation and fusion
// will make them: a matmul's FLOPs, attention's FLOPs, the bytes the other
// ops move, a launch per kernel. It reads only the IR's types, so it runs
// before the planner and never calls it.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_RECOMPUTECOST_H
#define LLMC_PASSES_RECOMPUTECOST_H

#include "mlir/IR/Operation.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::llmc::recompute {

/// H100 rates (docs/memory.md): bf16 GEMMs of GPT-2's shapes, the device
/// copy bandwidth, cuDNN's causal attention forward (0.087 ms for B 16 x
/// H 12 x T 1024 x D 64, 25.8 GFLOPs counted as 2 B H T^2 D), a launch.
inline constexpr double kMatmulFlopsPerSecond = 700e12;
inline constexpr double kBytesPerSecond = 2.8e12;
inline constexpr double kAttentionFlopsPerSecond = 296e12;
inline constexpr double kLaunchSeconds = 2e-6;

/// An op that is no kernel: a reshape, or a transpose or split that only
/// connects q, k, v or the output to attention (the folds read and write
/// them at strides).
bool isView(Operation *op);

/// The modelled time of recomputing sets of one function's forward ops.
class CostModel {
public:
  /// `forward`: the function's forward ops; `position`: every op's index
  /// in the body (sums run in that order, so that a copy of the module
  /// prices a set bit for bit as the original does).
  CostModel(const llvm::DenseSet<Operation *> &forward,
            const llvm::DenseMap<Operation *, int64_t> &position)
      : forward(forward), position(position) {}

  /// Seconds to recompute `set`.
  double cost(const llvm::DenseSet<Operation *> &set) const;
  /// cost(set + added) - cost(set), for `added` disjoint from `set`; only
  /// the ops whose price depends on what joined are priced again. `set`
  /// is restored before returning.
  double delta(llvm::DenseSet<Operation *> &set,
               llvm::ArrayRef<Operation *> added) const;

private:
  double local(Operation *op, const llvm::DenseSet<Operation *> &set) const;

  const llvm::DenseSet<Operation *> &forward;
  const llvm::DenseMap<Operation *, int64_t> &position;
};

} // namespace mlir::llmc::recompute

#endif // LLMC_PASSES_RECOMPUTECOST_H
