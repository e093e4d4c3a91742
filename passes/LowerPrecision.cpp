//===- LowerPrecision.cpp - Mixed precision as autocast, in the IR --------===//
//
// Makes the precision of every op of @forward explicit: casts where an op's
// PrecisionPolicyOpInterface class wants its operands in another type, and
// result types that say what each op yields. It runs before autodiff, so the
// backward ops take their types from the forward ones (a bf16 matmul's
// gradients are bf16 matmuls, a cast's cotangent is cast back), which is
// what autograd does under torch.autocast. docs/precision.md has the policy.
//
// 1. Walk @forward in program order. Each op's class decides:
//    - LowerOperands: float operands become bf16, float results
//      bf16 (matmul, attention; a linear layer's bias add).
//    - Fp32*: operands narrower than f32 become f32, results f32.
//    - Follow: float operands become the widest type among the dimensioned
//      ones (rank-0 operands do not promote, as in torch), results that
//      type.
//    - Explicit: nothing (casts).
//    A LowerOperands op whose float operands are all tables (computed
//    from constants and frozen buffers only: no trainable parameter, no
//    input) follows its operands instead. Such matmuls are position
//    tables, RoPE's inv_freq x positions above all, which transformers
//    computes with autocast disabled: lowering them rounds every angle to
//    bf16 (a Llama's bf16 step then strays from PyTorch's AMP reference).
// 2. A value is converted once per type: the cast goes right after its
//    definition and every use shares it. A weight reaching a matmul through
//    transposes/reshapes (commutesWithCast) is cast right after the
//    parameter and the data movement is redone in bf16: one cast of each
//    weight per step, however many uses.
// 3. The return casts results back to @forward's declared types.
//
// Test-only `mutation`s plant known mistakes (docs/precision.md), so that
// `llmc verify` can be shown to catch them. With `explain`, every op's
// decision (its class, the type it computes in, and why: the interface's
// reason plus what step 1-2 decided) becomes the module attribute
// `llmc.precision_explain`, which `llmc compile --explain` prints.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/TrainingUtils.h"

#include "dialects/llmc/LlmcOps.h"
#include "dialects/llmc/PrecisionPolicyText.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "llmc-lower-precision"

namespace mlir::llmc {

#define GEN_PASS_DEF_LOWERPRECISIONPASS
#include "passes/Passes.h.inc"

namespace {

Type elementOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

unsigned widthOf(Type t) { return cast<FloatType>(t).getWidth(); }

/// The planted mistakes of the mutation test.
enum class Mutation {
  None,
  SoftmaxBf16,
  LayerNormBf16,
  LossBf16,
  GemmBf16Accumulate,
  WeightCastPerUse,
  OptimizerStateBf16, // planted by llmc-append-optimizer's state-type
  Unknown
};

Mutation parseMutation(StringRef s) {
  return llvm::StringSwitch<Mutation>(s)
      .Case("", Mutation::None)
      .Case("softmax-bf16", Mutation::SoftmaxBf16)
      .Case("layer-norm-bf16", Mutation::LayerNormBf16)
      .Case("loss-bf16", Mutation::LossBf16)
      .Case("gemm-bf16-accumulate", Mutation::GemmBf16Accumulate)
      .Case("weight-cast-per-use", Mutation::WeightCastPerUse)
      .Case("optimizer-state-bf16", Mutation::OptimizerStateBf16)
      .Default(Mutation::Unknown);
}

class Lowering {
public:
  Lowering(func::FuncOp func, Type low, Mutation mutation)
      : func_(func), low_(low), mutation_(mutation),
        f32_(Float32Type::get(func.getContext())) {}

  LogicalResult run() {
    SmallVector<Operation *> ops;
    for (Operation &op : func_.getBody().front())
      ops.push_back(&op);
    findTables(ops);
    for (Operation *op : ops) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        restoreResultTypes(ret);
        continue;
      }
      auto policy = dyn_cast<PrecisionPolicyOpInterface>(op);
      if (!policy)
        return op->emitOpError("has no precision policy "
                               "(PrecisionPolicyOpInterface); "
                               "llmc-lower-precision cannot place it");
      lowerOp(op, policy);
    }
    // The f32 data movement whose bf16 copy took over, when nothing else
    // reads it (latest first: a chain frees its operands).
    for (Operation *op : llvm::reverse(replaced_))
      if (op->use_empty()) {
        why_.erase(op);
        op->erase();
      }
    return success();
  }

