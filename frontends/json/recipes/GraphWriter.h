//===- GraphWriter.h - Write llmc JSON graphs from C++ ----------*- C++ -*-===//
//
// The recipes write their graphs through this small builder, so that the
// JSON they produce is exactly what a user could write by hand
// (docs/json-format.md) and goes through the same importer. It also holds
// the building blocks the transformer recipes share: linear layers and the
// [B, T, H*D] <-> [B, H, T, D] head reshapes around llmc.attention.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_FRONTENDS_JSON_RECIPES_GRAPHWRITER_H
#define LLMC_FRONTENDS_JSON_RECIPES_GRAPHWRITER_H

#include "frontends/json/Json.h"

#include <string>
#include <vector>

namespace llmc::json {

class GraphWriter {
public:
  /// `name` is the graph's "name"; `about` goes into its "//" comment.
  GraphWriter(const std::string &name, const std::string &about);

  void dim(const std::string &name, int64_t defaultValue);
  /// Declares a data input and returns its name.
  std::string input(const std::string &name, const std::string &dtype,
                    Json shape);
  /// Declares an f32 parameter with an init rule and returns its name.
  std::string param(const std::string &name, Json shape,
                    const std::string &init);

  /// Appends a node with one result named `out` and returns `out`. A null
  /// entry in `inputs` stands for an absent optional operand.
  std::string node(const std::string &op, std::vector<Json> inputs,
                   const std::string &out, Json attrs = Json::object());
  /// A node with several results (split).
  std::vector<std::string> nodeN(const std::string &op,
                                 std::vector<Json> inputs,
                                 std::vector<std::string> outs,
                                 Json attrs = Json::object());
  void output(const std::string &name);

  // Shared building blocks. `prefix` names the parameters and values.

  /// x W^T (+ b), W of shape [out, in] as torch.nn.Linear stores it.
  std::string linear(const std::string &x, const std::string &prefix,
                     int64_t in, int64_t out, bool bias,
                     const std::string &weightInit = "normal(0.02)");
  /// [batch, seq, heads*headDim] -> [batch, heads, seq, headDim].
  std::string splitHeads(const std::string &x, const std::string &out,
                         int64_t heads, int64_t headDim);
  /// [batch, heads, seq, headDim] -> [batch, seq, heads*headDim].
  std::string mergeHeads(const std::string &x, const std::string &out,
                         int64_t width);

  const Json &graph() const { return root; }

private:
  Json root;
};

} // namespace llmc::json

#endif // LLMC_FRONTENDS_JSON_RECIPES_GRAPHWRITER_H
