//===- InjectNan.cpp - Test only: a NaN gate on one op's output -----------===//
//
// See Passes.td (InjectNanPass). The gate is an input rather than a constant
// so that one compiled step serves every step of a run: the trainer writes
// 1 or NaN into it before each step.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/TrainingUtils.h"
#include "dialects/llmc/LlmcOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::llmc {
#define GEN_PASS_DEF_INJECTNANPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

#define DEBUG_TYPE "llmc-inject-nan"

using namespace mlir;
using namespace mlir::llmc;

namespace {

/// The name `loc` carries (a NameLoc, possibly inside a FusedLoc).
std::string locationName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string n = locationName(inner); !n.empty())
        return n;
  return "";
}

struct InjectNanPass : mlir::llmc::impl::InjectNanPassBase<InjectNanPass> {
  using InjectNanPassBase::InjectNanPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError("llmc-inject-nan: the module has no @forward");
      return signalPassFailure();
    }
    if (op.empty()) {
      forward.emitError("llmc-inject-nan: name the op with --op");
      return signalPassFailure();
    }
    // "llmc.gelu#1": the second llmc.gelu; otherwise a location name.
    std::string kind;
    int64_t nth = -1;
    if (size_t hash = op.rfind('#'); hash != std::string::npos) {
      kind = op.substr(0, hash);
      nth = std::atoll(op.c_str() + hash + 1);
    }
    Operation *target = nullptr;
    int64_t seen = 0;
    forward.walk([&](Operation *o) {
      if (target || o->getNumResults() == 0)
        return;
      bool match = nth >= 0 ? o->getName().getStringRef() == kind &&
                                  seen++ == nth
                            : locationName(o->getLoc()) == op;
      if (match)
        target = o;
    });
    if (!target) {
      forward.emitError("llmc-inject-nan: @forward has no op '")
          << op << "' (name an op by its ONNX node name or JSON path, or as "
                   "<op>#<n>, e.g. llmc.matmul#0)";
      return signalPassFailure();
    }
    Value result = target->getResult(0);
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type || !type.getElementType().isF32()) {
      target->emitError("llmc-inject-nan: the op's result is ")
          << result.getType() << "; the NaN gate needs an f32 tensor";
      return signalPassFailure();
    }
    for (unsigned i = 0; i < forward.getNumArguments(); ++i)
      if (auto name = forward.getArgAttrOfType<StringAttr>(i, "llmc.input");
          name && name.getValue() == "nan_gate") {
        forward.emitError("llmc-inject-nan: @forward already has an input "
                          "named 'nan_gate'");
        return signalPassFailure();
      }
    OpBuilder b(target->getContext());
    BlockArgument gate = appendArgument(
        forward, RankedTensorType::get({}, b.getF32Type()),
        b.getDictionaryAttr(
            b.getNamedAttr("llmc.input", b.getStringAttr("nan_gate"))),
        NameLoc::get(b.getStringAttr("nan_gate"), forward.getLoc()));
    b.setInsertionPointAfter(target);
    Value gated = b.create<MulOp>(
        NameLoc::get(b.getStringAttr("nan_gate"), target->getLoc()), type,
        result, gate);
    result.replaceAllUsesExcept(gated, gated.getDefiningOp());
  }
};

} // namespace