  /// Why each op of @forward computes in its type (`explain`), by op.
  const llvm::DenseMap<Operation *, std::string> &reasons() const {
    return why_;
  }

private:
  /// The class after the planted mistake, if any: the targeted f32 class
  /// computes in bf16 like a matmul.
  PrecisionPolicy classOf(PrecisionPolicyOpInterface op) {
    PrecisionPolicy p = op.getPrecisionPolicy();
    if ((mutation_ == Mutation::SoftmaxBf16 &&
         p == PrecisionPolicy::Fp32Softmax) ||
        (mutation_ == Mutation::LayerNormBf16 &&
         p == PrecisionPolicy::Fp32Norm) ||
        (mutation_ == Mutation::LossBf16 && p == PrecisionPolicy::Fp32Loss))
      return PrecisionPolicy::LowerOperands;
    return p;
  }

  void lowerOp(Operation *op, PrecisionPolicyOpInterface iface) {
    PrecisionPolicy policy = classOf(iface);
    std::string why = precisionPolicyReason(iface.getPrecisionPolicy());
    if (policy != iface.getPrecisionPolicy())
      why = "planted mistake (mutation): computes as LowerOperands instead "
            "of " +
            std::string(precisionPolicyName(iface.getPrecisionPolicy()));
    why_[op] = why;
    if (policy == PrecisionPolicy::Explicit)
      return;
    // The type the op computes in now, and the one it computed in before
    // the pass (which its float results have unless they are explicit).
    Type current = widestFloatOperand(op, /*before=*/false);
    Type original = widestFloatOperand(op, /*before=*/true);
    if (!current) {
      why_[op] = "no float operand: nothing to decide";
      return;
    }
    Type target;
    if (policy == PrecisionPolicy::LowerOperands && !readsOnlyTables(op))
      target = low_;
    else if (isFp32Policy(policy))
      target = widthOf(current) < 32 ? f32_ : current;
    else
      target = current;
    if (policy == PrecisionPolicy::LowerOperands && target != low_)
      why_[op] = "LowerOperands, but every float operand is a table (no "
                 "parameter, no input: RoPE's inv_freq x positions), which "
                 "transformers computes with autocast off: follows its "
                 "operands";

    // HF's RMSNorm returns `weight * normed.to(input_dtype)`: on a low-type
    // input (Qwen3's q/k norms read the bf16 projections), the normalized
    // value is rounded to that type before the weight.
    auto rms = dyn_cast<RmsNormOp>(op);
    Type roundNormalizedTo;
    if (rms && policy == PrecisionPolicy::Fp32Norm && rms.getWeight() &&
        widthOf(elementOf(rms.getInput())) < 32)
      roundNormalizedTo = elementOf(rms.getInput());

    for (OpOperand &operand : op->getOpOperands()) {
      Value v = operand.get();
      if (!isFloatTensor(v) || elementOf(v) == target)
        continue;
      // f64 reference graphs stay f64 in the f32 classes.
      if (isFp32Policy(policy) && widthOf(elementOf(v)) >= 32)
        continue;
      operand.set(convert(v, target, op));
    }
    for (OpResult r : op->getResults())
      if (isFloatTensor(r) && elementOf(r) == original && original != target) {
        before_.try_emplace(r, original);
        r.setType(cast<RankedTensorType>(r.getType()).clone(target));
      }
    if (mutation_ == Mutation::GemmBf16Accumulate && isa<MatmulOp>(op) &&
        target == low_)
      op->setAttr("llmc.accumulate", TypeAttr::get(low_));
    if (roundNormalizedTo)
      roundNormalizedAsInput(rms, roundNormalizedTo);
  }

