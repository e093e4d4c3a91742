//===- TrainLog.cpp - The lines llmc train prints -------------------------===//
#include "compiler/TrainLog.h"

#include <cstdio>

namespace llmc {

std::string formatStepLine(const StepLog &log) {
  double tokPerSec = log.ms > 0 ? log.tokens / (log.ms / 1000.0) : 0.0;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "step %lld | loss %.6f | lr %.4e | ms %.2f | tok/s %.0f",
                static_cast<long long>(log.step + 1), log.loss, log.lr, log.ms,
                tokPerSec);
  return buf;
}

std::string formatValidationLine(int64_t step, double loss) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "val step %lld | loss %.6f",
                static_cast<long long>(step + 1), loss);
  return buf;
}

void printStepLine(const StepLog &log) {
  std::printf("%s\n", formatStepLine(log).c_str());
  std::fflush(stdout);
}

void printValidationLine(int64_t step, double loss) {
  std::printf("%s\n", formatValidationLine(step, loss).c_str());
  std::fflush(stdout);
}

} // namespace llmc
