//===- BertRecipe.cpp - BERT masked LM as transformers writes it ----------===//
//
// BertForMaskedLM (transformers), parameter names included, without the
// pooler (the MLM loss does not use it) and without an attention mask (every
// sequence is full length):
//
//   x = LN(word[idx] + position[:seq] + token_type[0])
//   per layer (post-LN): x = LN(x + dense(attention(q, k, v)))
//                        x = LN(x + down(gelu_erf(up(x))))
//   logits = LN(gelu_erf(transform(x))) word^T + bias     (decoder tied)
//   loss = cross_entropy(logits, targets, ignore_index -100)
//
// `targets` holds the token id at masked positions and -100 elsewhere, so the
// mean runs over the masked tokens only, as in transformers. LayerNorm eps is
// 1e-12; initialization is N(0, 0.02) for linear and embedding weights, zero
// biases, LayerNorm weight 1 / bias 0.
//
//===----------------------------------------------------------------------===//
#include "frontends/json/recipes/GraphWriter.h"
#include "frontends/json/recipes/Recipes.h"

namespace llmc::json {

namespace {
struct BertConfig {
  const char *size;
  int64_t layers, d, heads, ffn, vocab, maxPos;
};
} // namespace

static const BertConfig kConfigs[] = {
    {"tiny", 2, 64, 4, 256, 512, 64},
    {"base", 12, 768, 12, 3072, 30522, 512},
    {"large", 24, 1024, 16, 4096, 30522, 512},
};

std::vector<std::string> bertSizes() {
  std::vector<std::string> sizes;
  for (const BertConfig &c : kConfigs)
    sizes.push_back(c.size);
  return sizes;
}

std::optional<Json> buildBert(const std::string &size) {
  const BertConfig *cfg = nullptr;
  for (const BertConfig &c : kConfigs)
    if (size == c.size)
      cfg = &c;
  if (!cfg)
    return std::nullopt;
  int64_t d = cfg->d, hd = d / cfg->heads;
  GraphWriter g("bert-" + size,
                "BERT " + size + " masked LM: " + std::to_string(cfg->layers) +
                    " layers, d_model " + std::to_string(d) + ", " +
                    std::to_string(cfg->heads) + " heads, vocab " +
                    std::to_string(cfg->vocab) + ", max positions " +
                    std::to_string(cfg->maxPos) +
                    "; written by `llmc recipe bert --size " + size + "`");
  g.dim("batch", 8);
  g.dim("seq", cfg->maxPos);
  std::string idx = g.input("idx", "i64", {"batch", "seq"});
  std::string targets = g.input("targets", "i64", {"batch", "seq"});

  auto layerNorm = [&](const std::string &in, const std::string &prefix) {
    std::string w = g.param(prefix + ".weight", {d}, "ones");
    std::string b = g.param(prefix + ".bias", {d}, "zeros");
    return g.node("layer_norm", {in, w, b}, prefix + ".out",
                  {{"epsilon", 1e-12}});
  };

  const std::string e = "bert.embeddings";
  std::string word =
      g.param(e + ".word_embeddings.weight", {cfg->vocab, d}, "normal(0.02)");
  std::string posTable = g.param(e + ".position_embeddings.weight",
                                 {cfg->maxPos, d}, "normal(0.02)");
  std::string typeTable =
      g.param(e + ".token_type_embeddings.weight", {2, d}, "normal(0.02)");
  std::string tok = g.node("gather", {word, idx}, e + ".tok", {{"axis", 0}});
  std::string pos =
      g.node("slice", {posTable}, e + ".pos",
             {{"starts", {0, 0}}, {"limits", {"seq", d}}, {"strides", {1, 1}}});
  std::string type =
      g.node("slice", {typeTable}, e + ".type",
             {{"starts", {0, 0}}, {"limits", {1, d}}, {"strides", {1, 1}}});
  std::string x = g.node("add", {tok, pos}, e + ".sum0");
  x = g.node("add", {x, type}, e + ".sum");
  x = layerNorm(x, e + ".LayerNorm");

  for (int64_t l = 0; l < cfg->layers; ++l) {
    std::string p = "bert.encoder.layer." + std::to_string(l);
    std::string q = g.linear(x, p + ".attention.self.query", d, d, true);
    std::string k = g.linear(x, p + ".attention.self.key", d, d, true);
    std::string v = g.linear(x, p + ".attention.self.value", d, d, true);
    q = g.splitHeads(q, p + ".q.heads", cfg->heads, hd);
    k = g.splitHeads(k, p + ".k.heads", cfg->heads, hd);
    v = g.splitHeads(v, p + ".v.heads", cfg->heads, hd);
    std::string att = g.node("attention", {q, k, v}, p + ".attention.out");
    std::string o = g.mergeHeads(att, p + ".attention.merged", d);
    o = g.linear(o, p + ".attention.output.dense", d, d, true);
    x = g.node("add", {x, o}, p + ".attention.residual");
    x = layerNorm(x, p + ".attention.output.LayerNorm");

    std::string m = g.linear(x, p + ".intermediate.dense", d, cfg->ffn, true);
    m = g.node("gelu", {m}, p + ".intermediate.gelu",
               {{"approximation", "erf"}});
    m = g.linear(m, p + ".output.dense", cfg->ffn, d, true);
    x = g.node("add", {x, m}, p + ".output.residual");
    x = layerNorm(x, p + ".output.LayerNorm");
  }

  const std::string c = "cls.predictions";
  std::string t = g.linear(x, c + ".transform.dense", d, d, true);
  t = g.node("gelu", {t}, c + ".transform.gelu", {{"approximation", "erf"}});
  t = layerNorm(t, c + ".transform.LayerNorm");
  std::string logits =
      g.node("matmul", {t, word}, c + ".decoder", {{"transpose_rhs", true}});
  std::string bias = g.param(c + ".bias", {cfg->vocab}, "zeros");
  logits = g.node("add", {logits, bias}, "logits");
  g.node("cross_entropy", {logits, targets}, "loss",
         {{"reduction", "mean"}, {"ignore_index", -100}});
  g.output("loss");
  return g.graph();
}

} // namespace llmc::json
