//===- TrainLog.h - The lines llmc train prints -----------------*- C++ -*-===//
//
// One printer for the CPU and the GPU trainer, so that their logs compare
// line by line:
//
//   step 1 | loss 5.545177 | lr 1.0000e-03 | ms 12.34 | tok/s 2654
//   val step 10 | loss 5.123456
//
// Steps count from 1 in the log (the first step is "step 1").
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_TRAINLOG_H
#define LLMC_COMPILER_TRAINLOG_H

#include <cstdint>
#include <string>

namespace llmc {

struct StepLog {
  int64_t step = 0; // 0-based index; printed as step + 1
  double loss = 0;
  double lr = 0;
  double ms = 0;      // wall time of the step
  int64_t tokens = 0; // tokens the step consumed (B * T)
};

std::string formatStepLine(const StepLog &log);
/// `step` is 0-based like StepLog::step: the step after which it ran.
std::string formatValidationLine(int64_t step, double loss);

/// The line on stdout, flushed, so that a log follows the run.
void printStepLine(const StepLog &log);
void printValidationLine(int64_t step, double loss);

} // namespace llmc

#endif // LLMC_COMPILER_TRAINLOG_H
