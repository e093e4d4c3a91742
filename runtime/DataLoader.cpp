//===- DataLoader.cpp - Batches of token ids from shards ------------------===//
#include "runtime/DataLoader.h"
#include "runtime/TokenFile.h"

namespace llmc {

Status DataLoader::open(const std::string &path, int64_t batch, int64_t seq,
                        int64_t vocab) {
  if (batch < 1 || seq < 1)
    return Status::error("batch and sequence length must be positive");
  Status s = readTokenFile(path, tokens_);
  if (!s)
    return s;
  size_t need = static_cast<size_t>(batch * seq + 1);
  if (tokens_.size() < need)
    return Status::error("token file '" + path + "' holds " +
                         std::to_string(tokens_.size()) +
                         " tokens; one batch of " + std::to_string(batch) +
                         " x " + std::to_string(seq) + " needs " +
                         std::to_string(need) +
                         " (use a smaller --batch/--seq or more data)");
  if (vocab > 0) {
    for (size_t i = 0; i < tokens_.size(); ++i)
      if (tokens_[i] >= vocab)
        return Status::error("token file '" + path + "' has token " +
                             std::to_string(tokens_[i]) + " at position " +
                             std::to_string(i) +
                             ", outside the model's vocabulary of " +
                             std::to_string(vocab));
  }
  batch_ = batch;
  seq_ = seq;
  position_ = 0;
  return Status::ok();
}

int64_t DataLoader::batchesPerEpoch() const {
  return batch_ * seq_ == 0
             ? 0
             : static_cast<int64_t>((tokens_.size() - 1) / (batch_ * seq_));
}

void DataLoader::next(std::vector<int64_t> &inputs,
                      std::vector<int64_t> &targets) {
  size_t n = static_cast<size_t>(batch_ * seq_);
  if (position_ + n + 1 > tokens_.size())
    position_ = 0;
  inputs.resize(n);
  targets.resize(n);
  for (size_t i = 0; i < n; ++i) {
    inputs[i] = tokens_[position_ + i];
    targets[i] = tokens_[position_ + i + 1];
  }
  position_ += n;
}

} // namespace llmc
