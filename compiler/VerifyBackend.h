//===- VerifyBackend.h - Where `llmc verify` runs the step ------*- C++ -*-===//
//
// `llmc verify` compares one training step and ten AdamW steps against a
// PyTorch reference; the comparison and the report (VerifyCommand.cpp) are
// the same whatever runs the step. A backend only computes: the CPU one on
// the reference evaluator (VerifyCpu.cpp), the CUDA one on the compiled GPU
// plan (VerifyCuda.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_VERIFYBACKEND_H
#define LLMC_COMPILER_VERIFYBACKEND_H

#include "compiler/CpuTrainer.h"
#include "compiler/ModelLoader.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace llmc {

using VerifyBatch = std::map<std::string, RefTensor>;

/// torch.optim.AdamW(lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
/// on every parameter, no clipping: the reference file's optimizer.
OptimizerConfig referenceAdamW();
constexpr double kReferenceLr = 1e-3;

class VerifyBackend {
public:
  virtual ~VerifyBackend() = default;

  /// The step's data inputs in argument order, to type the reference batch.
  virtual const std::vector<StepInput> &inputs() const = 0;

  /// The loss on `batch` at the initial parameters and, unless the backend
  /// was opened loss-only, every trainable parameter's gradient norm by its
  /// graph name. Failure: the error has been printed.
  virtual mlir::FailureOr<double>
  lossAndGradNorms(const VerifyBatch &batch,
                   std::map<std::string, double> &gradNorms) = 0;

  /// The losses of `steps` AdamW steps (referenceAdamW, kReferenceLr) on
  /// `batch` from the initial parameters and fresh optimizer state, each
  /// taken before its update.
  virtual mlir::FailureOr<std::vector<double>>
  adamwLosses(const VerifyBatch &batch, size_t steps) = 0;

  /// "NAME [real] -> [padded]" for each parameter llmc-pad-shapes padded
  /// (docs/padding.md); the checks see the real shapes either way.
  virtual std::vector<std::string> paddedParameters() const { return {}; }
};

/// "NAME [real] -> [padded]".
std::string paddingLine(const std::string &name,
                        const std::vector<int64_t> &real,
                        const std::vector<int64_t> &padded);

/// `lossOnly`: an exporter-optimized graph, only its @forward loss is
/// checked. Null: the error has been printed.
/// `precision`: the llmc-lower-precision options the step is built with.
std::unique_ptr<VerifyBackend>
openCpuVerifyBackend(const std::string &model, const ModelOptions &options,
                     bool lossOnly, const PrecisionConfig &precision,
                     const RecomputeConfig &recompute = {});
std::unique_ptr<VerifyBackend>
openCudaVerifyBackend(const std::string &model, const ModelOptions &options,
                      bool lossOnly, const PrecisionConfig &precision,
                      const RecomputeConfig &recompute = {});

/// How far the GELU epilogue's rounding moves @forward's loss on `batch`
/// (docs/precision.md): |L(on) - L(off)| / |L(off)|, both on the reference
/// evaluator, with the GELU groups of the default fusion (on) and without
/// (off, autocast's order). 0 when no GELU epilogue forms (fp32, erf gelu,
/// no gelu) or @forward returns no scalar loss. Failure: printed.
mlir::FailureOr<double> geluRoundingShift(const std::string &model,
                                          const ModelOptions &options,
                                          const PrecisionConfig &precision,
                                          const VerifyBatch &batch);

/// How far PyTorch's eager attention rounding moves @forward's loss on
/// `batch` (docs/verify.md, "Eager attention"): |L(eager) - L| / |L|, both
/// on the reference evaluator, where L(eager) evaluates every attention that
/// was raised from a model's eager code (`llmc.eager`) with the scores and
/// probabilities rounded as autocast rounds the separate ops. 0 (and no
/// evaluation) when no attention carries the mark. Failure: printed.
mlir::FailureOr<double> eagerAttentionShift(const std::string &model,
                                            const ModelOptions &options,
                                            const PrecisionConfig &precision,
                                            const VerifyBatch &batch);

/// The root-sum-square of a tensor's values.
double l2Norm(const RefTensor &t);

} // namespace llmc

#endif // LLMC_COMPILER_VERIFYBACKEND_H
