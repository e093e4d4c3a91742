//===- EvalTestUtils.h - Running small IR in the reference evaluator -*- C++
//-*-===//
//
// Tests parse a small MLIR string, evaluate its first function and compare
// with values they compute independently (closed forms or naive loops).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TEST_UNIT_EVALTESTUTILS_H
#define LLMC_TEST_UNIT_EVALTESTUTILS_H

#include "compiler/eval/Evaluator.h"
#include "dialects/llmc/LlmcDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace llmc::test {

class EvalTest : public ::testing::Test {
protected:
  EvalTest() {
    context.loadDialect<mlir::llmc::LlmcDialect, mlir::func::FuncDialect>();
  }

  /// Parses `ir` and returns its first function (null on a parse error).
  mlir::func::FuncOp parse(const std::string &ir) {
    module = mlir::parseSourceString<mlir::ModuleOp>(ir, &context);
    if (!module)
      return nullptr;
    auto funcs = module->getOps<mlir::func::FuncOp>();
    return funcs.empty() ? nullptr : *funcs.begin();
  }

  /// Evaluates the first function of `ir`; failures record the diagnostics
  /// in `diagnostics` and return an empty vector.
  std::vector<RefTensor> run(const std::string &ir,
                             const std::vector<RefTensor> &args) {
    diagnostics.clear();
    mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
      diagnostics += d.str() + "\n";
      return mlir::success();
    });
    mlir::func::FuncOp func = parse(ir);
    if (!func) {
      ADD_FAILURE() << "IR does not parse:\n" << diagnostics;
      return {};
    }
    auto results = evaluate(func, args);
    if (mlir::failed(results))
      return {};
    return *results;
  }

  /// The single result of `ir` on `args` (fails the test if evaluation fails).
  RefTensor run1(const std::string &ir, const std::vector<RefTensor> &args) {
    auto r = run(ir, args);
    if (r.size() != 1) {
      ADD_FAILURE() << "evaluation failed:\n" << diagnostics;
      return RefTensor();
    }
    return r[0];
  }

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string diagnostics;
};

inline RefTensor f32(std::vector<int64_t> shape, std::vector<double> v) {
  return RefTensor::fromFloats(ElementKind::F32, std::move(shape),
                               std::move(v));
}
inline RefTensor i64(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return RefTensor::fromInts(ElementKind::I64, std::move(shape), std::move(v));
}

/// Expects every float of `t` within `tol` of `want` (NaN matches NaN).
inline void expectNear(const RefTensor &t, const std::vector<double> &want,
                       double tol = 1e-6) {
  ASSERT_EQ(t.floats.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (t.floats[i] == want[i])
      continue; // also matches infinities
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(t.floats[i])) << "element " << i;
    else
      EXPECT_NEAR(t.floats[i], want[i], tol) << "element " << i;
  }
}

} // namespace llmc::test

#endif // LLMC_TEST_UNIT_EVALTESTUTILS_H
