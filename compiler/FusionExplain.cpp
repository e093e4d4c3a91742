//===- FusionExplain.cpp - What was fused, and why not the rest -----------===//
#include "compiler/FusionExplain.h"

#include "compiler/codegen/Emitters.h"

#include "passes/FusionUtils.h"

#include "mlir/IR/Location.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <nlohmann/json.hpp>

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::fusion;

namespace llmc {

namespace {

bool isElementwiseGroup(KernelOp g) {
  GroupKind kind = classify(g);
  return kind == GroupKind::Elementwise ||
         (kind == GroupKind::Single &&
          isElementwise(&*g.getGroupOps().begin()));
}

/// The op of `group` that yields its result `k`.
Operation *producerOf(KernelOp group, unsigned k) {
  return group.getYield()->getOperand(k).getDefiningOp();
}

/// Why `consumer`, reading result `value` of `producer`, is a separate
/// launch; empty when no fusion rule concerns the pair.
std::string whyNotFused(KernelOp producer, KernelOp consumer, OpResult value,
                        const FusionConfig &config) {
  bool pe = isElementwiseGroup(producer), ce = isElementwiseGroup(consumer);
  Operation *def = producerOf(producer, value.getResultNumber());
  Operation *firstUse = nullptr;
  for (Operation &op : consumer.getGroupOps())
    if (llvm::is_contained(op.getOperands(), value)) {
      firstUse = &op;
      break;
    }
  // A bias gradient of a norm gradient's row value (in its own group or a
  // weight gradient's epilogue) could have been summed in the row kernel.
  for (Operation &op : consumer.getGroupOps())
    if (auto sum = dyn_cast<ReduceSumOp>(op);
        sum && sum.getInput() == value && warpNormOf(producer)) {
      if (!config.colSums)
        return "column sums in norm gradients are off (--no-fuse=colsum)";
      if (auto why = normColumnSumBlocker(producer, sum, value))
        return "a column sum of the norm group's result: " + *why;
    }
  if (firstUse && isa<MatmulOp>(firstUse))
    return "'llmc.matmul' is a cuBLASLt call: it reads its operands from "
           "memory as they are (no prologue)";
  if (classify(consumer) == GroupKind::MatmulBias)
    return "the bias of a cuBLASLt BIAS epilogue is read from memory as it "
           "is";
  if (pe && ce) {
    if (!config.elementwise)
      return "vertical elementwise fusion is off (--no-fuse=elementwise)";
    if (auto why = verticalBlocker(producer, consumer, value))
      return *why;
    return "fusible, but the consumer already reads a producer it merged "
           "with first";
  }
  if (ce && firstUse && isNarrowingFloatCast(firstUse)) {
    if (!config.reductions)
      return "casts into reductions are off (--no-fuse=reductions)";
    if (!value.hasOneUse())
      return "the narrowing cast's input is read by another group too (it "
             "must be written as it is)";
    if (!absorbsResultCast(def, cast<OpResult>(producer.getYield()->getOperand(
                                        value.getResultNumber()))
                                    .getResultNumber()))
      return "'" + def->getName().getStringRef().str() +
             "' stores no other type than its own (no cast epilogue)";
  }
  if (pe && def && isWideningFloatCast(def)) {
    if (!config.reductions)
      return "casts into reductions are off (--no-fuse=reductions)";
    for (OpOperand &use : value.getUses())
      if (!absorbsOperandCast(use.getOwner(), use.getOperandNumber()))
        return "the widened value is also read by '" +
               use.getOwner()->getName().getStringRef().str() +
               "', which cannot load the narrow type (materialized once)";
  }
  Operation *norm = warpNormOf(consumer);
  if (pe && norm && firstUse &&
      (firstUse == norm || firstUse->isBeforeInBlock(norm))) {
    if (!config.normPrologue)
      return "norm prologues are off (--no-fuse=norm-prologue)";
    if (auto why = normPrologueBlocker(producer, consumer, value))
      return *why;
  }
  if (ce && def && warpNormOf(producer) &&
      (def == warpNormOf(producer) || isElementwise(def))) {
    if (!config.normEpilogue)
      return "norm epilogues are off (--no-fuse=norm-epilogue)";
    if (auto why = normEpilogueBlocker(producer, consumer, value))
      return *why;
  }
  if (isa_and_nonnull<MatmulOp>(def) && ce)
    return "a matmul's result: only a row-vector bias add rides in "
           "cuBLASLt's epilogue (llmc-fuse-epilogues); other elementwise "
           "work is a kernel of its own";
  if (pe && !ce)
    return "'" + (firstUse ? firstUse->getName().getStringRef().str()
                           : std::string("?")) +
           "' takes no elementwise prologue";
  if (ce && !pe && def)
    return "'" + def->getName().getStringRef().str() +
           "' takes no elementwise epilogue";
  return "";
}

} // namespace

FusionExplanation explainFusion(func::FuncOp func, const FusionConfig &config) {
  FusionExplanation out;
  nlohmann::json groups = nlohmann::json::array();
  llvm::DenseMap<Operation *, unsigned> indexOf;
  std::string text;
  size_t fusedOps = 0, boundaryCount = 0;
  for (Operation &op : func.getBody().front()) {
    auto group = dyn_cast<KernelOp>(op);
    if (!group)
      continue;
    unsigned index = indexOf.size();
    indexOf[group] = index;
    GroupKind kind = classify(group);
    nlohmann::json g;
    g["index"] = index;
    g["kind"] = kindName(kind);
    nlohmann::json members = nlohmann::json::array();
    std::string memberText;
    size_t count = 0;
    for (Operation &m : group.getGroupOps()) {
      std::vector<std::string> names;
      std::string position;
      codegen::describeLoc(m.getLoc(), names, position);
      nlohmann::json mj;
      mj["op"] = m.getName().getStringRef().str();
      mj["names"] = names;
      if (!position.empty())
        mj["loc"] = position;
      members.push_back(mj);
      memberText += "    " + m.getName().getStringRef().str();
      for (const std::string &n : names)
        memberText += " \"" + n + "\"";
      if (!position.empty())
        memberText += " at " + position;
      // A copy llmc-rematerialize put in the backward (docs/memory.md).
      if (m.hasAttr("llmc.recomputed")) {
        mj["recomputed"] = true;
        memberText += " (recomputed)";
      }
      memberText += "\n";
      ++count;
    }
    if (count > 1)
      fusedOps += count;
    g["members"] = members;
    nlohmann::json boundaries = nlohmann::json::array();
    std::string boundaryText;
    for (Value v : groupInputs(group)) {
      auto result = dyn_cast<OpResult>(v);
      auto producer = result ? dyn_cast<KernelOp>(result.getOwner()) : nullptr;
      if (!producer || !indexOf.count(producer))
        continue;
      std::string why = whyNotFused(producer, group, result, config);
      if (why.empty())
        continue;
      nlohmann::json b;
      b["from"] = indexOf.lookup(producer);
      b["result"] = result.getResultNumber();
      b["reason"] = why;
      boundaries.push_back(b);
      boundaryText += "    not fused with group " +
                      std::to_string(indexOf.lookup(producer)) + ": " + why +
                      "\n";
      ++boundaryCount;
    }
    g["unfused"] = boundaries;
    groups.push_back(g);
    text += "group " + std::to_string(index) + " (" + kindName(kind) + ", " +
            std::to_string(count) + (count == 1 ? " op" : " ops") + ")\n" +
            memberText + boundaryText;
  }
  nlohmann::json doc;
  doc["function"] = func.getName().str();
  doc["groups"] = groups;
  doc["fusion"] = {{"elementwise", config.elementwise},
                   {"reductions", config.reductions},
                   {"horizontal", config.horizontal},
                   {"norm-prologue", config.normPrologue},
                   {"norm-epilogue", config.normEpilogue},
                   {"colsum", config.colSums},
                   {"epilogues", config.epilogues},
                   {"gelu-epilogue", config.geluEpilogue},
                   {"gelu-grad-epilogue", config.geluGradEpilogue},
                   {"gelu-grad-bias-grad", config.geluGradBiasGrad},
                   {"bias-grad-epilogue", config.biasGradEpilogue}};
  out.json = doc.dump(1) + "\n";
  out.text = "fusion of @" + func.getName().str() + ": " +
             std::to_string(indexOf.size()) + " groups, " +
             std::to_string(fusedOps) + " ops in groups of several, " +
             std::to_string(boundaryCount) + " unfused boundaries\n" + text;
  return out;
}

} // namespace llmc
