//===- TrainSchedule.cpp - Learning-rate schedule of `llmc train` ---------===//
#include "compiler/Train.h"

namespace llmc {

double learningRateAt(const TrainConfig &cfg, int64_t step) {
  // Linear warmup from lr/warmup to lr, then constant. The rate is a runtime
  // input of the step, so a schedule never recompiles anything.
  if (cfg.warmup > 0 && step < cfg.warmup)
    return cfg.lr * static_cast<double>(step + 1) /
           static_cast<double>(cfg.warmup);
  return cfg.lr;
}

} // namespace llmc