  /// rms_norm(x) weight w, x of a low type before the pass, computing in f32
  /// now -> cast(cast(rms_norm(x) : low) : f32) * w, HF's order (Llama's
  /// RMSNorm and its copies: Mistral, Qwen2/3, OLMo, Granite, Phi-3).
  /// Measured on the Qwen3 sweep export: without the rounding llmc's bf16
  /// loss is 4.3e-5 from PyTorch AMP's, with it equal to the last bit.
  void roundNormalizedAsInput(RmsNormOp rms, Type low) {
    OpBuilder b(rms);
    b.setInsertionPointAfter(rms);
    Location loc = rms.getLoc();
    auto type = cast<RankedTensorType>(rms.getType());
    Value normed = b.create<RmsNormOp>(loc, type, rms.getInput(), Value(),
                                       rms.getAxisAttr(),
                                       rms.getEpsilonAttr());
    Value rounded = b.create<CastOp>(loc, type.clone(low), normed);
    Value back = b.create<CastOp>(loc, type, rounded);
    Value y = b.create<MulOp>(loc, back, rms.getWeight());
    rms.getResult().replaceAllUsesWith(y);
    replaced_.push_back(rms);
    std::string why = "HF's RMSNorm, weight * normed.to(input_dtype): the "
                      "normalized value of a low-type input rounded to that "
                      "type before the weight";
    for (Value v : {normed, rounded, back, y})
      why_[v.getDefiningOp()] = why;
  }

  /// Values that depend on no trainable parameter and no input: frozen
  /// arguments, and results of ops reading only such values (constants,
  /// iotas).
  void findTables(ArrayRef<Operation *> ops) {
    for (BlockArgument arg : func_.getArguments())
      if (func_.getArgAttr(arg.getArgNumber(), "llmc.param") &&
          !isTrainable(func_, arg.getArgNumber()))
        tables_.insert(arg);
    for (Operation *op : ops)
      if (llvm::all_of(op->getOperands(),
                       [&](Value v) { return tables_.contains(v); }))
        tables_.insert(op->getResults().begin(), op->getResults().end());
  }

  bool readsOnlyTables(Operation *op) {
    bool anyFloat = false;
    for (Value v : op->getOperands()) {
      if (!isFloatTensor(v))
        continue;
      anyFloat = true;
      if (!tables_.contains(v))
        return false;
    }
    return anyFloat;
  }

  /// The widest float type among the dimensioned float operands (all float
  /// operands when every one is rank 0), as they are now or as they were
  /// before the pass; null without float operands. Torch's promotion: a
  /// rank-0 tensor does not widen a dimensioned one of the same category.
  Type widestFloatOperand(Operation *op, bool before) {
    Type dimensioned, any;
    for (Value v : op->getOperands()) {
      if (!isFloatTensor(v))
        continue;
      Type e = elementOf(v);
      if (auto it = before_.find(v); before && it != before_.end())
        e = it->second;
      auto wider = [&](Type cur) { return !cur || widthOf(e) > widthOf(cur); };
      if (wider(any))
        any = e;
      if (cast<RankedTensorType>(v.getType()).getRank() > 0 && wider(dimensioned))
        dimensioned = e;
    }
    return dimensioned ? dimensioned : any;
  }

