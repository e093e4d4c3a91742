//===- Recipes.h - Named model recipes (gpt2, llama, bert) ------*- C++ -*-===//
//
// A recipe writes the JSON graph of a published model family at a named size
// (`llmc recipe gpt2 --size 124M`): the training forward pass from token ids
// `idx` and `targets` to the mean cross-entropy `loss`, with the composite
// llmc ops (layer_norm, attention, gelu, rms_norm, rotary, silu,
// cross_entropy) and the parameter initialization that PyTorch/transformers
// use. Recipes are code, not checked-in files, so every size stays in step
// with the format.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_FRONTENDS_JSON_RECIPES_RECIPES_H
#define LLMC_FRONTENDS_JSON_RECIPES_RECIPES_H

#include "frontends/json/Json.h"

#include <optional>
#include <string>
#include <vector>

namespace llmc::json {

struct Recipe {
  const char *name;
  const char *description;
  /// The sizes, smallest first ("tiny", "124M", ...).
  std::vector<std::string> (*sizes)();
  /// The graph of one size; nullopt for an unknown size.
  std::optional<Json> (*build)(const std::string &size);
};

const std::vector<Recipe> &recipes();
const Recipe *lookupRecipe(const std::string &name);

std::vector<std::string> gpt2Sizes();
std::optional<Json> buildGpt2(const std::string &size);
std::vector<std::string> llamaSizes();
std::optional<Json> buildLlama(const std::string &size);
std::vector<std::string> bertSizes();
std::optional<Json> buildBert(const std::string &size);

/// Counts of a graph for `llmc recipe --summary`: parameters (elements and
/// tensors, with symbolic dims at their defaults) and nodes per op.
struct GraphSummary {
  int64_t parameterCount = 0;
  int64_t parameterTensors = 0;
  int64_t nodeCount = 0;
  std::vector<std::pair<std::string, int64_t>> opCounts; // sorted by op
};
GraphSummary summarizeGraph(const Json &graph);

/// 124439808 -> "124,439,808".
std::string withThousands(int64_t value);

} // namespace llmc::json

#endif // LLMC_FRONTENDS_JSON_RECIPES_RECIPES_H
