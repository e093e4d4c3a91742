//===- PrecisionExplain.cpp - Every op's precision, and why ---------------===//
#include "compiler/PrecisionExplain.h"

#include "compiler/Pipeline.h"
#include "compiler/codegen/Emitters.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <map>
#include <nlohmann/json.hpp>

using namespace mlir;

namespace llmc {

namespace {

PrecisionExplanation summaryOnly(const std::string &precision,
                                 const std::string &line) {
  PrecisionExplanation out;
  out.text = "precision " + precision + ": " + line + "\n";
  nlohmann::json doc;
  doc["precision"] = precision;
  doc["summary"] = line;
  doc["ops"] = nlohmann::json::array();
  out.json = doc.dump();
  return out;
}

std::string str(DictionaryAttr d, StringRef key) {
  auto s = d.getAs<StringAttr>(key);
  return s ? s.getValue().str() : "";
}

} // namespace

PrecisionExplanation explainPrecision(ModuleOp module,
                                      const PrecisionConfig &precision) {
  const std::string &p = precision.precision;
  if (!module.lookupSymbol<func::FuncOp>("forward"))
    return summaryOnly(p, "the module has only a hand-written @train_step, "
                          "which runs in the types it declares");
  if (p == "fp32")
    return summaryOnly(p, "every op computes in the types the model "
                          "declares; no casts (--precision bf16|fp16|tf32 "
                          "lower it)");
  if (p == "tf32")
    return summaryOnly(p, "every tensor stays f32; every f32 matmul of the "
                          "step, forward and backward, is a TF32 "
                          "tensor-core GEMM (operands rounded to 10 mantissa "
                          "bits, f32 accumulation)");
  OwningOpRef<ModuleOp> copy = module.clone();
  if (failed(runPrecisionExplainPipeline(*copy, precision)))
    return summaryOnly(p, "llmc-lower-precision failed on this model (see "
                          "the errors above)");
  auto entries = (*copy)->getAttrOfType<ArrayAttr>("llmc.precision_explain");
  if (!entries)
    return summaryOnly(p, "llmc-lower-precision recorded no decisions");

  std::string lines;
  std::map<std::string, int> byType;
  int inserted = 0;
  nlohmann::json ops = nlohmann::json::array();
  for (Attribute a : entries) {
    auto d = dyn_cast<DictionaryAttr>(a);
    if (!d)
      continue;
    std::string op = str(d, "op"), type = str(d, "type"),
                cls = str(d, "class"), why = str(d, "why");
    std::vector<std::string> names;
    std::string position;
    if (auto loc = d.getAs<LocationAttr>("loc"))
      codegen::describeLoc(Location(loc), names, position);
    std::string label = op;
    for (const std::string &n : names)
      label += " \"" + n + "\"";
    if (!position.empty())
      label += " at " + position;
    lines += "  " + label + ": " + type + " (" + cls + ") " + why + "\n";
    ++byType[type];
    inserted += why.rfind("inserted", 0) == 0;
    ops.push_back({{"op", op},
                   {"names", names},
                   {"at", position},
                   {"type", type},
                   {"class", cls},
                   {"why", why}});
  }
  std::string counts;
  for (const auto &[type, n] : byType)
    if (type != "-")
      counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + type;
  if (int none = byType.count("-") ? byType["-"] : 0)
    counts += ", " + std::to_string(none) + " with no float type";
  PrecisionExplanation out;
  out.text = "precision " + p + " of @forward (llmc-lower-precision, "
             "docs/precision.md): " + std::to_string(ops.size()) +
             " ops computing in " + counts + "; " + std::to_string(inserted) +
             " casts inserted\n" + lines;
  nlohmann::json doc;
  doc["precision"] = p;
  doc["function"] = "forward";
  doc["ops"] = ops;
  out.json = doc.dump();
  return out;
}

} // namespace llmc