  /// `v` as `elem`: one cast per value and type, right after `v`'s
  /// definition; a weight through data movement is cast at the parameter.
  Value convert(Value v, Type elem, Operation *user) {
    bool perUse = mutation_ == Mutation::WeightCastPerUse && rootsAtArgument(v);
    auto key = std::make_pair(v, elem);
    if (!perUse)
      if (auto it = cache_.find(key); it != cache_.end())
        return it->second;
    OpBuilder b(func_.getContext());
    Value out;
    Operation *def = v.getDefiningOp();
    auto moves = dyn_cast_or_null<PrecisionPolicyOpInterface>(def);
    if (moves && moves.commutesWithCast() && def->getNumResults() == 1 &&
        rootsAtArgument(v)) {
      // cast(transpose(w)) = transpose(cast(w)), bit for bit.
      Value src = convert(def->getOperand(0), elem, def);
      b.setInsertionPointAfter(def);
      Operation *clone = b.clone(*def);
      clone->setOperand(0, src);
      clone->getResult(0).setType(
          cast<RankedTensorType>(v.getType()).clone(elem));
      out = clone->getResult(0);
      replaced_.push_back(def);
      why_[clone] = "a weight's data movement redone in the low type after "
                    "the parameter's one cast (commutesWithCast: bit-exact)";
    } else if (Value lowest = finfoExtremeAs(v, elem)) {
      out = lowest;
      why_[lowest.getDefiningOp()] =
          "f32's finfo extreme (the exporter's torch.finfo(dtype).min or "
          ".max, a masked score) as the low type's largest finite value: "
          "cast, it would round to infinity";
    } else {
      if (perUse)
        b.setInsertionPoint(user);
      else if (isa<BlockArgument>(v))
        setAfterEntryCasts(b);
      else
        b.setInsertionPointAfterValue(v);
      auto c = b.create<CastOp>(v.getLoc(),
                                cast<RankedTensorType>(v.getType()).clone(elem),
                                v);
      if (isa<BlockArgument>(v) && !perUse)
        lastEntryCast_ = c;
      out = c;
      why_[c] = perUse ? "inserted for one use (planted mistake: "
                         "weight-cast-per-use)"
                       : "inserted: this value's one cast to this type, "
                         "shared by every use";
    }
    if (!perUse)
      cache_[key] = out;
    return out;
  }

  /// A splat constant of f32's largest finite magnitude (-FLT_MAX: what an
  /// exporter bakes in for the model's `torch.finfo(x.dtype).min`, the fill
  /// of a masked score) as a constant of `elem`'s largest finite magnitude,
  /// the value the model computes with x in `elem`. A cast would round it to
  /// infinity (bf16's largest is 3.39e38), and a row whose every score is
  /// masked would become NaN in softmax where PyTorch's is uniform
  /// (DeBERTa-v2's padded query rows). Null for any other value.
  Value finfoExtremeAs(Value v, Type elem) {
    auto def = v.getDefiningOp<ConstantOp>();
    auto floatElem = dyn_cast<FloatType>(elem);
    auto attr = def ? dyn_cast<DenseElementsAttr>(def.getValue())
                    : DenseElementsAttr();
    if (!attr || !attr.isSplat() || !floatElem ||
        !attr.getElementType().isF32() || floatElem.getWidth() >= 32)
      return {};
    APFloat value = attr.getSplatValue<APFloat>();
    if (!value.isFinite() ||
        !value.bitwiseIsEqual(
            APFloat::getLargest(value.getSemantics(), value.isNegative())))
      return {};
    OpBuilder b(func_.getContext());
    b.setInsertionPointAfter(def);
    auto type = cast<RankedTensorType>(v.getType()).clone(elem);
    APFloat largest =
        APFloat::getLargest(floatElem.getFloatSemantics(), value.isNegative());
    return b.create<ConstantOp>(def.getLoc(),
                                DenseElementsAttr::get(type, largest));
  }

  /// Casts of arguments go first in the body, in the order they are made.
  void setAfterEntryCasts(OpBuilder &b) {
    if (lastEntryCast_)
      b.setInsertionPointAfter(lastEntryCast_);
    else
      b.setInsertionPointToStart(&func_.getBody().front());
  }

  /// True when `v` is an argument, or data movement of one.
  bool rootsAtArgument(Value v) {
    while (Operation *def = v.getDefiningOp()) {
      auto iface = dyn_cast<PrecisionPolicyOpInterface>(def);
      if (!iface || !iface.commutesWithCast() || def->getNumOperands() < 1)
        return false;
      v = def->getOperand(0);
    }
    return true;
  }

  void restoreResultTypes(func::ReturnOp ret) {
    ArrayRef<Type> declared = func_.getFunctionType().getResults();
    OpBuilder b(ret);
    for (OpOperand &operand : ret->getOpOperands()) {
      Type want = declared[operand.getOperandNumber()];
      if (operand.get().getType() != want) {
        auto c = b.create<CastOp>(ret.getLoc(), want, operand.get());
        why_[c] = "inserted: @forward's results keep their declared types";
        operand.set(c);
      }
    }
  }

