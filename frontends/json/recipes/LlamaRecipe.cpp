//===- LlamaRecipe.cpp - Llama 3 as transformers writes it ----------------===//
//
// LlamaForCausalLM (transformers), parameter names included:
//
//   x = embed_tokens[idx]
//   per layer: h = rms_norm(x);  q, k, v = h Wq^T, h Wk^T, h Wv^T
//              q, k = rotary(q), rotary(k)          (rotate-half form)
//              x += o_proj(attention(q, k, v, causal))  (GQA: Hkv < Hq)
//              h = rms_norm(x);  x += down(silu(gate(h)) * up(h))
//   loss = cross_entropy(norm(x) lm_head^T, targets)
//
// The RoPE tables are computed in the graph from positions (iota) and the
// inverse frequencies, a constant of head_dim/2 values that includes Llama
// 3.1/3.2's "llama3" frequency scaling where the model has it; cos/sin ops
// then make [seq, head_dim] tables for any --shape seq=N. Initialization is
// transformers' _init_weights: N(0, 0.02) for linear and embedding weights,
// ones for RMSNorm weights (no scaled residual init).
//
//===----------------------------------------------------------------------===//
#include "frontends/json/recipes/GraphWriter.h"
#include "frontends/json/recipes/Recipes.h"

#include <cmath>

