//===- MarkScalarSlots.cpp - lr, step and loss as device scalar slots -----===//
//
// The host writes the learning rate and reads the loss every step, and
// the step count lives on the device; each is a rank-0 value that the plan
// keeps in a named scalar slot (runtime/Plan.h) rather than a buffer. This
// pass picks them and records the choice as `llmc.slot = "<name>"` on the
// argument or result (the conditions are in Passes.td); the plan builder
// (compiler/codegen) makes slots of exactly those.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/llmc/LlmcOps.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSet.h"

#define DEBUG_TYPE "llmc-mark-scalar-slots"

namespace mlir::llmc {
#define GEN_PASS_DEF_MARKSCALARSLOTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

/// `v` and the values that share its buffer: reshapes of it, and reshape
/// operands up the chain.
llvm::SmallPtrSet<void *, 8> family(Value v) {
  while (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape.getInput();
  llvm::SmallPtrSet<void *, 8> out{v.getAsOpaquePointer()};
  SmallVector<Value> work{v};
  while (!work.empty()) {
    Value x = work.pop_back_val();
    for (Operation *user : x.getUsers())
      if (auto reshape = dyn_cast<ReshapeOp>(user))
        if (out.insert(reshape.getResult().getAsOpaquePointer()).second)
          work.push_back(reshape.getResult());
  }
  return out;
}

/// True for a group that is a cuBLASLt call (it holds a matmul).
bool isLibraryCall(KernelOp group) {
  return group && llvm::any_of(group.getGroupOps(),
                               [](Operation &op) { return isa<MatmulOp>(op); });
}

/// Whether a cuBLASLt call reads or writes `v`'s buffer; cuBLASLt takes
/// buffers, not scalar slots.
bool touchedByMatmul(Value v) {
  for (void *p : family(v)) {
    Value x = Value::getFromOpaquePointer(p);
    if (isLibraryCall(x.getDefiningOp<KernelOp>()))
      return true;
    for (Operation *user : x.getUsers())
      if (isLibraryCall(user->getParentOfType<KernelOp>()))
        return true;
  }
  return false;
}

bool isRank0(Value v, Type element) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getRank() == 0 && type.getElementType() == element;
}

struct MarkScalarSlotsPass
    : public mlir::llmc::impl::MarkScalarSlotsPassBase<MarkScalarSlotsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Builder b(func.getContext());
    llvm::StringSet<> taken;
    auto argAttr = [&](unsigned i, StringRef name) {
      auto a = func.getArgAttrOfType<StringAttr>(i, name);
      return a ? a.getValue() : StringRef();
    };
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      Value arg = func.getArgument(i);
      StringRef slot;
      if (argAttr(i, "llmc.input") == "lr" && isRank0(arg, b.getF32Type()))
        slot = "lr";
      else if (argAttr(i, "llmc.state") == "step" &&
               isRank0(arg, b.getI64Type()))
        slot = "step";
      if (slot.empty() || taken.contains(slot) || touchedByMatmul(arg))
        continue;
      func.setArgAttr(i, "llmc.slot", b.getStringAttr(slot));
      taken.insert(slot);
    }
    auto ret = dyn_cast<func::ReturnOp>(func.getBody().front().getTerminator());
    if (!ret)
      return;
    for (auto [r, v] : llvm::enumerate(ret.getOperands())) {
      auto output = func.getResultAttrOfType<StringAttr>(r, "llmc.output");
      if (!output || output.getValue() != "loss" || taken.contains("loss") ||
          !isRank0(v, b.getF32Type()) || !v.getDefiningOp<KernelOp>() ||
          touchedByMatmul(v))
        continue;
      func.setResultAttr(r, "llmc.slot", b.getStringAttr("loss"));
      taken.insert("loss");
    }
  }
};

} // namespace
