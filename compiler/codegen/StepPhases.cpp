//===- StepPhases.cpp - Forward, backward or optimizer, per launch --------===//
#include "compiler/codegen/StepPhases.h"

#include "dialects/llmc/LlmcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using ::llmc::StepPhase;

namespace llmc::codegen {

namespace {

/// AppendOptimizer gives every op it makes this location.
bool madeByOptimizer(Location loc) {
  bool found = false;
  loc->walk([&](Location l) {
    if (auto name = dyn_cast<NameLoc>(l); name && name.getName() == "optimizer")
      found = true;
    return found ? WalkResult::interrupt() : WalkResult::advance();
  });
  return found;
}

/// The op a lowered op stands for: its kernel group when it has one.
Operation *groupOf(Operation *op) {
  if (auto group = op->getParentOfType<mlir::llmc::KernelOp>())
    return group;
  return op;
}

/// An argument only the optimizer reads: its state (AdamW moments, the
/// step count) or the learning rate.
bool isOptimizerArgument(func::FuncOp func, Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner()->getParentOp() != func.getOperation())
    return false;
  unsigned i = arg.getArgNumber();
  auto input = func.getArgAttrOfType<StringAttr>(i, "llmc.input");
  return func.getArgAttr(i, "llmc.state") ||
         (input && input.getValue() == "lr");
}

bool isOptimizer(func::FuncOp func, Operation *op) {
  Operation *group = groupOf(op);
  bool found = false;
  group->walk([&](Operation *inner) {
    found = madeByOptimizer(inner->getLoc()) ||
            isa<mlir::llmc::AdamWUpdateOp, mlir::llmc::MultiAdamWUpdateOp>(
                inner) ||
            llvm::any_of(inner->getOperands(), [&](Value v) {
              return isOptimizerArgument(func, v);
            });
    return found ? WalkResult::interrupt() : WalkResult::advance();
  });
  return found;
}

} // namespace

std::vector<StepPhase> stepPhases(func::FuncOp func,
                                  const LoweredFunction &lowered) {
  Value loss;
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [r, v] : llvm::enumerate(ret.getOperands()))
    if (auto slot = func.getResultAttrOfType<StringAttr>(r, "llmc.slot"))
      if (slot.getValue() == "loss")
        loss = v;
  // The last lowered op that produces the loss (a reshape of it counts: it
  // comes right after its producer).
  size_t lossAt = lowered.ops.size();
  if (loss)
    for (auto [k, lo] : llvm::enumerate(lowered.ops))
      if (llvm::is_contained(lo.results, loss) ||
          (loss.getDefiningOp() &&
           groupOf(lo.op) == groupOf(loss.getDefiningOp())))
        lossAt = k;
  std::vector<StepPhase> phases;
  for (auto [k, lo] : llvm::enumerate(lowered.ops))
    phases.push_back(isOptimizer(func, lo.op) ? StepPhase::Optimizer
                     : loss && k > lossAt ? StepPhase::Backward
                                          : StepPhase::Forward);
  return phases;
}

std::string phaseRuns(const ::llmc::Plan &plan) {
  std::string s = "phases:";
  size_t start = 0;
  for (size_t i = 1; i <= plan.steps.size(); ++i) {
    if (i < plan.steps.size() &&
        plan.steps[i].phase == plan.steps[start].phase)
      continue;
    s += std::string(start ? ", " : " ") +
         phaseName(plan.steps[start].phase) + " " + std::to_string(start) +
         (i - 1 > start ? "-" + std::to_string(i - 1) : "");
    start = i;
  }
  return s + "\n";
}

} // namespace llmc::codegen
