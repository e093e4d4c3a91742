//===- Gpt2Recipe.cpp - GPT-2 as nanoGPT writes it ------------------------===//
//
// The published GPT-2 configurations (vocab 50257, n_ctx 1024) and a tiny one
// equal to the reference models in test/models (2 layers, d 64, 4 heads,
// vocab 512, seq 64). The graph follows nanoGPT's model.py:
//
//   x = wte[idx] + wpe[:seq]
//   per layer: x += c_proj(attention(c_attn(ln_1(x)), causal))
//              x += mlp.c_proj(gelu_tanh(c_fc(ln_2(x))))
//   loss = cross_entropy(ln_f(x) wte^T, targets)       (lm_head tied to wte)
//
// Parameter names are nanoGPT's (transformer.h.0.attn.c_attn.weight, ...).
// Initialization as nanoGPT's _init_weights: N(0, 0.02) for linear and
// embedding weights, zero biases, LayerNorm weight 1 / bias 0, and the
// residual projections (c_proj) N(0, 0.02 / sqrt(2 * n_layer)).
//
//===----------------------------------------------------------------------===//
#include "frontends/json/InitRule.h"
#include "frontends/json/recipes/GraphWriter.h"
#include "frontends/json/recipes/Recipes.h"

#include <cmath>

namespace llmc::json {

namespace {
struct Gpt2Config {
  const char *size;
  int64_t layers, d, heads, vocab, ctx;
};
} // namespace

static const Gpt2Config kConfigs[] = {
    {"tiny", 2, 64, 4, 512, 64},         {"124M", 12, 768, 12, 50257, 1024},
    {"350M", 24, 1024, 16, 50257, 1024}, {"774M", 36, 1280, 20, 50257, 1024},
    {"1.5B", 48, 1600, 25, 50257, 1024},
};

std::vector<std::string> gpt2Sizes() {
  std::vector<std::string> sizes;
  for (const Gpt2Config &c : kConfigs)
    sizes.push_back(c.size);
  return sizes;
}

/// LayerNorm with a ones weight and a zeros bias, eps 1e-5 (nn.LayerNorm).
static std::string layerNorm(GraphWriter &g, const std::string &x,
                             const std::string &prefix, int64_t d) {
  std::string w = g.param(prefix + ".weight", {d}, "ones");
  std::string b = g.param(prefix + ".bias", {d}, "zeros");
  return g.node("layer_norm", {x, w, b}, prefix + ".out", {{"epsilon", 1e-5}});
}

std::optional<Json> buildGpt2(const std::string &size) {
  const Gpt2Config *cfg = nullptr;
  for (const Gpt2Config &c : kConfigs)
    if (size == c.size)
      cfg = &c;
  if (!cfg)
    return std::nullopt;
  int64_t d = cfg->d, hd = d / cfg->heads;
  std::string residualInit =
      InitRule::normal(0.02 / std::sqrt(2.0 * cfg->layers)).str();
  GraphWriter g("gpt2-" + size,
                "GPT-2 " + size + ": " + std::to_string(cfg->layers) +
                    " layers, d_model " + std::to_string(d) + ", " +
                    std::to_string(cfg->heads) + " heads, vocab " +
                    std::to_string(cfg->vocab) + ", n_ctx " +
                    std::to_string(cfg->ctx) +
                    "; written by `llmc recipe "
                    "gpt2 --size " +
                    size + "`");
  g.dim("batch", 8);
  g.dim("seq", cfg->ctx);
  std::string idx = g.input("idx", "i64", {"batch", "seq"});
  std::string targets = g.input("targets", "i64", {"batch", "seq"});

  std::string wte =
      g.param("transformer.wte.weight", {cfg->vocab, d}, "normal(0.02)");
  std::string wpe =
      g.param("transformer.wpe.weight", {cfg->ctx, d}, "normal(0.02)");
  std::string tok = g.node("gather", {wte, idx}, "tok_emb", {{"axis", 0}});
  std::string pos =
      g.node("slice", {wpe}, "pos_emb",
             {{"starts", {0, 0}}, {"limits", {"seq", d}}, {"strides", {1, 1}}});
  std::string x = g.node("add", {tok, pos}, "x.emb");

  for (int64_t l = 0; l < cfg->layers; ++l) {
    std::string h = "transformer.h." + std::to_string(l);
    std::string a = layerNorm(g, x, h + ".ln_1", d);
    std::string qkv = g.linear(a, h + ".attn.c_attn", d, 3 * d, true);
    auto parts = g.nodeN("split", {qkv}, {h + ".q", h + ".k", h + ".v"},
                         {{"axis", 2}, {"sizes", {d, d, d}}});
    std::string q = g.splitHeads(parts[0], h + ".q.heads", cfg->heads, hd);
    std::string k = g.splitHeads(parts[1], h + ".k.heads", cfg->heads, hd);
    std::string v = g.splitHeads(parts[2], h + ".v.heads", cfg->heads, hd);
    std::string att =
        g.node("attention", {q, k, v}, h + ".attn.out", {{"causal", true}});
    std::string y = g.mergeHeads(att, h + ".attn.merged", d);
    y = g.linear(y, h + ".attn.c_proj", d, d, true, residualInit);
    x = g.node("add", {x, y}, h + ".x.attn");

    std::string m = layerNorm(g, x, h + ".ln_2", d);
    m = g.linear(m, h + ".mlp.c_fc", d, 4 * d, true);
    m = g.node("gelu", {m}, h + ".mlp.gelu", {{"approximation", "tanh"}});
    m = g.linear(m, h + ".mlp.c_proj", 4 * d, d, true, residualInit);
    x = g.node("add", {x, m}, h + ".x.mlp");
  }
  x = layerNorm(g, x, "transformer.ln_f", d);
  std::string logits =
      g.node("matmul", {x, wte}, "logits", {{"transpose_rhs", true}});
  g.node("cross_entropy", {logits, targets}, "loss", {{"reduction", "mean"}});
  g.output("loss");
  return g.graph();
}

} // namespace llmc::json
