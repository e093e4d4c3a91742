//===- SinkRotaryTransposes.cpp - RoPE before the heads are transposed ----===//
//
// Llama-style exports rotate q and k after transposing them to attention's
// [B, H, T, D]: `rotary(transpose(view(x W)), cos, sin)`. The transpose sits
// between the projection and attention, so `llmc-fold-attention-transposes`
// cannot make attention `seq_major`, and every layer keeps a full copy of
// q, k, v and of their gradients (GPT-2 had 8 such transposes a layer,
// 1.6 ms a 124M step at the H100's bandwidth; docs/fusion.md). RoPE is
// elementwise over its input with tables that broadcast, so it commutes
// with a transpose that keeps the feature dim last: rotate first, in the
// projection's own layout, with the tables viewed in that layout, and
// transpose after; the transpose then sits right before attention.
//
//   rotary(transpose(x, p), cos, sin)
//     => transpose(rotary(x, view(cos), view(sin)), p)
//
// The tables must get there by a view (a reshape that moves only size-1
// dims, as [1, 1, T, R] -> [1, T, 1, R]); a table that would need a real
// transpose keeps the op as it is. Runs after raising (which forms the
// rotary) and before autodiff, so that the backward is built in the same
// layout. The products are the same: only the addressing changes.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/llmc/LlmcOps.h"

namespace mlir::llmc {
#define GEN_PASS_DEF_SINKROTARYTRANSPOSESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

/// The shape `table` has when viewed in the layout before transpose `perm`,
/// or nothing when that takes more than moving size-1 dims.
std::optional<SmallVector<int64_t>> tableBeforeTranspose(RankedTensorType table,
                                                         ArrayRef<int64_t> perm) {
  int64_t rank = perm.size();
  if (table.getRank() > rank || !table.hasStaticShape())
    return std::nullopt;
  // The table broadcasts from the right: pad it to the input's rank.
  SmallVector<int64_t> padded(rank - table.getRank(), 1);
  llvm::append_range(padded, table.getShape());
  // Result dim k of the transpose is input dim perm[k].
  SmallVector<int64_t> before(rank, 1);
  for (int64_t k = 0; k < rank; ++k)
    before[perm[k]] = padded[k];
  // A view keeps the order of the dims that are not 1.
  int64_t last = -1;
  for (int64_t k = 0; k < rank; ++k) {
    if (padded[k] == 1)
      continue;
    if (perm[k] < last)
      return std::nullopt;
    last = perm[k];
  }
  return before;
}

struct SinkRotaryTransposesPass
    : mlir::llmc::impl::SinkRotaryTransposesPassBase<
          SinkRotaryTransposesPass> {
  void runOnOperation() override {
    SmallVector<RotaryOp> rotaries;
    getOperation().walk([&](RotaryOp op) { rotaries.push_back(op); });
    for (RotaryOp op : rotaries) {
      auto t = op.getInput().getDefiningOp<TransposeOp>();
      if (!t)
        continue;
      ArrayRef<int64_t> perm = t.getPermutation();
      int64_t rank = perm.size();
      if (perm.back() != rank - 1)
        continue; // the features must stay the last dim
      auto cosType = cast<RankedTensorType>(op.getCos().getType());
      auto sinType = cast<RankedTensorType>(op.getSin().getType());
      auto cosShape = tableBeforeTranspose(cosType, perm);
      auto sinShape = tableBeforeTranspose(sinType, perm);
      if (!cosShape || !sinShape)
        continue;
      OpBuilder builder(op);
      Location loc = op.getLoc();
      Value cos = builder.create<ReshapeOp>(
          loc, cosType.clone(*cosShape), op.getCos());
      Value sin = builder.create<ReshapeOp>(
          loc, sinType.clone(*sinShape), op.getSin());
      auto rotated = builder.create<RotaryOp>(loc, t.getInput(), cos, sin,
                                              op.getInterleavedAttr());
      Value back = builder.create<TransposeOp>(t.getLoc(), rotated, perm);
      op.getResult().replaceAllUsesWith(back);
      op.erase();
      if (t->use_empty())
        t.erase();
    }
  }
};

} // namespace
