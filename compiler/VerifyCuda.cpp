//===- VerifyCuda.cpp - `llmc verify --device cuda` -----------------------===//
//
// The CUDA backend of `llmc verify`: the model compiled in memory with the
// reference AdamW (CudaTrainer::open, the GPU pipeline of `llmc train
// --device cuda`), one plan for both checks.
//
// Gradients: the plan keeps a persistent `grad:<param>` buffer for every
// gradient that adamw_update reads (docs/codegen.md, "Memory plan"). The
// gradient step is the AdamW step replayed with lr = 0, which leaves every
// parameter as it was (p -= lr * (m_hat / (sqrt(v_hat) + eps) + wd * p) is
// p at lr 0), and reads those buffers; clipping is off, so they hold the raw
// gradients. Compiling without an optimizer would return the gradients as
// step results instead, but a second plan costs a second NVRTC compile.
// The moments and the step counter that lr = 0 still advances are restored
// from a host copy before the AdamW steps, which start from fresh state.
//
// Loss only (an exporter-optimized graph, whose folded constants are
// parameters that autodiff may not differentiate through, such as a causal
// mask): the eval plan, forward and loss without autodiff or optimizer, as
// the CPU backend evaluates @forward.
//
//===----------------------------------------------------------------------===//
#include "compiler/CudaTrainer.h"
#include "compiler/VerifyBackend.h"
#include "compiler/common/FloatFormats.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <optional>

namespace llmc {

namespace {

constexpr const char *kGradPrefix = "grad:";

std::optional<ElementKind> kindOf(DType type) {
  switch (type) {
  case DType::F32:
    return ElementKind::F32;
  case DType::F16:
    return ElementKind::F16;
  case DType::BF16:
    return ElementKind::BF16;
  case DType::I32:
    return ElementKind::I32;
  case DType::I64:
    return ElementKind::I64;
  case DType::U8:
    return ElementKind::I1;
  default:
    return std::nullopt;
  }
}

mlir::FailureOr<double> failWith(const Status &s) {
  llvm::errs() << "llmc verify: error: " << s.message() << "\n";
  return mlir::failure();
}

class CudaVerifyBackend : public VerifyBackend {
public:
  explicit CudaVerifyBackend(bool lossOnly) : lossOnly_(lossOnly) {}

  Status open(const std::string &model, const ModelOptions &options,
              const PrecisionConfig &precision,
              const RecomputeConfig &recompute) {
    TrainConfig cfg;
    cfg.model = model;
    cfg.modelOptions = options;
    cfg.device = "cuda";
    cfg.optimizer = referenceAdamW();
    cfg.precision = precision;
    cfg.recompute = recompute;
    LLMC_RETURN_IF_ERROR(CudaTrainer::open(
        cfg, trainer_, "verify", lossOnly_ ? PlanKind::Eval : PlanKind::Train));
    const Plan &plan = trainer_->executor().plan();
    // The data inputs in argument order; lr is a scalar slot, not data.
    for (const BufferInfo &b : plan.buffers) {
      if (b.role != BufferRole::Input || plan.findScalar(b.name))
        continue;
      auto kind = kindOf(b.dtype);
      if (!kind)
        return Status::error("input '" + b.name + "' has the dtype " +
                             dtypeName(b.dtype) +
                             ", which verify cannot fill from a reference");
      inputs_.push_back({b.name, RefTensor(*kind, b.shape)});
    }
    return trainer_->saveState(initial_);
  }

  const std::vector<StepInput> &inputs() const override { return inputs_; }

  std::vector<std::string> paddedParameters() const override {
    std::vector<std::string> lines;
    for (const BufferInfo &b : trainer_->executor().plan().buffers)
      if (b.role == BufferRole::Param && !b.realShape.empty())
        lines.push_back(paddingLine(b.name, b.realShape, b.shape));
    return lines;
  }