namespace llmc::json {

namespace {
struct LlamaConfig {
  const char *size;
  int64_t layers, d, heads, kvHeads, ffn, vocab;
  double ropeTheta;
  bool tied;
  double ropeFactor; // llama3 rope scaling factor; 0 = none
};
} // namespace

static const LlamaConfig kConfigs[] = {
    {"tiny", 2, 64, 4, 2, 192, 512, 10000.0, true, 0.0},
    // Llama 3.2 1B (config.json of meta-llama/Llama-3.2-1B).
    {"1B", 16, 2048, 32, 8, 8192, 128256, 500000.0, true, 32.0},
    // Llama 3 8B: untied lm_head, no rope scaling.
    {"8B", 32, 4096, 32, 8, 14336, 128256, 500000.0, false, 0.0},
};

std::vector<std::string> llamaSizes() {
  std::vector<std::string> sizes;
  for (const LlamaConfig &c : kConfigs)
    sizes.push_back(c.size);
  return sizes;
}

/// inv_freq[j] = theta^(-2j/D), with transformers' "llama3" scaling
/// (low_freq_factor 1, high_freq_factor 4, original context 8192) when
/// `factor` is set: long wavelengths are divided by the factor, short ones
/// kept, and the band between interpolated.
static std::vector<double> inverseFrequencies(int64_t headDim, double theta,
                                              double factor) {
  const double pi = 3.14159265358979323846;
  std::vector<double> inv;
  for (int64_t j = 0; j < headDim / 2; ++j) {
    double f = 1.0 / std::pow(theta, static_cast<double>(2 * j) / headDim);
    if (factor > 0) {
      const double oldContext = 8192, low = 1.0, high = 4.0;
      double wavelen = 2 * pi / f;
      if (wavelen > oldContext / low) {
        f /= factor;
      } else if (wavelen >= oldContext / high) {
        double smooth = (oldContext / wavelen - low) / (high - low);
        f = (1 - smooth) * f / factor + smooth * f;
      }
    }
    inv.push_back(f);
  }
  return inv;
}

std::optional<Json> buildLlama(const std::string &size) {
  const LlamaConfig *cfg = nullptr;
  for (const LlamaConfig &c : kConfigs)
    if (size == c.size)
      cfg = &c;
  if (!cfg)
    return std::nullopt;
  int64_t d = cfg->d, hd = d / cfg->heads, kvWidth = cfg->kvHeads * hd;
  GraphWriter g("llama-" + size,
                "Llama " + size + ": " + std::to_string(cfg->layers) +
                    " layers, d_model " + std::to_string(d) + ", " +
                    std::to_string(cfg->heads) + " heads, " +
                    std::to_string(cfg->kvHeads) + " kv heads, ffn " +
                    std::to_string(cfg->ffn) + ", vocab " +
                    std::to_string(cfg->vocab) +
                    (cfg->tied ? ", tied embeddings" : "") +
                    "; written by `llmc recipe llama --size " + size + "`");
  g.dim("batch", 8);
  g.dim("seq", size == "tiny" ? 64 : 1024);
  std::string idx = g.input("idx", "i64", {"batch", "seq"});
  std::string targets = g.input("targets", "i64", {"batch", "seq"});

  std::string embed =
      g.param("model.embed_tokens.weight", {cfg->vocab, d}, "normal(0.02)");
  std::string x = g.node("gather", {embed, idx}, "x.emb", {{"axis", 0}});

  // RoPE tables [seq, hd]: angle(t, j) = t * inv_freq[j mod hd/2].
  std::string inv = g.node(
      "constant", {}, "rope.inv_freq",
      {{"value", inverseFrequencies(hd, cfg->ropeTheta, cfg->ropeFactor)},
       {"dtype", "f32"}});
  std::string pos =
      g.node("iota", {}, "rope.pos",
             {{"dimension", 0}, {"shape", {"seq", 1}}, {"dtype", "f32"}});
  std::string half = g.node("mul", {pos, inv}, "rope.freqs");
  std::string angles =
      g.node("concat", {half, half}, "rope.angles", {{"axis", 1}});
  std::string cos = g.node("cos", {angles}, "rope.cos");
  std::string sin = g.node("sin", {angles}, "rope.sin");

  auto rmsNorm = [&](const std::string &in, const std::string &prefix) {
    std::string w = g.param(prefix + ".weight", {d}, "ones");
    return g.node("rms_norm", {in, w}, prefix + ".out", {{"epsilon", 1e-5}});
  };
  for (int64_t l = 0; l < cfg->layers; ++l) {
    std::string p = "model.layers." + std::to_string(l);
    std::string h = rmsNorm(x, p + ".input_layernorm");
    std::string q =
        g.linear(h, p + ".self_attn.q_proj", d, cfg->heads * hd, false);
    std::string k = g.linear(h, p + ".self_attn.k_proj", d, kvWidth, false);
    std::string v = g.linear(h, p + ".self_attn.v_proj", d, kvWidth, false);
    q = g.splitHeads(q, p + ".q.heads", cfg->heads, hd);
    k = g.splitHeads(k, p + ".k.heads", cfg->kvHeads, hd);
    v = g.splitHeads(v, p + ".v.heads", cfg->kvHeads, hd);
    q = g.node("rotary", {q, cos, sin}, p + ".q.rope");
    k = g.node("rotary", {k, cos, sin}, p + ".k.rope");
    std::string att = g.node("attention", {q, k, v}, p + ".self_attn.out",
                             {{"causal", true}});
    std::string o = g.mergeHeads(att, p + ".self_attn.merged", cfg->heads * hd);
    o = g.linear(o, p + ".self_attn.o_proj", cfg->heads * hd, d, false);
    x = g.node("add", {x, o}, p + ".x.attn");

    h = rmsNorm(x, p + ".post_attention_layernorm");
    std::string gate = g.linear(h, p + ".mlp.gate_proj", d, cfg->ffn, false);
    std::string up = g.linear(h, p + ".mlp.up_proj", d, cfg->ffn, false);
    std::string act = g.node("silu", {gate}, p + ".mlp.act");
    std::string prod = g.node("mul", {act, up}, p + ".mlp.prod");
    std::string down = g.linear(prod, p + ".mlp.down_proj", cfg->ffn, d, false);
    x = g.node("add", {x, down}, p + ".x.mlp");
  }
  x = rmsNorm(x, "model.norm");
  std::string logits = cfg->tied ? g.node("matmul", {x, embed}, "logits",
                                          {{"transpose_rhs", true}})
                                 : g.linear(x, "lm_head", d, cfg->vocab, false);
  g.node("cross_entropy", {logits, targets}, "loss", {{"reduction", "mean"}});
  g.output("loss");
  return g.graph();
}

} // namespace llmc::json
