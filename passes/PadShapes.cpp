//===- PadShapes.cpp - Pad parameter dims to nice numbers -----------------===//
//
// Nice-number padding (docs/padding.md): vocab 50257 -> 50304, head dim
// 40 -> 48, without changing what the model computes. It runs on @forward
// after llmc-append-loss and before llmc-lower-precision and autodiff, so
// the backward gets the padded shapes and the masks from autodiff.
//
// 1. Groups. Each dim of each parameter (`llmc.param`) seeds a group: the
//    (value, dim) pairs that must be padded together, found by asking each
//    op that holds one (PaddableOpInterface, rules in LlmcPadRules.cpp)
//    which of its other dims are the same dim. A group is refused when an
//    op cannot pad it (a softmax over it), when it reaches a data input (a dim
//    the user's batch fixes) or optimizer state, or when a constant has it.
// 2. Cost. The candidates are the real size rounded up to the GEMM tile
//    (128), to 64, and to 16 bytes (8 bf16 / 4 f32 elements, what the
//    tensor cores' vector loads need). For each, the step's time on the
//    dim's GEMMs (forward and the two backward products) is estimated from
//    the architecture's table: FLOPs over the GEMM rate, with the output
//    quantized to whole tiles, times the measured slowdown of a dim that
//    is not a multiple of 16 bytes, and no less than a launch; plus the
//    extra memory traffic of every padded tensor at the table's bandwidth.
//    The cheapest wins (the real size on a tie); among padded sizes within
//    1% of each other the more aligned one, since cuBLASLt's kernel choice
//    at multiples of 64/128 is what was measured (50304). `dims=FROM:TO`
//    overrides the model for a size (tests).
// 3. Rewrite. Every value of the group gets the padded size; a padded
//    parameter records its real shape (`llmc.real_shape`), from which its
//    initial value is zero-padded (runtime/Padding.h); ops that must not
//    read the padding record the real size (notePadding: gather's `bound`,
//    cross_entropy's `classes`); a norm over the padded dim is masked
//    (PadNorms.cpp). Zeros stay zeros: padded weight rows get a zero
//    gradient (the masked loss gives zero logit gradients there, a masked
//    norm zero weight gradients), so AdamW with weight decay keeps them at
//    zero.
// 4. Attention head dims are padded at the op (PadHeadDims.cpp).
// 5. Results that @forward returns are sliced back to their real shapes.
//
// The decisions go to the module's `llmc.padding` attribute (one entry per
// group: parameters, from, to, extra GEMM FLOPs per step, why).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "passes/PadShapes.h"

#include "dialects/llmc/LlmcOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <cstdio>

#define DEBUG_TYPE "llmc-pad-shapes"

