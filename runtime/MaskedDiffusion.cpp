//===- MaskedDiffusion.cpp - The masked-diffusion data mode ---------------===//
#include "runtime/MaskedDiffusion.h"

#include <cstring>

namespace llmc {

namespace {

uint64_t splitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// U[0, 1) with 53 random bits, a function of (seed, draw, index) alone.
double uniform(uint64_t seed, uint64_t draw, uint64_t index) {
  uint64_t h = splitMix64(splitMix64(splitMix64(seed) ^ draw) ^ index);
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

/// The validation passes' stream, apart from the training draws.
uint64_t validationStream(uint64_t seed) {
  return splitMix64(seed ^ 0x76616c69646174ull); // "validat"
}

} // namespace

void drawMasking(uint64_t seed, uint64_t draw, int64_t batch, int64_t seq,
                 double eps, std::vector<int64_t> &mask,
                 std::vector<float> &pMask) {
  mask.assign(static_cast<size_t>(batch * seq), 0);
  pMask.assign(static_cast<size_t>(batch * seq), 0.0f);
  for (int64_t b = 0; b < batch; ++b) {
    // Index b draws the sequence's t; indices from `batch` on its tokens.
    double t = eps + (1 - eps) * uniform(seed, draw, static_cast<uint64_t>(b));
    // The graph receives p as f32; masking compares against that value.
    float p = static_cast<float>((1 - eps) * t + eps);
    for (int64_t l = 0; l < seq; ++l) {
      size_t i = static_cast<size_t>(b * seq + l);
      pMask[i] = p;
      mask[i] = uniform(seed, draw, static_cast<uint64_t>(batch) + i) <
                        static_cast<double>(p)
                    ? 1
                    : 0;
    }
  }
}

Status checkDataInputs(const StepEngine &engine, bool maskedDiffusion,
                       std::string &pMaskInput) {
  std::vector<std::string> floats = engine.floatInputs();
  if (!maskedDiffusion) {
    if (floats.empty())
      return Status::ok();
    return Status::error(
        "the model has a float [B, T] input '" + floats.front() +
        "', which token shards do not fill; a masked-diffusion model (inputs "
        "idx, mask, p_mask) trains with --data-mode masked-diffusion "
        "(docs/trainer.md)");
  }
  if (floats.size() != 1)
    return Status::error(
        "--data-mode masked-diffusion feeds the model's clean tokens, the "
        "drawn mask (its two integer [B, T] inputs) and p_mask (one float "
        "[B, T] input); the model has " + std::to_string(floats.size()) +
        " float [B, T] inputs");
  pMaskInput = floats.front();
  return Status::ok();
}

MaskedDiffusionEngine::MaskedDiffusionEngine(StepEngine &inner,
                                             std::string pMaskInput,
                                             uint64_t seed, double eps)
    : inner_(inner), pMaskInput_(std::move(pMaskInput)), seed_(seed),
      eps_(eps) {}

Status MaskedDiffusionEngine::feed(uint64_t stream, uint64_t draw,
                                   std::vector<int64_t> &mask) {
  // On the GPU a kernel draws the same masks into the step's buffers, and
  // the step takes no host mask (runtime/MaskedDiffusionDevice.h).
  if (inner_.canDrawMasks()) {
    mask.clear();
    return inner_.drawMasksOnDevice(pMaskInput_, stream, draw, eps_);
  }
  std::vector<float> pMask;
  drawMasking(stream, draw, batch(), seq(), eps_, mask, pMask);
  return inner_.setFloatInput(pMaskInput_, pMask);
}

Status MaskedDiffusionEngine::step(const std::vector<int64_t> &tokens,
                                   const std::vector<int64_t> & /*targets*/,
                                   double lr, int64_t updates,
                                   bool skipNonFinite, StepResult &result) {
  LLMC_RETURN_IF_ERROR(feed(seed_, draws_, lastMask_));
  lastDraw_ = draws_;
  // The draw is used whatever the step's outcome (a skipped step does not
  // replay its masks), as the data position moves on.
  ++draws_;
  return inner_.step(tokens, lastMask_, lr, updates, skipNonFinite, result);
}

Status MaskedDiffusionEngine::beginValidation() {
  valDraws_ = 0;
  return inner_.beginValidation();
}

Status MaskedDiffusionEngine::evalLoss(const std::vector<int64_t> &tokens,
                                       const std::vector<int64_t> &,
                                       double &loss) {
  std::vector<int64_t> mask;
  LLMC_RETURN_IF_ERROR(feed(validationStream(seed_), valDraws_++, mask));
  return inner_.evalLoss(tokens, mask, loss);
}

Status MaskedDiffusionEngine::findAnomaly(const std::vector<int64_t> &tokens,
                                          const std::vector<int64_t> &targets,
                                          double lr, std::string &where) {
  if (tokens.empty()) // the loop's probe for support: the inner engine's
    return inner_.findAnomaly(tokens, targets, lr, where);
  // The bad step is the last one: the same masks again.
  std::vector<int64_t> mask;
  LLMC_RETURN_IF_ERROR(feed(seed_, lastDraw_, mask));
  return inner_.findAnomaly(tokens, mask, lr, where);
}

std::vector<StateTensor> MaskedDiffusionEngine::stateTensors() const {
  std::vector<StateTensor> state = inner_.stateTensors();
  state.push_back({kDrawsTensor, /*optimizer=*/true, DType::I64, {}});
  return state;
}

Status MaskedDiffusionEngine::readState(const StateTensor &tensor,
                                        std::vector<uint8_t> &bytes) {
  if (tensor.name != kDrawsTensor)
    return inner_.readState(tensor, bytes);
  int64_t v = static_cast<int64_t>(draws_);
  bytes.resize(8);
  std::memcpy(bytes.data(), &v, 8);
  return Status::ok();
}

Status MaskedDiffusionEngine::writeState(const StateTensor &tensor,
                                         const std::vector<uint8_t> &bytes) {
  if (tensor.name != kDrawsTensor)
    return inner_.writeState(tensor, bytes);
  int64_t v = 0;
  if (bytes.size() != 8)
    return Status::error(std::string("state tensor '") + kDrawsTensor +
                         "' must hold one int64");
  std::memcpy(&v, bytes.data(), 8);
  if (v < 0)
    return Status::error(std::string("state tensor '") + kDrawsTensor +
                         "' is negative");
  draws_ = static_cast<uint64_t>(v);
  return Status::ok();
}

} // namespace llmc
