//===- LlmcKernelOps.cpp - Verifier of llmc.kernel ------------------------===//
//
// A group is well formed when its one block takes no arguments, holds at
// least one op besides the yield (a group that launches nothing is not a
// group), and yields exactly the group's result types; `in_place` has one
// entry per result.
//
//===----------------------------------------------------------------------===//
#include "dialects/llmc/LlmcOps.h"

using namespace mlir;
using namespace mlir::llmc;

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
  return success();
}