namespace mlir::llmc {

#define GEN_PASS_DEF_PADSHAPESPASS
#include "passes/Passes.h.inc"

namespace {

using DimKey = std::pair<Value, int64_t>;

int64_t roundUp(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

std::string paramName(func::FuncOp func, unsigned i) {
  if (auto name = func.getArgAttrOfType<StringAttr>(i, "llmc.param"))
    return name.getValue().str();
  return "#" + std::to_string(i);
}

std::string micros(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f us", seconds * 1e6);
  return buf;
}

/// The (value, dim) pairs padded together, and what the pass learned
/// collecting them.
struct Group {
  int64_t real = 0;
  SmallVector<PadTie> members;
  llvm::DenseSet<DimKey> seen;
  llvm::SetVector<Operation *> ops; // ops holding a member as an operand
  llvm::SetVector<Operation *> gemms;
  SmallVector<std::string> params; // "name[dim]"
  std::string refusal;             // empty: every op can pad it
};

class GroupCollector {
public:
  GroupCollector(func::FuncOp func, Group &group) : func_(func), g_(group) {}

  void collect(PadTie seed) {
    add(seed);
    while (!work_.empty()) {
      PadTie t = work_.pop_back_val();
      if (auto arg = dyn_cast<BlockArgument>(t.value))
        visitArgument(arg, t.dim);
      else
        visitOp(t.value.getDefiningOp(), t);
      for (OpOperand &use : t.value.getUses()) {
        Operation *user = use.getOwner();
        if (isa<func::ReturnOp>(user))
          continue; // sliced back at the end (step 4)
        g_.ops.insert(user);
        visitOp(user, t);
      }
    }
  }

private:
  void refuse(const std::string &why) {
    if (g_.refusal.empty())
      g_.refusal = why;
  }

  void add(PadTie t) {
    if (!g_.seen.insert({t.value, t.dim}).second)
      return;
    auto type = cast<RankedTensorType>(t.value.getType());
    if (type.isDynamicDim(t.dim) || type.getDimSize(t.dim) != g_.real) {
      refuse("a tied dim has another size");
      return;
    }
    g_.members.push_back(t);
    work_.push_back(t);
  }

  void visitArgument(BlockArgument arg, int64_t dim) {
    unsigned i = arg.getArgNumber();
    if (auto input = func_.getArgAttrOfType<StringAttr>(i, "llmc.input")) {
      refuse("fixed by the input '" + input.getValue().str() + "'");
      return;
    }
    if (!func_.getArgAttr(i, "llmc.param")) {
      refuse("reaches an argument that is not a parameter");
      return;
    }
    g_.params.push_back(paramName(func_, i) + "[" + std::to_string(dim) + "]");
  }

  void visitOp(Operation *op, PadTie t) {
    std::string name = "'" + op->getName().getStringRef().str() + "'";
    auto paddable = dyn_cast<PaddableOpInterface>(op);
    if (!paddable) {
      refuse(name + " declares no padding rule (PaddableOpInterface)");
      return;
    }
    SmallVector<PadTie> ties;
    std::string reason;
    if (failed(paddable.getPadTies(t.value, t.dim, ties, reason))) {
      refuse(name + ": " + reason);
      return;
    }
    if (isa<MatmulOp>(op))
      g_.gemms.insert(op);
    for (PadTie tie : ties)
      add(tie);
  }

  func::FuncOp func_;
  Group &g_;
  SmallVector<PadTie> work_;
};

/// The decision for one group: the size and why.
struct Decision {
  int64_t to = 0;
  double extraFlops = 0;
  std::string why;
};

class CostModel {
public:
  CostModel(const ArchCosts &arch, bool bf16, const ForcedDims &forced)
      : arch_(arch), forced_(forced),
        rate_(bf16 ? arch.bf16Rate : arch.fp32Rate),
        elementBytes_(bf16 ? 2 : 4), align_(16 / elementBytes_) {}

  Decision decide(const Group &g, bool always) const {
    Decision d;
    d.to = g.real;
    SmallVector<int64_t> candidates;
    for (int64_t m : {arch_.tile, int64_t(64), align_})
      if (int64_t c = roundUp(g.real, m);
          c != g.real && !llvm::is_contained(candidates, c))
        candidates.push_back(c);
    if (!g.refusal.empty()) {
      d.why = "cannot pad: " + g.refusal;
      return d;
    }
    if (auto it = forced_.find(g.real); it != forced_.end()) {
      d.to = it->second;
      d.extraFlops = gemmFlops(g) * static_cast<double>(d.to - g.real) / g.real;
      d.why = "padded on request (dims=" + std::to_string(g.real) + ":" +
              std::to_string(d.to) + "); GEMMs " +
              micros(gemmSeconds(g, g.real, true)) + " -> " +
              micros(gemmSeconds(g, d.to, true)) + " per step on " + arch_.arch;
      return d;
    }
    // `always` drops the launch floor and the memory cost: what is left is
    // alignment, which is all that makes a padded GEMM faster (padding
    // never removes a tile).
    int64_t best = g.real;
    double bestTime = seconds(g, g.real, !always);
    for (int64_t c : candidates)
      if (double t = seconds(g, c, !always); t < bestTime * (1 - 1e-9))
        best = c, bestTime = t;
    if (best == g.real) {
      d.why = isAligned(g.real)
                  ? "aligned already (a multiple of " +
                        std::to_string(align_) + " elements; padding would "
                        "not reduce the " + std::to_string(arch_.tile) +
                        "-wide tiles)"
              : g.gemms.empty()
                  ? "not worth it: no GEMM has this dim"
                  : "not worth it: its GEMMs take " +
                        micros(gemmSeconds(g, g.real, true)) +
                        " per step, launch-bound or cheaper than the padding's "
                        "memory traffic";
      return d;
    }
    // The more aligned of the sizes within 1% (candidates go from the most
    // aligned down).
    for (int64_t c : candidates)
      if (seconds(g, c, !always) <= bestTime * 1.01) {
        best = c;
        break;
      }
    d.to = best;
    d.extraFlops = gemmFlops(g) * static_cast<double>(best - g.real) / g.real;
    d.why = std::string(always ? "padded on request (always); " : "") +
            "GEMMs " + micros(gemmSeconds(g, g.real, true)) + " -> " +
            micros(gemmSeconds(g, best, true)) + " per step on " +
            arch_.arch + " (" + std::to_string(g.real) +
            (g.real % align_ ? " is not a multiple of " +
                                   std::to_string(align_) + " elements"
                             : " fills its last tile poorly") +
            "), padding moves " + micros(memorySeconds(g, best)) +
            " more memory";
    return d;
  }

  bool isAligned(int64_t size) const { return size % align_ == 0; }

private:
  /// 2 M N K of every GEMM of the group, forward and backward (3x).
  double gemmFlops(const Group &g) const {
    double flops = 0;
    for (Operation *op : g.gemms)
      flops += 3 * oneGemmFlops(cast<MatmulOp>(op));
    return flops;
  }

  static double oneGemmFlops(MatmulOp mm) {
    auto lhs = mm.getLhs().getType();
    int64_t k = lhs.getDimSize(mm.getTransposeLhs() ? lhs.getRank() - 2
                                                    : lhs.getRank() - 1);
    return 2.0 * static_cast<double>(mm.getType().getNumElements()) * k;
  }

  /// The GEMMs' time with the dim at `size`: tiles over the rate, times the
  /// misalignment factor, at least a launch each (when `floor`).
  double gemmSeconds(const Group &g, int64_t size, bool floor) const {
    double total = 0;
    double tiles = std::ceil(double(size) / arch_.tile) * arch_.tile;
    for (Operation *op : g.gemms) {
      double t = oneGemmFlops(cast<MatmulOp>(op)) * tiles / g.real / rate_;
      if (size % align_)
        t *= arch_.misaligned;
      total += 3 * (floor ? std::max(t, arch_.launchSeconds) : t);
    }
    return total;
  }

  /// The extra bytes of every padded tensor, written and read, forward and
  /// backward (3x), at the table's bandwidth.
  double memorySeconds(const Group &g, int64_t size) const {
    double bytes = 0;
    for (PadTie t : g.members)
      bytes += static_cast<double>(
                   cast<RankedTensorType>(t.value.getType()).getNumElements()) *
               elementBytes_;
    return 3 * 2 * bytes * (size - g.real) / g.real / arch_.bandwidth;
  }

  double seconds(const Group &g, int64_t size, bool withMemory) const {
    return gemmSeconds(g, size, withMemory) +
           (withMemory ? memorySeconds(g, size) : 0);
  }

  const ArchCosts &arch_;
  const ForcedDims &forced_;
  double rate_;
  int64_t elementBytes_, align_;
};

/// Step 3: the group's values at `to`; the ops note the real size.
void padGroup(func::FuncOp func, const Group &g, int64_t to) {
  MLIRContext *ctx = func.getContext();
  for (PadTie t : g.members) {
    auto type = cast<RankedTensorType>(t.value.getType());
    if (auto arg = dyn_cast<BlockArgument>(t.value);
        arg && !func.getArgAttr(arg.getArgNumber(), "llmc.real_shape"))
      func.setArgAttr(arg.getArgNumber(), "llmc.real_shape",
                      DenseI64ArrayAttr::get(ctx, type.getShape()));
    SmallVector<int64_t> shape(type.getShape());
    shape[t.dim] = to;
    t.value.setType(type.clone(shape));
  }
  for (Operation *op : g.ops)
    for (Value operand : op->getOperands())
      for (PadTie t : g.members)
        if (t.value == operand)
          cast<PaddableOpInterface>(op).notePadding(operand, t.dim, g.real);
}

/// Step 4: what @forward returns keeps its declared type.
void sliceResults(func::FuncOp func) {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  OpBuilder b(ret);
  ArrayRef<Type> declared = func.getFunctionType().getResults();
  for (OpOperand &operand : ret->getOpOperands()) {
    auto want = cast<RankedTensorType>(declared[operand.getOperandNumber()]);
    auto have = cast<RankedTensorType>(operand.get().getType());
    if (want == have)
      continue;
    SmallVector<int64_t> starts(want.getRank(), 0), strides(want.getRank(), 1);
    operand.set(b.create<SliceOp>(ret.getLoc(), want, operand.get(),
                                  starts, want.getShape(), strides));
  }
  SmallVector<Type> inputs(func.getBody().front().getArgumentTypes());
  func.setFunctionType(FunctionType::get(func.getContext(), inputs, declared));
}

class PadShapesPass : public impl::PadShapesPassBase<PadShapesPass> {
public:
  using PadShapesPassBase::PadShapesPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const ArchCosts *table = nullptr;
    for (const ArchCosts &a : kArchCosts)
      if (arch == a.arch)
        table = &a;
    if (!table) {
      module.emitError("llmc-pad-shapes: no cost table for arch '")
          << arch << "' (sm_90 and sm_80 have one); pass --no-pad to skip "
          << "padding";
      return signalPassFailure();
    }
    if (precision != "fp32" && precision != "bf16") {
      module.emitError("llmc-pad-shapes: unknown precision '")
          << precision << "'; expected fp32 or bf16";
      return signalPassFailure();
    }
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError("llmc-pad-shapes: the module has no @forward; "
                       "shapes are padded on the forward graph, before "
                       "autodiff");
      return signalPassFailure();
    }
    ForcedDims forced;
    std::string error;
    if (!parseForcedDims(dims, forced, error)) {
      module.emitError("llmc-pad-shapes: dims: ") << error;
      return signalPassFailure();
    }
    CostModel model(*table, precision == "bf16", forced);
    Builder b(&getContext());
    SmallVector<Attribute> decisions;
    llvm::DenseSet<DimKey> done;
    SmallVector<std::pair<Operation *, int64_t>> masked; // norms, real size
    for (BlockArgument arg : forward.getArguments()) {
      if (!forward.getArgAttr(arg.getArgNumber(), "llmc.param"))
        continue;
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || !type.hasStaticShape())
        continue;
      for (int64_t dim = 0; dim < type.getRank(); ++dim) {
        if (done.contains({arg, dim}) || type.getDimSize(dim) <= 1)
          continue;
        Group g;
        g.real = cast<RankedTensorType>(arg.getType()).getDimSize(dim);
        GroupCollector(forward, g).collect({arg, dim});
        done.insert(g.seen.begin(), g.seen.end());
        Decision d = model.decide(g, always);
        // Aligned dims are the common case: only the others are listed
        // (and forced sizes, padded or refused).
        if (d.to != g.real || !model.isAligned(g.real) ||
            forced.contains(g.real))
          decisions.push_back(record(b, g, d));
        if (d.to != g.real)
          padGroup(forward, g, d.to);
        if (d.to != g.real)
          for (Operation *op : g.ops)
            if (isa<LayerNormOp, RmsNormOp>(op) &&
                g.seen.contains({op->getOperand(0),
                                 cast<RankedTensorType>(
                                     op->getOperand(0).getType())
                                         .getRank() -
                                     1}))
              masked.push_back({op, g.real});
      }
    }
    // After every group: the rewrite replaces values other groups saw.
    for (auto [norm, real] : masked)
      maskNormOverPadding(norm, real);
    padAttentionHeadDims(forward, *table, precision == "bf16", always, forced,
                         decisions);
    sliceResults(forward);
    module->setAttr("llmc.padding", b.getArrayAttr(decisions));
  }

private:
  static DictionaryAttr record(Builder &b, const Group &g, const Decision &d) {
    return paddingEntry(b, SmallVector<std::string>(g.params.begin(), g.params.end()),
                        g.real, d.to, d.extraFlops, d.why);
  }
};

} // namespace

} // namespace mlir::llmc
