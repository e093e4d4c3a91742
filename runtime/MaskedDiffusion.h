//===- MaskedDiffusion.h - The masked-diffusion data mode ---------*- C++ -*-===//
//
// `llmc train --data-mode masked-diffusion` trains a LLaDA-style
// masked-diffusion LM (docs/trainer.md, "Data modes"). The model's loss
// graph takes the clean tokens, a mask and the masking probability as data
// (test/models/export_llada.py):
//
//   idx    [B, T] int    the clean tokens
//   mask   [B, T] int    1 where the token is masked (the graph replaces it
//                        by its mask id and scores it)
//   p_mask [B, T] float  (1 - eps) t + eps of the token's sequence
//
// and this mode draws the masking of each batch: per sequence
// t ~ U(eps, 1), p = (1 - eps) t + eps, and each token masked with
// probability p. The draw is a pure function of (seed, draw index, b, l)
// (SplitMix64 over a counter), so the same batch index gives the same mask
// on the CPU and the GPU, and the draw index is training state: the engine
// below keeps it as the checkpoint tensor `masked_diffusion.draws`, so a
// resumed run draws what the uninterrupted run would have drawn.
//
// MaskedDiffusionEngine wraps the step engine of either device. An engine
// that draws masks itself (StepEngine::drawMasksOnDevice: the GPU's, with a
// kernel on its stream, runtime/MaskedDiffusionDevice.h) is told the draw;
// for any other the host draws and feeds the mask as the engine's second
// integer input (the "targets") and p_mask through
// StepEngine::setFloatInput.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MASKEDDIFFUSION_H
#define LLMC_RUNTIME_MASKEDDIFFUSION_H

#include "runtime/Trainer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llmc {

/// One batch's masking: `mask` (0/1) and `pMask`, both [batch, seq], drawn
/// for draw number `draw` of the stream `seed`. eps in (0, 1).
void drawMasking(uint64_t seed, uint64_t draw, int64_t batch, int64_t seq,
                 double eps, std::vector<int64_t> &mask,
                 std::vector<float> &pMask);

/// Checks `engine`'s data inputs against the data mode: next-token
/// training feeds no float input; masked diffusion needs exactly one (its
/// name goes to `pMaskInput`). The errors say which mode the model needs.
Status checkDataInputs(const StepEngine &engine, bool maskedDiffusion,
                       std::string &pMaskInput);

class MaskedDiffusionEngine : public StepEngine {
public:
  /// `pMaskInput` names the engine's float [B, T] input.
  MaskedDiffusionEngine(StepEngine &inner, std::string pMaskInput,
                        uint64_t seed, double eps);

  std::string description() const override { return inner_.description(); }
  int64_t batch() const override { return inner_.batch(); }
  int64_t seq() const override { return inner_.seq(); }
  int64_t vocab() const override { return inner_.vocab(); }
  double flopsPerToken() const override { return inner_.flopsPerToken(); }
  bool canSkipUpdate() const override { return inner_.canSkipUpdate(); }
  std::vector<std::string> floatInputs() const override {
    return inner_.floatInputs();
  }

  /// Trains on `tokens` (the clean batch; `targets`, the next-token
  /// targets of the data loader, are not used) with the next draw.
  Status step(const std::vector<int64_t> &tokens,
              const std::vector<int64_t> &targets, double lr, int64_t updates,
              bool skipNonFinite, StepResult &result) override;
  /// Validation draws from a stream of its own that restarts with each
  /// pass, so every pass scores the same masks and losses compare.
  Status evalLoss(const std::vector<int64_t> &tokens,
                  const std::vector<int64_t> &targets, double &loss) override;
  Status beginValidation() override;
  Status endValidation() override { return inner_.endValidation(); }
  Status setNanGate(double value) override {
    return inner_.setNanGate(value);
  }
  Status findAnomaly(const std::vector<int64_t> &tokens,
                     const std::vector<int64_t> &targets, double lr,
                     std::string &where) override;

  /// The inner engine's state, then `masked_diffusion.draws` (I64, rank 0).
  std::vector<StateTensor> stateTensors() const override;
  Status readState(const StateTensor &tensor,
                   std::vector<uint8_t> &bytes) override;
  Status writeState(const StateTensor &tensor,
                    const std::vector<uint8_t> &bytes) override;

  static constexpr const char *kDrawsTensor = "masked_diffusion.draws";
  uint64_t draws() const { return draws_; }

private:
  Status feed(uint64_t stream, uint64_t draw, std::vector<int64_t> &mask);

  StepEngine &inner_;
  std::string pMaskInput_;
  uint64_t seed_;
  double eps_;
  uint64_t draws_ = 0;    // training draws so far (checkpointed)
  uint64_t valDraws_ = 0; // draws in the current validation pass
  // The last training draw's mask, for findAnomaly's replay of that step.
  std::vector<int64_t> lastMask_;
  uint64_t lastDraw_ = 0;
};

} // namespace llmc

#endif // LLMC_RUNTIME_MASKEDDIFFUSION_H
