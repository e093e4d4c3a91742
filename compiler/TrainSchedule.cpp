//===- TrainSchedule.cpp - llmc train's options for the runtime loop ------===//
//
// The schedule itself is runtime/LrSchedule.h; both trainers and a resumed
// run take it from here, so their rates are the same.
//
//===----------------------------------------------------------------------===//
#include "compiler/Train.h"
#include "runtime/MaskedDiffusion.h"

namespace llmc {

LrSchedule scheduleOf(const TrainConfig &cfg) {
  LrSchedule s;
  s.lr = cfg.lr;
  s.warmup = cfg.warmup;
  s.decay = cfg.decay;
  s.decaySteps = cfg.decaySteps > 0 ? cfg.decaySteps : cfg.steps;
  s.minLr = cfg.minLr;
  return s;
}

double learningRateAt(const TrainConfig &cfg, int64_t step) {
  return scheduleOf(cfg).at(step);
}

TrainOptions loopOptions(const TrainConfig &cfg) {
  TrainOptions o;
  o.steps = cfg.steps;
  o.schedule = scheduleOf(cfg);
  o.seed = cfg.seed;
  o.valEvery = cfg.valEvery;
  o.valBatches = cfg.valBatches;
  o.saveEvery = cfg.saveEvery;
  o.checkpointDir = cfg.checkpointDir;
  o.keep = cfg.keep;
  o.resume = cfg.resume;
  o.modelName = cfg.model;
  o.onNan = cfg.onNan;
  o.nanPatience = cfg.nanPatience;
  o.detectAnomaly = cfg.detectAnomaly;
  o.logJson = cfg.logJson;
  o.progress = cfg.progress;
  o.peakFlops = cfg.peakTflops * 1e12;
  o.nanGateStep = cfg.injectNanOp.empty() ? 0 : cfg.injectNanStep;
  return o;
}

Status withDataMode(const TrainConfig &cfg, StepEngine &engine,
                    std::unique_ptr<MaskedDiffusionEngine> &masked) {
  std::string pMask;
  LLMC_RETURN_IF_ERROR(checkDataInputs(engine, cfg.maskedDiffusion, pMask));
  if (!cfg.maskedDiffusion)
    return Status::ok();
  // The masking stream's seed is the run's --seed (the checkpoint's `rng`);
  // its position is the engine's checkpointed draw count.
  masked = std::make_unique<MaskedDiffusionEngine>(engine, pMask, cfg.seed,
                                                   cfg.maskEps);
  return Status::ok();
}

} // namespace llmc
