//===- Recipes.cpp - The recipe registry and graph summaries --------------===//
#include "frontends/json/recipes/Recipes.h"

#include <map>

namespace llmc::json {

const std::vector<Recipe> &recipes() {
  static const std::vector<Recipe> table = {
      {"gpt2", "GPT-2 (nanoGPT layout): pre-LN, tanh GELU, tied lm_head",
       gpt2Sizes, buildGpt2},
      {"llama", "Llama 3: RMSNorm, RoPE, SwiGLU, grouped-query attention",
       llamaSizes, buildLlama},
      {"bert", "BERT masked LM: post-LN, erf GELU, bidirectional attention",
       bertSizes, buildBert},
  };
  return table;
}

const Recipe *lookupRecipe(const std::string &name) {
  for (const Recipe &r : recipes())
    if (name == r.name)
      return &r;
  return nullptr;
}

std::string withThousands(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value), result;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      result += ',';
    result += digits[i];
  }
  return value < 0 ? "-" + result : result;
}

GraphSummary summarizeGraph(const Json &graph) {
  GraphSummary s;
  const Json *dims = member(graph, "dims");
  if (const Json *params = member(graph, "parameters");
      params && params->is_array()) {
    for (const Json &p : *params) {
      const Json *shape = member(p, "shape");
      if (!shape || !shape->is_array())
        continue;
      int64_t count = 1;
      for (const Json &d : *shape) {
        std::optional<int64_t> v = asInt(d);
        if (!v && d.is_string() && dims)
          if (const Json *def = member(*dims, d.get<std::string>().c_str()))
            v = asInt(*def);
        count *= v.value_or(0);
      }
      s.parameterCount += count;
      ++s.parameterTensors;
    }
  }
  std::map<std::string, int64_t> ops;
  if (const Json *nodes = member(graph, "nodes"); nodes && nodes->is_array()) {
    for (const Json &n : *nodes) {
      const Json *op = member(n, "op");
      ++ops[op && op->is_string() ? op->get<std::string>() : "?"];
      ++s.nodeCount;
    }
  }
  s.opCounts.assign(ops.begin(), ops.end());
  return s;
}

} // namespace llmc::json
