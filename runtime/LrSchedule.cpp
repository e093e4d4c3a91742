//===- LrSchedule.cpp - The learning rate of each step --------------------===//
#include "runtime/LrSchedule.h"

#include <algorithm>
#include <cmath>

namespace llmc {

double LrSchedule::at(int64_t step) const {
  if (warmup > 0 && step < warmup)
    return lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (decay == Decay::Constant || decaySteps <= warmup)
    return lr;
  if (step >= decaySteps)
    return minLr;
  // nanoGPT: the decay ratio runs from 0 after warmup to 1 at decaySteps.
  double ratio = static_cast<double>(step - warmup) /
                 static_cast<double>(decaySteps - warmup);
  double coef = decay == Decay::Cosine
                    ? 0.5 * (1.0 + std::cos(M_PI * ratio))
                    : 1.0 - ratio;
  return minLr + coef * (lr - minLr);
}

const char *decayName(LrSchedule::Decay decay) {
  switch (decay) {
  case LrSchedule::Decay::Constant:
    return "constant";
  case LrSchedule::Decay::Cosine:
    return "cosine";
  case LrSchedule::Decay::Linear:
    return "linear";
  }
  return "constant";
}

bool parseDecay(const std::string &name, LrSchedule::Decay &decay) {
  for (auto d : {LrSchedule::Decay::Constant, LrSchedule::Decay::Cosine,
                 LrSchedule::Decay::Linear})
    if (name == decayName(d)) {
      decay = d;
      return true;
    }
  return false;
}

} // namespace llmc
