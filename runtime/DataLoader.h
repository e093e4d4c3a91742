//===- DataLoader.h - Batches of token ids from shards ------------*- C++ -*-===//
//
// llm.c's scheme: a batch is B*T+1 consecutive tokens of a shard; inputs are
// the first B*T, targets the same window shifted by one. Batches advance
// through the shard and wrap around at its end, so a run of any length is
// deterministic given the shard. Used by `llmc train` on the CPU and on the
// GPU (the runtime copies the host batch to the device).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_DATALOADER_H
#define LLMC_RUNTIME_DATALOADER_H

#include "runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llmc {

class DataLoader {
public:
  /// Reads the shard and checks that it holds at least one batch and that
  /// every token is below `vocab` (0: no check).
  Status open(const std::string &path, int64_t batch, int64_t seq,
              int64_t vocab = 0);

  /// Fills `inputs` and `targets` (B*T each, row-major [B, T]) with the next
  /// batch.
  void next(std::vector<int64_t> &inputs, std::vector<int64_t> &targets);

  /// Back to the first batch (for a validation pass).
  void reset() { position_ = 0; }

  size_t numTokens() const { return tokens_.size(); }
  /// Whole batches before the loader wraps around.
  int64_t batchesPerEpoch() const;

private:
  std::vector<uint16_t> tokens_;
  int64_t batch_ = 0, seq_ = 0;
  size_t position_ = 0;
};

} // namespace llmc

#endif // LLMC_RUNTIME_DATALOADER_H
