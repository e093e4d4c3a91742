//===- TrainLog.h - The lines llmc train prints -----------------*- C++ -*-===//
//
// One printer for the CPU and the GPU trainer, so that their logs compare
// line by line:
//
//   step 1 | loss 5.545177 | grad norm 1.2345 | lr 1.0000e-03 | ms 12.34 | tok/s 2654 | mfu 0.01%
//   val step 10 | loss 5.123456
//
// Steps count from 1 in the log (the first step is "step 1"). The grad norm
// appears when the step computes one (--clip-norm), the MFU when the FLOPs
// per token are known. With fp16's loss scaler the line also shows
// "| scale 65536 | skipped 0", and "| overflow: update skipped" on a step
// whose gradients overflowed. `--log-json` writes the same numbers as one JSON
// object per line (formatStepJson).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_TRAINLOG_H
#define LLMC_RUNTIME_TRAINLOG_H

#include <cstdint>
#include <string>

namespace llmc {

struct StepLog {
  int64_t step = 0; // 0-based index; printed as step + 1
  double loss = 0;
  double lr = 0;
  double ms = 0;      // wall time of the step
  double dataMs = 0;  // what the loop waited for the batch before it
  int64_t tokens = 0; // tokens the step consumed (B * T)
  double gradNorm = 0;
  bool hasGradNorm = false;
  double mfu = -1; // < 0: unknown
  bool skipped = false; // a non-finite step whose update was dropped
  // Dynamic loss scaling (fp16): the step's scale, its overflow (update
  // skipped by the scaler) and the scaler's skipped steps so far.
  bool hasLossScale = false;
  double lossScale = 0;
  bool overflow = false;
  int64_t scalerSkipped = 0;
};

double tokensPerSecond(const StepLog &log);

std::string formatStepLine(const StepLog &log);
/// The step as one JSON object (no newline): step, loss, grad_norm, lr, ms,
/// data_ms, tokens_per_s, mfu, skipped (and, with a loss scaler, loss_scale,
/// overflow and scaler_skipped). Non-finite numbers are written as null
/// (JSON has no NaN), so every line parses.
std::string formatStepJson(const StepLog &log);
/// `step` is 0-based like StepLog::step: the step after which it ran.
std::string formatValidationLine(int64_t step, double loss);

/// The line on stdout, flushed, so that a log follows the run.
void printStepLine(const StepLog &log);
void printValidationLine(int64_t step, double loss);

/// "[#######.......] 45% 90/200 ETA 1m02s": the progress bar on a terminal.
std::string formatProgress(int64_t done, int64_t total, double secondsLeft);

} // namespace llmc

#endif // LLMC_RUNTIME_TRAINLOG_H
