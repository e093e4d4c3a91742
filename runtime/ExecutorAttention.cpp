//===- ExecutorAttention.cpp - cuDNN attention steps at load --------------===//
//
// Finalizing a cuDNN plan takes milliseconds (its engine may compile at
// run time), so equal steps share one: the key is everything but the
// buffers. The plans are made before the arena is allocated, because the
// largest plan's workspace is allocated with it (after cuBLASLt's). A plan
// finalized once is kept in the cache directory, the matmul tuning's
// (CudnnPlanCache.h), so that a warm start restores it instead.
//
//===----------------------------------------------------------------------===//
#include "runtime/Executor.h"
#include "runtime/ExecutorAttention.h"
#include "runtime/CudnnPlanCache.h"
#include "runtime/PlanAttention.h"

#include <map>

namespace llmc {

Status Executor::prepareAttention() {
  std::map<std::string, std::shared_ptr<CudnnAttention>> byKey;
  const CudnnPlanCacheOptions cache{tuneDir(), deviceName_ + " " + arch_};
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
    std::shared_ptr<CudnnAttention> &shared = byKey[attentionPlanKey(desc)];
    if (!shared) {
      std::unique_ptr<CudnnAttention> made;
      LLMC_RETURN_IF_ERROR(CudnnAttention::create(desc, made, cache)
                               .withContext(stepContext(i)));
      shared = std::move(made);
      ++attention_->distinct;
      attention_->fromCache += shared->fromCache();
      cudnnWorkspaceBytes_ =
          std::max(cudnnWorkspaceBytes_, shared->workspaceBytes());
    }
    attention_->plans[i] = shared;
  }
  cudnnWorkspaceBytes_ = (cudnnWorkspaceBytes_ + 255) / 256 * 256;
  return Status::ok();
}

} // namespace llmc
