//===- Passes.h - llmc pass entry points --------------------------*- C++ -*-===//
#ifndef LLMC_PASSES_PASSES_H
#define LLMC_PASSES_PASSES_H

#include "dialects/llmc/LlmcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <functional>

namespace mlir::llmc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// The planned device peak of function `func` of `module`, a copy that the
/// planner may rewrite (kernel formation, fusion): what
/// llmc-rematerialize's budget is compared with. The compiler provides it
/// (compiler/Pipeline.h, plannedPeak); passes/ cannot plan memory itself.
using PlannedPeakFn =
    std::function<FailureOr<uint64_t>(ModuleOp module, StringRef func)>;

/// llmc-rematerialize with a planner for its budget; the registered pass
/// (createRematerializePass()) has none and refuses a budget.
std::unique_ptr<Pass>
createRematerializePass(const RematerializePassOptions &options,
                        PlannedPeakFn plannedPeak);

} // namespace mlir::llmc

#endif // LLMC_PASSES_PASSES_H
