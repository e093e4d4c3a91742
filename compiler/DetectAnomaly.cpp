//===- DetectAnomaly.cpp - The first op that made a NaN or an infinity ----===//
//
// `llmc train --detect-anomaly` (docs/trainer.md): when a step's loss or
// gradient norm is not finite, the loop replays that step from the state
// it started from (the CPU engine did not commit it) on the reference
// evaluator, which runs the step unfused, one op at a time in program
// order, and stops at the first op whose result holds a non-finite value.
// That op is named as kernel headers name it (codegen's describeLoc: the
// ONNX node names and the model file position), so the message leads back
// to the model, as PyTorch's autograd anomaly mode does.
//
//===----------------------------------------------------------------------===//
#include "compiler/CpuTrainer.h"
#include "compiler/codegen/Emitters.h"
#include "compiler/eval/Evaluator.h"

#include "llvm/ADT/DenseSet.h"

#include <cmath>

namespace llmc {

namespace {

/// The first non-finite element of a float tensor: its index, or -1.
int64_t firstBad(const RefTensor &t) {
  if (!t.isFloat())
    return -1;
  for (size_t i = 0; i < t.floats.size(); ++i)
    if (!std::isfinite(t.floats[i]))
      return static_cast<int64_t>(i);
  return -1;
}

std::string valueName(double v) {
  return std::isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf";
}

/// "llmc.mul 'nan_gate' / 'gelu_1' (model.onnx:0:0)".
std::string describeOp(mlir::Operation &op) {
  std::vector<std::string> names;
  std::string position;
  codegen::describeLoc(op.getLoc(), names, position);
  std::string s = op.getName().getStringRef().str();
  for (size_t i = 0; i < names.size(); ++i)
    s += (i ? " / '" : " '") + names[i] + "'";
  if (!position.empty())
    s += " (" + position + ")";
  return s;
}

} // namespace

mlir::FailureOr<std::string>
CpuTrainer::firstNonFinite(const std::map<std::string, RefTensor> &batch,
                           double lr) {
  if (mlir::failed(setBatch(batch, lr)))
    return mlir::failure();
  // A NaN the step did not make: carried in by the state or the inputs.
  // (llmc-inject-nan's `nan_gate` input is the tests' fault: the op it
  // gates is what the replay must name.)
  for (unsigned i = 0; i < func_.getNumArguments(); ++i)
    if (int64_t at = firstBad(args_[i]); at >= 0) {
      std::string name = "#" + std::to_string(i);
      if (auto n = func_.getArgAttrOfType<mlir::StringAttr>(i, "llmc.input")) {
        if (n.getValue() == "nan_gate")
          continue;
        name = "'" + n.getValue().str() + "'";
      }
      for (const StateArgument &a : stateArguments())
        if (a.index == i)
          name = "'" + a.name + "'";
      return "argument " + name + " of @" + func_.getSymName().str() +
             ", which holds " + valueName(args_[i].floats[at]) + " at element " +
             std::to_string(at) + " before the step";
    }
  // The gate's own copies are not where the fault is: under bf16,
  // LowerPrecision casts the rank-0 `nan_gate` to the gated op's type before
  // the multiply, and that cast would be the first op holding a NaN. The
  // values made from the gate alone (its casts, broadcasts) are skipped, so
  // the replay names the multiply, which carries the gated op's node.
  llvm::DenseSet<mlir::Value> fromGate;
  for (unsigned i = 0; i < func_.getNumArguments(); ++i)
    if (auto n = func_.getArgAttrOfType<mlir::StringAttr>(i, "llmc.input");
        n && n.getValue() == "nan_gate")
      fromGate.insert(func_.getArgument(i));
  auto onlyFromGate = [&](mlir::Operation &op) {
    if (fromGate.empty() || op.getNumOperands() == 0)
      return false;
    for (mlir::Value v : op.getOperands())
      if (!fromGate.contains(v))
        return false;
    for (mlir::Value r : op.getResults())
      fromGate.insert(r);
    return true;
  };
  std::string found;
  auto results = evaluate(
      func_, args_,
      [&](mlir::Operation &op, const std::vector<RefTensor> &values) {
        if (onlyFromGate(op))
          return false;
        for (size_t r = 0; r < values.size(); ++r)
          if (int64_t at = firstBad(values[r]); at >= 0) {
            found = describeOp(op) + ": result #" + std::to_string(r) +
                    " holds " + valueName(values[r].floats[at]) +
                    " at element " + std::to_string(at);
            return true;
          }
        return false;
      });
  if (mlir::failed(results))
    return mlir::failure();
  return found;
}

} // namespace llmc
