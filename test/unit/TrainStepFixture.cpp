//===- TrainStepFixture.cpp - Tiny training steps for evaluator tests ---===//
//
// TrainStepFixture.h.
//
//===----------------------------------------------------------------------===//
#include "test/unit/TrainStepFixture.h"

#include "compiler/Pipeline.h"
#include "compiler/eval/Evaluator.h"
#include "frontends/json/JsonImporter.h"
#include "frontends/json/recipes/Recipes.h"

#include "mlir/Parser/Parser.h"

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

namespace llmc::test {

using namespace mlir;

OwningOpRef<ModuleOp> gpt2TinyStep(MLIRContext &context,
                                   const std::string &precision) {
  std::ifstream in(std::string(LLMC_TEST_MODELS) + "/gpt2-tiny.mlir");
  std::stringstream text;
  text << in.rdbuf();
  auto module = parseSourceString<ModuleOp>(text.str(), &context);
  PrecisionConfig p;
  p.precision = precision;
  if (!module || failed(runTrainingPipeline(*module, OptimizerConfig(), p)))
    return nullptr;
  return module;
}

OwningOpRef<ModuleOp> llamaTinyStep(MLIRContext &context,
                                    const std::string &precision) {
  std::optional<json::Json> graph = json::buildLlama("tiny");
  if (!graph)
    return nullptr;
  JsonImportOptions options;
  options.shapes = {{"batch", 2}, {"seq", 16}};
  OwningOpRef<ModuleOp> module =
      importJsonText(json::dump(*graph), "llama-tiny", options, context);
  PrecisionConfig p;
  p.precision = precision;
  if (!module || failed(runRaisePipeline(*module)) ||
      failed(runTrainingPipeline(*module, OptimizerConfig(), p)))
    return nullptr;
  return module;
}

std::vector<RefTensor> stepArguments(func::FuncOp func, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<RefTensor> args;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto type = cast<RankedTensorType>(func.getArgument(i).getType());
    ElementKind kind = *kindOf(type.getElementType());
    RefTensor t(kind, {type.getShape().begin(), type.getShape().end()});
    auto input = func.getArgAttrOfType<StringAttr>(i, "llmc.input");
    auto state = func.getArgAttrOfType<StringAttr>(i, "llmc.state");
    std::string name = input   ? input.getValue().str()
                       : state ? state.getValue().str()
                               : "";
    for (int64_t e = 0; e < t.numElements(); ++e) {
      if (!t.isFloat())
        t.ints[e] = name == "step" ? 1 : static_cast<int64_t>(rng() % 512);
      else if (name == "adamw.m")
        t.floats[e] = 0;
      else if (name == "lr" || name == "adamw.v")
        t.floats[e] = roundToKind(std::fabs(normal(rng)) * 0.01, kind);
      else
        t.floats[e] = roundToKind(normal(rng) * 0.1, kind);
    }
    args.push_back(std::move(t));
  }
  return args;
}

bool bitwiseEqual(const RefTensor &a, const RefTensor &b) {
  if (a.shape != b.shape || a.ints != b.ints ||
      a.floats.size() != b.floats.size())
    return false;
  for (size_t e = 0; e < a.floats.size(); ++e) {
    double x = a.floats[e], y = b.floats[e];
    if (!((x == y && std::signbit(x) == std::signbit(y)) ||
          (std::isnan(x) && std::isnan(y))))
      return false;
  }
  return true;
}

} // namespace llmc::test
