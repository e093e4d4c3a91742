//===- TrainLog.cpp - The lines llmc train prints -------------------------===//
#include "runtime/TrainLog.h"

#include <cmath>
#include <cstdio>

namespace llmc {

double tokensPerSecond(const StepLog &log) {
  return log.ms > 0 ? log.tokens / (log.ms / 1000.0) : 0.0;
}

std::string formatStepLine(const StepLog &log) {
  char buf[320];
  int n = std::snprintf(buf, sizeof buf, "step %lld | loss %.6f",
                        static_cast<long long>(log.step + 1), log.loss);
  if (log.hasGradNorm)
    n += std::snprintf(buf + n, sizeof buf - n, " | grad norm %.4f",
                       log.gradNorm);
  n += std::snprintf(buf + n, sizeof buf - n,
                     " | lr %.4e | ms %.2f | tok/s %.0f", log.lr, log.ms,
                     tokensPerSecond(log));
  if (log.mfu >= 0)
    n += std::snprintf(buf + n, sizeof buf - n, " | mfu %.2f%%",
                       100.0 * log.mfu);
  if (log.hasLossScale)
    n += std::snprintf(buf + n, sizeof buf - n, " | scale %g | skipped %lld%s",
                       log.lossScale,
                       static_cast<long long>(log.scalerSkipped),
                       log.overflow ? " | overflow: update skipped" : "");
  if (log.skipped)
    std::snprintf(buf + n, sizeof buf - n, " | update skipped");
  return buf;
}

static std::string number(double x, const char *format = "%.17g") {
  if (!std::isfinite(x))
    return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

std::string formatStepJson(const StepLog &log) {
  return "{\"step\": " + std::to_string(log.step + 1) +
         ", \"loss\": " + number(log.loss) + ", \"grad_norm\": " +
         (log.hasGradNorm ? number(log.gradNorm) : "null") +
         ", \"lr\": " + number(log.lr) + ", \"ms\": " + number(log.ms, "%.3f") +
         ", \"data_ms\": " + number(log.dataMs, "%.3f") +
         ", \"tokens_per_s\": " + number(tokensPerSecond(log), "%.1f") +
         ", \"mfu\": " + (log.mfu >= 0 ? number(log.mfu, "%.6f") : "null") +
         ", \"skipped\": " + (log.skipped ? "true" : "false") +
         (log.hasLossScale
              ? ", \"loss_scale\": " + number(log.lossScale) +
                    ", \"overflow\": " + (log.overflow ? "true" : "false") +
                    ", \"scaler_skipped\": " +
                    std::to_string(log.scalerSkipped)
              : std::string()) +
         "}";
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

std::string formatProgress(int64_t done, int64_t total, double secondsLeft) {
  constexpr int kWidth = 30;
  double frac = total > 0 ? static_cast<double>(done) / total : 1.0;
  int filled = static_cast<int>(frac * kWidth);
  std::string bar(filled, '#');
  bar.append(kWidth - filled, '.');
  long long s = std::isfinite(secondsLeft) && secondsLeft > 0
                    ? static_cast<long long>(secondsLeft + 0.5)
                    : 0;
  char buf[160];
  std::snprintf(buf, sizeof buf, "[%s] %3.0f%% %lld/%lld ETA %lldh%02lldm%02llds",
                bar.c_str(), 100.0 * frac, static_cast<long long>(done),
                static_cast<long long>(total), s / 3600, s / 60 % 60, s % 60);
  return buf;
}

} // namespace llmc
