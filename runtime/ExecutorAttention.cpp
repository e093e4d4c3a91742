//===- ExecutorAttention.cpp - cuDNN attention steps at load --------------===//
//
// Finalizing a cuDNN plan takes milliseconds (its engine may compile at
// run time), so equal steps share one: the key is everything but the
// buffers. The plans are made before the arena is allocated, because the
// largest plan's workspace is allocated with it (after cuBLASLt's).
//
//===----------------------------------------------------------------------===//
#include "runtime/Executor.h"
#include "runtime/ExecutorAttention.h"
#include "runtime/PlanAttention.h"

#include <map>

namespace llmc {

namespace {

std::string planKey(const CudnnAttentionDesc &d) {
  std::string key = describe(d) + " scale " + std::to_string(d.scale);
  for (const Strides4 *s : {&d.q, &d.k, &d.v, &d.o, &d.dO, &d.dQ, &d.dK, &d.dV})
    for (int64_t x : *s)
      key += " " + std::to_string(x);
  return key;
}

} // namespace

Status Executor::prepareAttention() {
  std::map<std::string, std::shared_ptr<CudnnAttention>> byKey;
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    const auto *step = std::get_if<AttentionStep>(&plan_.steps[i].op);
    if (!step)
      continue;
    if (!attention_) {
      attention_ = std::make_unique<PreparedAttention>();
      attention_->plans.resize(plan_.steps.size());
      attention_->args.resize(plan_.steps.size());
    }
    CudnnAttentionDesc desc = attentionDesc(*step);
    std::shared_ptr<CudnnAttention> &shared = byKey[planKey(desc)];
    if (!shared) {
      std::unique_ptr<CudnnAttention> made;
      LLMC_RETURN_IF_ERROR(
          CudnnAttention::create(desc, made).withContext(stepContext(i)));
      shared = std::move(made);
      ++attention_->distinct;
      cudnnWorkspaceBytes_ =
          std::max(cudnnWorkspaceBytes_, shared->workspaceBytes());
    }
    attention_->plans[i] = shared;
  }
  cudnnWorkspaceBytes_ = (cudnnWorkspaceBytes_ + 255) / 256 * 256;
  return Status::ok();
}

} // namespace llmc
