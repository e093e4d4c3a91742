//===- DataLoader.h - Batches of token ids from shards ------------*- C++
//-*-===//
//
// llm.c's scheme: a batch is B*T+1 consecutive tokens; inputs are the first
// B*T, targets the same window shifted by one. Batches advance through the
// data and wrap around at its end, so a run of any length is deterministic
// given the data. Used by `llmc train` on the CPU and on the GPU (the
// runtime copies the host batch to the device).
//
// The data is one shard or several (`--data 'train_*.bin'`), read as one
// stream in the order resolveTokenShards gives: a batch may span two
// shards, so a corpus split into shards trains exactly as the same tokens
// in one file. Shards stay on disk; each batch reads its B*T+1 tokens, so
// memory does not grow with the data.
//
// open() checks everything a step could trip over later, on every device:
// each shard's header against its size, that the data holds one batch, and
// that every token is below the model's vocabulary.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_DATALOADER_H
#define LLMC_RUNTIME_DATALOADER_H

#include "runtime/Status.h"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace llmc {

class DataLoader {
public:
  DataLoader() = default;
  DataLoader(const DataLoader &) = delete;
  DataLoader &operator=(const DataLoader &) = delete;
  ~DataLoader();

  /// Opens the shards named by `data` (resolveTokenShards: paths, commas,
  /// globs) and checks that they hold at least one batch and that every
  /// token is below `vocab` (0: no check).
  Status open(const std::string &data, int64_t batch, int64_t seq,
              int64_t vocab = 0);

  /// Fills `inputs` and `targets` (B*T each, row-major [B, T]) with the next
  /// batch. Fails only when a shard changed on disk since open().
  Status next(std::vector<int64_t> &inputs, std::vector<int64_t> &targets);

  /// Back to the first batch (for a validation pass).
  void reset();

  /// The stream position of the next batch, in tokens (a checkpoint keeps
  /// it), and a jump back to one (resuming). Batches read ahead do not
  /// count: the position is that of the next batch next() returns.
  uint64_t position() const { return position_; }
  Status seek(uint64_t position);

  /// From now on, a background thread reads the batch after the one next()
  /// returned while the caller trains on it, so a slow disk hides behind
  /// the step. The batches are the same, in the same order.
  void enablePrefetch();
  /// Test only: every shard read sleeps this long first (a slow disk).
  double readDelayMs = 0;

  uint64_t numTokens() const { return total_; }
  /// Whole batches before the loader wraps around.
  int64_t batchesPerEpoch() const;
  /// The shards in reading order.
  std::vector<std::string> shardPaths() const;

private:
  struct Shard {
    std::string path;
    uint64_t first = 0, count = 0; // position in the stream, tokens
  };
  Status read(uint64_t position, size_t count);
  /// The batch at `position` (wrapping), and the position after it.
  Status fill(uint64_t position, std::vector<int64_t> &inputs,
              std::vector<int64_t> &targets, uint64_t &after);
  void prefetchLoop();
  void stopPrefetch();
  void closeShard();

  std::vector<Shard> shards_;
  uint64_t total_ = 0, position_ = 0;
  int64_t batch_ = 0, seq_ = 0;
  std::vector<uint16_t> window_;
  int fd_ = -1;        // the open shard
  size_t fdShard_ = 0; // its index

  // Prefetch. The worker reads (fd_, window_) only while busy_, which it
  // sets under mu_; next() reads only under mu_ with busy_ false.
  std::thread worker_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool prefetch_ = false, wanted_ = false, busy_ = false, stop_ = false;
  uint64_t stagedAt_ = UINT64_MAX, stagedAfter_ = 0;
  std::vector<int64_t> stagedInputs_, stagedTargets_;
  Status stagedStatus_;
};

} // namespace llmc

#endif // LLMC_RUNTIME_DATALOADER_H
