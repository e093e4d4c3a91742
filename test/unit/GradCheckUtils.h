//===- GradCheckUtils.h - Finite-difference gradient checks -----*- C++ -*-===//
//
// A gradient check differentiates a small f64 `@forward` with llmc-autodiff,
// evaluates `@train_step` in the reference evaluator on random arguments and
// compares every gradient element (or an evenly spaced sample of a large
// parameter) with the central difference (L(p + h) - L(p - h)) / 2h of
// `@forward`. In f64 the difference is accurate to about 1e-9 relative, so a
// wrong rule (a missing broadcast sum, a transposed matmul, a sign) fails by
// orders of magnitude more than the tolerance.
//
// lossOf() builds the usual forward: the op under test, then
// `sum(y * r)` with a random input `r`, so that every output element reaches
// the loss with its own weight.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TEST_UNIT_GRADCHECKUTILS_H
#define LLMC_TEST_UNIT_GRADCHECKUTILS_H

#include "compiler/eval/Evaluator.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace llmc::test {

/// `%name: type {llmc.param = "name", ...}`.
std::string param(const std::string &name, const std::string &type);
/// `%name: type {llmc.input = "name"}`.
std::string input(const std::string &name, const std::string &type);

/// `@forward(args..., %r: yType) -> loss = sum(y * r)`, where `body` defines
/// `%y` of `yType` from the arguments.
std::string lossOf(const std::vector<std::string> &args,
                   const std::string &body, const std::string &yType);

struct GradCheckOptions {
  double h = 1e-5;        // finite-difference step
  double rtol = 1e-6;     // relative tolerance
  double atol = 1e-8;     // absolute tolerance
  int maxPerParam = 48;   // elements checked per parameter (evenly spaced)
  double lo = -1, hi = 1; // range of random float arguments
};

class GradCheck : public ::testing::Test {
protected:
  GradCheck();

  /// Runs the check on the @forward of `ir`. Arguments named in `fixed`
  /// (by llmc.param / llmc.input name) take that value; other float
  /// arguments are uniform in [lo, hi]. Returns the number of gradient
  /// elements compared (so a test can assert that it checked something).
  int check(const std::string &ir,
            const std::map<std::string, RefTensor> &fixed = {},
            GradCheckOptions options = {});

  /// The gradients @train_step returns for `args` (by name; all given), in
  /// result order, for closed-form checks (tie rules).
  std::vector<RefTensor>
  gradients(const std::string &ir,
            const std::map<std::string, RefTensor> &args);

  /// Parses `ir` and runs llmc-autodiff; null module on failure (recorded).
  mlir::OwningOpRef<mlir::ModuleOp> differentiate(const std::string &ir);

  mlir::MLIRContext context;
  std::string diagnostics;
};

} // namespace llmc::test

#endif // LLMC_TEST_UNIT_GRADCHECKUTILS_H