  mlir::FailureOr<double>
  lossAndGradNorms(const VerifyBatch &batch,
                   std::map<std::string, double> &gradNorms) override {
    double loss = 0;
    if (Status s = start(batch); !s)
      return failWith(s);
    if (Status s = trainer_->run(0, 0.0, loss); !s)
      return failWith(s);
    if (!lossOnly_)
      if (Status s = readGradNorms(gradNorms); !s)
        return failWith(s);
    return loss;
  }

  mlir::FailureOr<std::vector<double>> adamwLosses(const VerifyBatch &batch,
                                                   size_t steps) override {
    std::vector<double> losses;
    if (lossOnly_) { // verify skips these checks for a loss-only graph
      (void)failWith(Status::error("an eval plan takes no AdamW steps"));
      return mlir::failure();
    }
    if (Status s = start(batch); !s) {
      (void)failWith(s);
      return mlir::failure();
    }
    for (size_t i = 0; i < steps; ++i) {
      double loss = 0;
      if (Status s = trainer_->run(static_cast<int64_t>(i), kReferenceLr, loss);
          !s) {
        (void)failWith(s);
        return mlir::failure();
      }
      losses.push_back(loss);
    }
    return losses;
  }

private:
  /// Initial parameters, fresh optimizer state, the batch in the inputs.
  Status start(const VerifyBatch &batch) {
    LLMC_RETURN_IF_ERROR(trainer_->restoreState(initial_));
    for (auto &[name, tensor] : batch) {
      std::vector<double> values(tensor.numElements());
      for (int64_t i = 0; i < tensor.numElements(); ++i)
        values[i] = tensor.getDouble(i);
      LLMC_RETURN_IF_ERROR(trainer_->writeInput(name, values));
    }
    return Status::ok();
  }

  Status readGradNorms(std::map<std::string, double> &norms) {
    for (const BufferInfo &b : trainer_->executor().plan().buffers) {
      if (b.name.rfind(kGradPrefix, 0) != 0)
        continue;
      // A bf16/f16 gradient is one the optimizer reads narrow and widens
      // exactly (llmc-batch-adamw): its norm is the widened values'.
      if (b.dtype != DType::F32 && b.dtype != DType::BF16 &&
          b.dtype != DType::F16)
        return Status::error("gradient '" + b.name + "' is " +
                             dtypeName(b.dtype) +
                             "; verify reads f32, bf16 or f16");
      std::vector<uint8_t> bytes;
      LLMC_RETURN_IF_ERROR(trainer_->executor().readBuffer(b.name, bytes));
      const size_t width = b.dtype == DType::F32 ? 4 : 2;
      size_t n = std::min<size_t>(bytes.size() / width, b.elementCount());
      double sum = 0;
      for (size_t i = 0; i < n; ++i) {
        double v;
        if (width == 4) {
          float f;
          std::memcpy(&f, bytes.data() + 4 * i, 4);
          v = f;
        } else {
          uint16_t h;
          std::memcpy(&h, bytes.data() + 2 * i, 2);
          v = bitsToFloat(h, b.dtype == DType::BF16 ? FloatFormat::BF16
                                                    : FloatFormat::F16);
        }
        sum += v * v;
      }
      norms[b.name.substr(std::strlen(kGradPrefix))] = std::sqrt(sum);
    }
    return Status::ok();
  }

  bool lossOnly_;
  std::unique_ptr<CudaTrainer> trainer_;
  std::vector<StepInput> inputs_;
  CudaTrainer::Snapshot initial_;
};

} // namespace

std::unique_ptr<VerifyBackend>
openCudaVerifyBackend(const std::string &model, const ModelOptions &options,
                      bool lossOnly, const PrecisionConfig &precision,
                      const RecomputeConfig &recompute) {
  std::string why;
  if (!gpuAvailable(why)) {
    llvm::errs() << "llmc verify: error: --device cuda needs a GPU: " << why
                 << "\n";
    return nullptr;
  }
  auto backend = std::make_unique<CudaVerifyBackend>(lossOnly);
  if (Status s = backend->open(model, options, precision, recompute); !s) {
    llvm::errs() << "llmc verify: error: " << s.message() << "\n";
    return nullptr;
  }
  return backend;
}

} // namespace llmc
