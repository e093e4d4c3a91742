//===- RowFusedEmitters.cpp - A norm with its elementwise prologue/epilogue ===//
//
// A RowFused group (passes/FusionUtils.h; llmc-fuse-elementwise's norm
// prologues and epilogues) is its norm's warp row kernel (NormEmitters.cpp,
// NormGradEmitters.cpp) with other loads and stores (WarpRowIO):
//
//   load   per chunk of 4 elements, the prologue's inputs are loaded as
//          vectors, its ops computed element by element, the values others
//          read stored as vectors, and the norm's row operands taken from
//          the results (layer_norm(add(res, cast(mm))), Llama's rms_norm
//          the same: the new residual is written once, the row stays in
//          registers);
//   store  the norm's row result, rounded to its own type, feeds the
//          epilogue's ops (cast(add(dres, dx))); only what others read is
//          stored;
//   sums   a norm gradient's column sums (reduce_sum of dx or of an
//          epilogue value over the rows: bias gradients) add the stored
//          value, as rounded, to per-column f32 accumulators next to
//          dweight and dbias; the parameter-sum kernel adds the warps'
//          partials in a fixed order, as it does theirs.
//
// Every value keeps its storage type between ops, as in the fused
// elementwise kernels (FusedEmitters.cpp), so each is rounded where the
// one-op kernels store it, and no FMA spans two ops (Emitters.h: rounded
// arithmetic, sealed values), so the kernel is bitwise the unfused ones
// (test/gpu/codegen/RowFusionGpuTest.cpp).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Emitters.h"

#include "dialects/llmc/LlmcOps.h"
#include "passes/FusionUtils.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

std::string vec4(Type t) { return "Vec<" + storageType(t) + ", 4>"; }

/// Where the warp kernels keep row operand `i` of `norm` (element e of
/// chunk i).
std::string rowDestination(Operation *norm, unsigned i) {
  if (isa<LayerNormOp, RmsNormOp>(norm))
    return "x[i][e]";
  return i == 0 ? "x[4 * i + e]" : "dy[4 * i + e]";
}

} // namespace

