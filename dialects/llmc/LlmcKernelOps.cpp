//===- LlmcKernelOps.cpp - Verifier of llmc.kernel ------------------------===//
//
// A group is well formed when its one block takes no arguments, holds at
// least one op besides the yield (a group that launches nothing is not a
// group), and yields exactly the group's result types; `in_place` and
// `llmc.overwrites` (llmc-fuse-classifier: a discardable attribute, so that
// adding it changed no generated header) have one entry per result,
// `llmc.overwrites` naming a group input of the result's byte size.
//
//===----------------------------------------------------------------------===//
#include "dialects/llmc/LlmcOps.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::llmc;

/// The distinct values `group`'s ops read from outside it, in first-use
/// order (passes/FusionUtils.h's groupInputs, which the dialect cannot
/// depend on): what llmc.overwrites indexes.
static SmallVector<Value> groupInputs(KernelOp group) {
  llvm::SetVector<Value> inputs;
  for (Operation &op : group.getGroupOps())
    for (Value v : op.getOperands())
      if (v.getParentRegion() != &group.getBody())
        inputs.insert(v);
  return SmallVector<Value>(inputs.begin(), inputs.end());
}

LogicalResult KernelOp::verify() {
  Block &block = getBody().front();
  if (block.getNumArguments() != 0)
    return emitOpError("body takes no block arguments, it has ")
           << block.getNumArguments();
  auto yield = dyn_cast<YieldOp>(block.back());
  if (!yield)
    return emitOpError("body must end in llmc.yield");
  if (&block.front() == yield.getOperation())
    return emitOpError("holds no op: a group launches something");
  if (yield.getNumOperands() != getNumResults())
    return emitOpError("yields ") << yield.getNumOperands() << " values for "
                                  << getNumResults() << " results";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(yield.getOperandTypes(), getResultTypes())))
    if (std::get<0>(pair) != std::get<1>(pair))
      return emitOpError("yield operand #")
             << i << " has type " << std::get<0>(pair) << " but result #" << i
             << " has type " << std::get<1>(pair);
  if (auto inPlace = getInPlace()) {
    if (inPlace->size() != getNumResults())
      return emitOpError("in_place has ") << inPlace->size() << " entries for "
                                          << getNumResults() << " results";
    for (int64_t arg : *inPlace)
      if (arg < -1)
        return emitOpError("in_place entry ")
               << arg << " is neither an argument index nor -1";
  }
  if (Attribute attr = (*this)->getAttr("llmc.overwrites")) {
    auto overwrites = dyn_cast<DenseI64ArrayAttr>(attr);
    if (!overwrites)
      return emitOpError("llmc.overwrites must be an array<i64>");
    if (overwrites.size() != getNumResults())
      return emitOpError("llmc.overwrites has ")
             << overwrites.size() << " entries for " << getNumResults()
             << " results";
    SmallVector<Value> inputs = groupInputs(*this);
    for (auto [j, k] : llvm::enumerate(overwrites.asArrayRef())) {
      if (k == -1)
        continue;
      if (k < -1 || k >= static_cast<int64_t>(inputs.size()))
        return emitOpError("llmc.overwrites entry ")
               << k << " is neither one of the group's " << inputs.size()
               << " inputs nor -1";
      auto in = dyn_cast<RankedTensorType>(inputs[k].getType());
      auto out = dyn_cast<RankedTensorType>(getResult(j).getType());
      if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape() ||
          in.getNumElements() * in.getElementTypeBitWidth() !=
              out.getNumElements() * out.getElementTypeBitWidth())
        return emitOpError("result #")
               << j << " (" << getResult(j).getType()
               << ") cannot overwrite input #" << k << " ("
               << inputs[k].getType() << "): their sizes differ";
    }
  }
  return success();
}


