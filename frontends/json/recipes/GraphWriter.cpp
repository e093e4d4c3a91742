//===- GraphWriter.cpp - Write llmc JSON graphs from C++ ------------------===//
#include "frontends/json/recipes/GraphWriter.h"

namespace llmc::json {

GraphWriter::GraphWriter(const std::string &name, const std::string &about) {
  root["//"] = about;
  root["format"] = "llmc-graph";
  root["version"] = 1;
  root["name"] = name;
  root["dims"] = Json::object();
  root["inputs"] = Json::array();
  root["parameters"] = Json::array();
  root["nodes"] = Json::array();
  root["outputs"] = Json::array();
}

void GraphWriter::dim(const std::string &name, int64_t defaultValue) {
  root["dims"][name] = defaultValue;
}

std::string GraphWriter::input(const std::string &name,
                               const std::string &dtype, Json shape) {
  root["inputs"].push_back(
      Json{{"name", name}, {"dtype", dtype}, {"shape", std::move(shape)}});
  return name;
}

std::string GraphWriter::param(const std::string &name, Json shape,
                               const std::string &init) {
  root["parameters"].push_back(Json{{"name", name},
                                    {"dtype", "f32"},
                                    {"shape", std::move(shape)},
                                    {"init", init}});
  return name;
}

std::string GraphWriter::node(const std::string &op, std::vector<Json> inputs,
                              const std::string &out, Json attrs) {
  return nodeN(op, std::move(inputs), {out}, std::move(attrs)).front();
}

std::vector<std::string> GraphWriter::nodeN(const std::string &op,
                                            std::vector<Json> inputs,
                                            std::vector<std::string> outs,
                                            Json attrs) {
  Json n{{"op", op}, {"inputs", Json(std::move(inputs))}, {"outputs", outs}};
  if (!attrs.empty())
    n["attrs"] = std::move(attrs);
  root["nodes"].push_back(std::move(n));
  return outs;
}

void GraphWriter::output(const std::string &name) {
  root["outputs"].push_back(name);
}

std::string GraphWriter::linear(const std::string &x, const std::string &prefix,
                                int64_t in, int64_t out, bool bias,
                                const std::string &weightInit) {
  std::string w = param(prefix + ".weight", {out, in}, weightInit);
  std::string y = node("matmul", {x, w}, prefix + (bias ? ".xw" : ".out"),
                       {{"transpose_rhs", true}});
  if (!bias)
    return y;
  std::string b = param(prefix + ".bias", {out}, "zeros");
  return node("add", {y, b}, prefix + ".out");
}

std::string GraphWriter::splitHeads(const std::string &x,
                                    const std::string &out, int64_t heads,
                                    int64_t headDim) {
  std::string r = node("reshape", {x}, out + ".bthd",
                       {{"shape", {"batch", "seq", heads, headDim}}});
  return node("transpose", {r}, out, {{"permutation", {0, 2, 1, 3}}});
}

std::string GraphWriter::mergeHeads(const std::string &x,
                                    const std::string &out, int64_t width) {
  std::string t =
      node("transpose", {x}, out + ".bthd", {{"permutation", {0, 2, 1, 3}}});
  return node("reshape", {t}, out, {{"shape", {"batch", "seq", width}}});
}

} // namespace llmc::json