LogicalResult emitRowFused(KernelOp group, ArrayRef<Value> inputs,
                           ArrayRef<Value> extraResults,
                           const EmitContext &ctx, OpLowering &out) {
  std::optional<fusion::RowFusedParts> parts = fusion::rowFusedParts(group);
  if (!parts)
    return group.emitError("codegen: not a norm with an elementwise "
                           "prologue or epilogue");
  Operation *norm = parts->norm;
  Operation *yield = group.getYield();
  unsigned numResults = group.getNumResults();
  llvm::DenseMap<Value, unsigned> inputIndex;
  for (auto [k, v] : llvm::enumerate(inputs))
    inputIndex[v] = k;
  llvm::DenseMap<Operation *, unsigned> opIndex;
  for (Operation &op : group.getGroupOps())
    opIndex[&op] = opIndex.size();
  llvm::SmallPtrSet<Operation *, 8> pro(parts->prologue.begin(),
                                        parts->prologue.end());

  WarpRowIO io;
  // The norm's own parameters (weight, bias) are read where they are; its
  // row operands never go through operandArgs.
  for (Value v : norm->getOperands())
    io.operandArgs.push_back(
        KernelArg::operand(inputIndex.count(v) ? inputIndex.lookup(v) : 0));
  // Each result of the norm by the group result that yields it, else a
  // buffer of its own (extraResults).
  auto resultArgOf = [&](Value v) -> std::optional<KernelArg> {
    for (auto [j, y] : llvm::enumerate(yield->getOperands()))
      if (y == v)
        return KernelArg::result(j);
    for (auto [j, x] : llvm::enumerate(extraResults))
      if (x == v)
        return KernelArg::result(numResults + j);
    return std::nullopt;
  };
  for (Value r : norm->getResults())
    io.resultArgs.push_back(resultArgOf(r).value_or(KernelArg::result(0)));

  // Row tensors read: by the prologue, the norm's row operands directly,
  // the epilogue. One parameter each.
  llvm::SmallVector<unsigned> proInputs, epiInputs;
  auto note = [&](Value v, llvm::SmallVector<unsigned> &list) {
    if (!inputIndex.count(v))
      return;
    unsigned k = inputIndex.lookup(v);
    if (!llvm::is_contained(list, k))
      list.push_back(k);
  };
  for (Operation *op : parts->prologue)
    for (Value v : op->getOperands())
      note(v, proInputs);
  for (auto [i, v] : llvm::enumerate(norm->getOperands()))
    if (fusion::isRowOperand(norm, i))
      note(v, proInputs);
  for (Operation *op : parts->epilogue)
    for (Value v : op->getOperands())
      note(v, epiInputs);
  llvm::SmallVector<unsigned> rowInputs(proInputs);
  for (unsigned k : epiInputs)
    if (!llvm::is_contained(rowInputs, k))
      rowInputs.push_back(k);
  llvm::sort(rowInputs);
  for (unsigned k : rowInputs) {
    Type t = elementTypeOf(inputs[k]);
    io.types.push_back(t);
    io.params += (io.params.empty() ? "" : ", ") +
                 inParam(t, "in" + std::to_string(k));
    io.rowReads.push_back({"in" + std::to_string(k), t});
    io.args.push_back(KernelArg::operand(k));
  }

  // Row tensors written: prologue values others read (stored in the
  // loads), the norm's row result and epilogue values (in the stores).
  struct RowOut {
    Value inner;
    KernelArg arg;
    std::string name;
    bool inLoad;
  };
  std::vector<RowOut> outs;
  auto addOut = [&](Value inner, KernelArg arg, unsigned slot) {
    Operation *def = inner.getDefiningOp();
    bool inLoad = def && pro.count(def);
    if ((def == norm && cast<OpResult>(inner).getResultNumber() != 0) ||
        isa_and_nonnull<ReduceSumOp>(def))
      return; // a parameter gradient or a column sum: kernel 2 writes it
    outs.push_back({inner, arg, "out" + std::to_string(slot), inLoad});
  };
  for (auto [j, y] : llvm::enumerate(yield->getOperands()))
    addOut(y, KernelArg::result(j), j);
  for (auto [j, x] : llvm::enumerate(extraResults))
    addOut(x, KernelArg::result(numResults + j), numResults + j);
  for (const RowOut &o : outs) {
    Type t = elementTypeOf(o.inner);
    io.types.push_back(t);
    io.outParams += (io.outParams.empty() ? "" : ", ") + outParam(t, o.name);
    io.outArgs.push_back(o.arg);
  }
  for (Operation *op : llvm::concat<Operation *>(parts->prologue,
                                                 parts->epilogue)) {
    std::string h = scalarExpr(op)->helpers;
    if (!h.empty() && io.helpers.find(h) == std::string::npos)
      io.helpers += h + "\n";
  }

  // Loads: the prologue per element, then the norm's row operands.
  llvm::DenseMap<Value, std::string> element;
  std::string ind = "        ", in = ind + "  ";
  for (unsigned k : proInputs) {
    Type t = elementTypeOf(inputs[k]);
    std::string name = "p" + std::to_string(k);
    io.load += ind + "const " + vec4(t) + " " + name +
               " = reinterpret_cast<const " + vec4(t) + " *>(in" +
               std::to_string(k) + " + row * kCols)[c];\n";
    element[inputs[k]] = name + ".v[e]";
  }
  for (const RowOut &o : outs)
    if (o.inLoad)
      io.load += ind + vec4(elementTypeOf(o.inner)) + " " + o.name + "v;\n";
  io.load += ind + "#pragma unroll\n" + ind + "for (int e = 0; e < 4; ++e) {\n";
  llvm::DenseSet<Value> proOpen;
  for (Operation *op : parts->prologue) {
    std::string var = "s" + std::to_string(opIndex.lookup(op));
    io.load += elementwiseOpCode(op, element, var, in, proOpen);
    element[op->getResult(0)] = var;
  }
  for (const RowOut &o : outs)
    if (o.inLoad)
      io.load += in + o.name + "v.v[e] = " + element.lookup(o.inner) + ";\n";
  // The one-op norm loaded its row operands from memory; a computed one
  // that may end in a multiply (a library function's value) is sealed, so
  // that the norm's first additions cannot absorb it into an FMA (an empty
  // asm would not do: ptxas contracts across it). The prologue's
  // arithmetic ends rounded (Emitters.h).
  for (auto [i, v] : llvm::enumerate(norm->getOperands()))
    if (fusion::isRowOperand(norm, i)) {
      std::string value = loadAs(elementTypeOf(v), element.lookup(v));
      if (proOpen.contains(v))
        value = sealedOperand(value);
      io.load += in + rowDestination(norm, i) + " = " + value + ";\n";
    }
  io.load += ind + "}\n";
  for (const RowOut &o : outs)
    if (o.inLoad)
      io.load += ind + "reinterpret_cast<" + vec4(elementTypeOf(o.inner)) +
                 " *>(" + o.name + " + row * kCols)[c] = " + o.name + "v;\n";

  // Stores: the norm's row result in its own type, then the epilogue. The
  // epilogue's row inputs are loaded there, or (a norm gradient's
  // LLMC_NORM_GRAD_KERNEL=early, NormGradWarpKernel.cpp) at the start of
  // the row with x and dy, in flight together, kept in registers.
  Value rowResult = norm->getResult(0);
  const char *variant = std::getenv("LLMC_NORM_GRAD_KERNEL");
  bool early = !isa<LayerNormOp>(norm) && variant &&
               std::string(variant) == "early";
  for (unsigned k : epiInputs) {
    Type t = elementTypeOf(inputs[k]);
    std::string name = "q" + std::to_string(k);
    std::string load = "reinterpret_cast<const " + vec4(t) + " *>(in" +
                       std::to_string(k) + " + row * kCols)[c]";
    if (early) {
      io.rowSetup += "    " + vec4(t) + " " + name +
                     "s[kPerLane];\n"
                     "#pragma unroll\n"
                     "    for (int i = 0; i < kPerLane; ++i) {\n"
                     "      const int c = lane + 32 * i;\n"
                     "      if (c < kChunks)\n"
                     "        " + name + "s[i] = " + load + ";\n"
                     "    }\n";
      load = name + "s[i]";
    }
    io.storeBegin += ind + "const " + vec4(t) + " " + name + " = " + load +
                     ";\n";
  }
  for (const RowOut &o : outs)
    if (!o.inLoad)
      io.storeBegin +=
          ind + vec4(elementTypeOf(o.inner)) + " " + o.name + "v;\n";
  std::vector<std::pair<Value, std::string>> epiInputNames;
  for (unsigned k : epiInputs)
    epiInputNames.push_back({inputs[k], "q" + std::to_string(k) + ".v[e]"});
  io.storeElement = [=, &opIndex](const std::string &y) {
    llvm::DenseMap<Value, std::string> el;
    for (const auto &[v, name] : epiInputNames)
      el[v] = name;
    // The one-op kernel stored the row result. An f32 one ends in a plain
    // multiply (rstd * ...), which NVRTC or ptxas would contract with an
    // epilogue add into one FMA, one rounding fewer than the unfused
    // kernels (the bf16 residual-gradient epilogue was not bitwise for
    // that): it is open, and the epilogue's ops read it rounded (__fadd_rn)
    // or sealed (Emitters.h).
    Type rt = elementTypeOf(rowResult);
    std::string s = "          " + storageType(rt) + " nr = " +
                    storeAs(rt, y) + ";\n";
    llvm::DenseSet<Value> open;
    if (rt.isF32())
      open.insert(rowResult);
    el[rowResult] = "nr";
    for (Operation *op : parts->epilogue) {
      std::string var = "s" + std::to_string(opIndex.lookup(op));
      s += elementwiseOpCode(op, el, var, "          ", open);
      el[op->getResult(0)] = var;
    }
    for (const RowOut &o : outs)
      if (!o.inLoad)
        s += "          " + o.name + "v.v[e] = " + el.lookup(o.inner) + ";\n";
    return s;
  };
  for (const RowOut &o : outs)
    if (!o.inLoad)
      io.storeEnd += ind + "reinterpret_cast<" + vec4(elementTypeOf(o.inner)) +
                     " *>(" + o.name + " + row * kCols)[c] = " + o.name +
                     "v;\n";

  // Column sums: the row value as the epilogue code holds it (its storage
  // type: the value stored), widened.
  for (auto [k, op] : llvm::enumerate(parts->colSums)) {
    auto sum = cast<ReduceSumOp>(op);
    Value v = sum.getInput();
    std::string var =
        v.getDefiningOp() == norm
            ? std::string("nr")
            : "s" + std::to_string(opIndex.lookup(v.getDefiningOp()));
    std::optional<KernelArg> arg = resultArgOf(sum.getResult());
    if (!arg)
      return sum.emitError("codegen: a column sum no one reads");
    Type t = elementTypeOf(sum.getResult());
    io.types.push_back(t);
    io.columnSums.push_back({"colsum" + std::to_string(k),
                             loadAs(elementTypeOf(v), var), t, *arg});
  }

  std::string members;
  for (Operation *op : parts->prologue)
    members += " " + op->getName().getStringRef().str();
  io.scheme = "fused (llmc-fuse-elementwise, norm prologue/epilogue): "
              "prologue [" + members + " ] computed in the loads, epilogue [";
  for (Operation *op : parts->epilogue)
    io.scheme += " " + op->getName().getStringRef().str();
  io.scheme += " ] in the stores; " + std::to_string(outs.size()) +
               " row tensor(s) written";
  if (!parts->colSums.empty())
    io.scheme += "; " + std::to_string(parts->colSums.size()) +
                 " column sum(s) of row values";
  LogicalResult result = isa<LayerNormOp, RmsNormOp>(norm)
                             ? emitLayerNormWarpRows(norm, ctx, out, io)
                             : emitNormGradWarpRows(norm, ctx, out, io);
  if (failed(result))
    return failure();
  std::string origin = KernelSource::origin(group);
  for (EmittedKernel &k : out.kernels)
    k.origin = origin;
  return success();
}

} // namespace llmc::codegen