  func::FuncOp func_;
  llvm::DenseSet<Value> tables_;
  Type low_;
  Mutation mutation_;
  Type f32_;
  Operation *lastEntryCast_ = nullptr;
  llvm::DenseMap<std::pair<Value, Type>, Value> cache_;
  SmallVector<Operation *> replaced_;
  // Element types of the results this pass retyped, as they were.
  llvm::DenseMap<Value, Type> before_;
  llvm::DenseMap<Operation *, std::string> why_;
};

/// The type an op computes in, as --explain prints it: its first float
/// result's element type (a cast's target), else its first float
/// operand's (a comparison), else "-".
std::string computeTypeOf(Operation *op) {
  auto name = [](Value v) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << elementOf(v);
    return s;
  };
  for (Value r : op->getResults())
    if (isFloatTensor(r))
      return name(r);
  for (Value v : op->getOperands())
    if (isFloatTensor(v))
      return name(v);
  return "-";
}

/// llmc.precision_explain: every op of `forward` in program order.
void recordExplanation(ModuleOp module, func::FuncOp forward,
                       const llvm::DenseMap<Operation *, std::string> &why) {
  Builder b(module.getContext());
  SmallVector<Attribute> entries;
  for (Operation &op : forward.getBody().front().without_terminator()) {
    auto iface = dyn_cast<PrecisionPolicyOpInterface>(&op);
    std::string reason = why.lookup(&op);
    if (reason.empty())
      reason = iface ? precisionPolicyReason(iface.getPrecisionPolicy()) : "";
    NamedAttribute fields[] = {
        b.getNamedAttr("op", b.getStringAttr(op.getName().getStringRef())),
        b.getNamedAttr("loc", op.getLoc()),
        b.getNamedAttr(
            "class",
            b.getStringAttr(iface ? precisionPolicyName(
                                        iface.getPrecisionPolicy())
                                  : "none")),
        b.getNamedAttr("type", b.getStringAttr(computeTypeOf(&op))),
        b.getNamedAttr("why", b.getStringAttr(reason))};
    entries.push_back(b.getDictionaryAttr(fields));
  }
  module->setAttr("llmc.precision_explain", b.getArrayAttr(entries));
}

class LowerPrecisionPass
    : public impl::LowerPrecisionPassBase<LowerPrecisionPass> {
public:
  using LowerPrecisionPassBase::LowerPrecisionPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (precision == "fp32")
      return;
    if (precision != "bf16" && precision != "fp16" && precision != "tf32") {
      module.emitError("llmc-lower-precision: unknown precision '")
          << precision << "'; expected fp32, bf16, fp16 or tf32";
      return signalPassFailure();
    }
    // TF32 changes no type: it is a property of every f32 matmul of the
    // step, forward and backward, which the evaluator and the plan read
    // from the module (docs/precision.md).
    if (precision == "tf32") {
      module->setAttr("llmc.precision",
                      StringAttr::get(&getContext(), precision));
      return;
    }
    Mutation mutation = parseMutation(this->mutation);
    if (mutation == Mutation::Unknown) {
      module.emitError("llmc-lower-precision: unknown mutation '")
          << this->mutation << "'";
      return signalPassFailure();
    }
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError("llmc-lower-precision: the module has no @forward; "
                       "precision is lowered on the forward graph, before "
                       "autodiff");
      return signalPassFailure();
    }
    Type low = precision == "fp16" ? Type(Float16Type::get(&getContext()))
                                   : Type(BFloat16Type::get(&getContext()));
    Lowering lowering(forward, low, mutation);
    if (failed(lowering.run()))
      return signalPassFailure();
    module->setAttr("llmc.precision", StringAttr::get(&getContext(), precision));
    if (explain)
      recordExplanation(module, forward, lowering.reasons());
  }
};

} // namespace

} // namespace mlir::llmc
