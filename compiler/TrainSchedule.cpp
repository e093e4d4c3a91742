//===- TrainSchedule.cpp - The learning-rate schedule of llmc train -------===//
//
// Linear warmup as llm.c does it: step s < warmup runs at lr * (s + 1) /
// warmup, so the first step already learns; afterwards the rate is constant.
// Both trainers call this, so CPU and GPU runs use the same rates.
//
//===----------------------------------------------------------------------===//
#include "compiler/Train.h"

namespace llmc {

double learningRateAt(const TrainConfig &cfg, int64_t step) {
  if (cfg.warmup > 0 && step < cfg.warmup)
    return cfg.lr * static_cast<double>(step + 1) /
           static_cast<double>(cfg.warmup);
  return cfg.lr;
}

} // namespace llmc
