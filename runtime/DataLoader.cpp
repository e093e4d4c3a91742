//===- DataLoader.cpp - Batches of token ids from shards ------------------===//
#include "runtime/DataLoader.h"
#include "runtime/TokenFile.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace llmc {

DataLoader::~DataLoader() {
  stopPrefetch();
  closeShard();
}

void DataLoader::closeShard() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

Status DataLoader::open(const std::string &data, int64_t batch, int64_t seq,
                        int64_t vocab) {
  closeShard();
  shards_.clear();
  total_ = position_ = 0;
  if (batch < 1 || seq < 1)
    return Status::error("batch and sequence length must be positive");
  std::vector<std::string> paths;
  LLMC_RETURN_IF_ERROR(resolveTokenShards(data, paths));
  for (const std::string &path : paths) {
    uint64_t count = 0;
    LLMC_RETURN_IF_ERROR(readTokenFileHeader(path, count));
    // The same check on the CPU and the GPU, before the first step: a bad
    // token found 93 steps in costs the run.
    if (vocab > 0)
      LLMC_RETURN_IF_ERROR(checkTokenVocabulary(path, vocab));
    shards_.push_back({path, total_, count});
    total_ += count;
  }
  // batch * seq cannot overflow: both are the dims of a tensor the model
  // has already accepted; compare in double anyway so no product wraps.
  double need = static_cast<double>(batch) * static_cast<double>(seq) + 1;
  if (static_cast<double>(total_) < need) {
    std::string what =
        shards_.size() == 1
            ? "token file '" + shards_[0].path + "' holds "
            : std::to_string(shards_.size()) + " token files hold ";
    return Status::error(what + std::to_string(total_) +
                         " tokens; one batch of " + std::to_string(batch) +
                         " x " + std::to_string(seq) + " needs " +
                         std::to_string(batch * seq + 1) +
                         " (use a smaller --batch/--seq or more data)");
  }
  batch_ = batch;
  seq_ = seq;
  return Status::ok();
}

std::vector<std::string> DataLoader::shardPaths() const {
  std::vector<std::string> paths;
  for (const Shard &s : shards_)
    paths.push_back(s.path);
  return paths;
}

int64_t DataLoader::batchesPerEpoch() const {
  return batch_ * seq_ == 0
             ? 0
             : static_cast<int64_t>((total_ - 1) /
                                    static_cast<uint64_t>(batch_ * seq_));
}

/// Reads tokens [position, position + count) of the stream into window_.
Status DataLoader::read(uint64_t position, size_t count) {
  window_.resize(count);
  // The shard holding `position`: the last one that starts at or before it.
  auto it =
      std::upper_bound(shards_.begin(), shards_.end(), position,
                       [](uint64_t p, const Shard &s) { return p < s.first; });
  size_t index = static_cast<size_t>(it - shards_.begin()) - 1;
  size_t done = 0;
  while (done < count) {
    const Shard &shard = shards_[index];
    uint64_t offset = position + done - shard.first;
    size_t n = static_cast<size_t>(
        std::min<uint64_t>(count - done, shard.count - offset));
    if (n == 0) { // an empty shard, or the end of this one
      ++index;
      continue;
    }
    if (fd_ < 0 || fdShard_ != index) {
      closeShard();
      fd_ = ::open(shard.path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0)
        return Status::error("cannot open token file '" + shard.path +
                             "': " + std::strerror(errno));
      fdShard_ = index;
    }
    char *dst = reinterpret_cast<char *>(window_.data() + done);
    size_t bytes = n * sizeof(uint16_t);
    uint64_t at = kTokenFileHeaderBytes + offset * sizeof(uint16_t);
    while (bytes > 0) {
      ssize_t got = ::pread(fd_, dst, bytes, static_cast<off_t>(at));
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        return Status::error(
            "cannot read token file '" + shard.path + "': " +
            (got < 0 ? std::strerror(errno)
                     : "it is shorter than when training started"));
      dst += got;
      at += static_cast<uint64_t>(got);
      bytes -= static_cast<size_t>(got);
    }
    done += n;
  }
  return Status::ok();
}

Status DataLoader::fill(uint64_t position, std::vector<int64_t> &inputs,
                        std::vector<int64_t> &targets, uint64_t &after) {
  size_t n = static_cast<size_t>(batch_ * seq_);
  if (position + n + 1 > total_)
    position = 0;
  if (readDelayMs > 0)
    std::this_thread::sleep_for(
        std::chrono::duration<double, std::milli>(readDelayMs));
  LLMC_RETURN_IF_ERROR(read(position, n + 1));
  inputs.resize(n);
  targets.resize(n);
  for (size_t i = 0; i < n; ++i) {
    inputs[i] = window_[i];
    targets[i] = window_[i + 1];
  }
  after = position + n;
  return Status::ok();
}

Status DataLoader::next(std::vector<int64_t> &inputs,
                        std::vector<int64_t> &targets) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !busy_; });
  Status s;
  if (prefetch_ && stagedAt_ == position_ && stagedStatus_) {
    inputs.swap(stagedInputs_);
    targets.swap(stagedTargets_);
    position_ = stagedAfter_;
  } else {
    uint64_t after = 0;
    s = fill(position_, inputs, targets, after);
    if (s)
      position_ = after;
  }
  stagedAt_ = UINT64_MAX;
  if (prefetch_ && s) {
    wanted_ = true;
    cv_.notify_all();
  }
  return s;
}

void DataLoader::reset() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !busy_; });
  position_ = 0;
  stagedAt_ = UINT64_MAX;
}

void DataLoader::enablePrefetch() {
  std::lock_guard<std::mutex> lock(mu_);
  if (prefetch_)
    return;
  prefetch_ = true;
  wanted_ = true;
  worker_ = std::thread([this] { prefetchLoop(); });
}

void DataLoader::prefetchLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return wanted_ || stop_; });
    if (stop_)
      return;
    wanted_ = false;
    busy_ = true;
    uint64_t at = position_;
    lock.unlock();
    uint64_t after = 0;
    Status s = fill(at, stagedInputs_, stagedTargets_, after);
    lock.lock();
    busy_ = false;
    // A seek or reset while reading: the batch is for a stale position and
    // stays unused (stagedAt_ no longer matches).
    stagedAt_ = at;
    stagedAfter_ = after;
    stagedStatus_ = s;
    cv_.notify_all();
  }
}

void DataLoader::stopPrefetch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (worker_.joinable())
    worker_.join();
}

Status DataLoader::seek(uint64_t position) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !busy_; });
  stagedAt_ = UINT64_MAX;
  if (position >= total_)
    return Status::error("data position " + std::to_string(position) +
                         " is past the end of the training data (" +
                         std::to_string(total_) +
                         " tokens): is --data the data the run was started on?");
  position_ = position;
  return Status::ok();
}

} // namespace llmc
