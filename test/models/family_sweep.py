#!/usr/bin/env python3
"""Model-family sweep for docs/model-coverage.md (issue 18).

For every transformers causal-LM and masked-LM family this transformers
version has, builds a small random-weight model (seed 0, vocab 512, hidden
64, 2 layers, 4 heads), exports its training loss with both PyTorch
exporters (dynamo with optimize=False, and TorchScript in training mode),
writes fp32 and bf16 (autocast, fp32 master weights) references as
export_models.py does, and runs on each export:

  llmc import --list-unsupported   (which ops llmc lacks)
  llmc import                      (is attention raised to llmc.attention?)
  llmc verify --device cpu         (fp32, the reference evaluator)
  llmc verify --device cuda        (fp32, the compiled step)
  llmc verify --device cuda --precision bf16

and prints the table (markdown) for docs/model-coverage.md. A family whose
export fails in PyTorch is listed with the exporter's error.

Runs on the GPU machine (PyTorch, transformers, onnx, onnxruntime):
  python3 test/models/family_sweep.py OUTDIR [--llmc build/bin/llmc]
      [--only gpt2,llama] [--no-gpu]
"""
import argparse
import json
import os
import subprocess
import sys
import traceback

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import B, T, VOCAB, Wrap, describe, export, references  # noqa: E402

# (name, model_type for AutoConfig, model class, masked LM?, config overrides)
FAMILIES = [
    ("gpt2", "gpt2", "GPT2LMHeadModel", False, {}),
    ("gpt_neo", "gpt_neo", "GPTNeoForCausalLM", False,
     {"attention_types": [[["global", "local"], 1]], "window_size": 8}),
    ("gptj", "gptj", "GPTJForCausalLM", False, {"rotary_dim": 8}),
    ("gpt_neox", "gpt_neox", "GPTNeoXForCausalLM", False, {}),
    ("codegen", "codegen", "CodeGenForCausalLM", False, {"rotary_dim": 8}),
    ("opt", "opt", "OPTForCausalLM", False,
     {"ffn_dim": 128, "word_embed_proj_dim": 64}),
    ("bloom", "bloom", "BloomForCausalLM", False, {"n_head": 4}),
    ("falcon", "falcon", "FalconForCausalLM", False, {}),
    ("biogpt", "biogpt", "BioGptForCausalLM", False, {}),
    ("llama", "llama", "LlamaForCausalLM", False, {"num_key_value_heads": 2}),
    ("mistral", "mistral", "MistralForCausalLM", False,
     {"num_key_value_heads": 2, "sliding_window": None}),
    ("qwen2", "qwen2", "Qwen2ForCausalLM", False, {"num_key_value_heads": 2}),
    ("qwen3", "qwen3", "Qwen3ForCausalLM", False,
     {"num_key_value_heads": 2, "head_dim": 16}),
    ("gemma", "gemma", "GemmaForCausalLM", False,
     {"num_key_value_heads": 2, "head_dim": 16}),
    ("gemma2", "gemma2", "Gemma2ForCausalLM", False,
     {"num_key_value_heads": 2, "head_dim": 16}),
    ("phi", "phi", "PhiForCausalLM", False, {}),
    # Phi-3's default pad/bos/eos ids (32000, 1, 32000) lie outside the
    # sweep's vocabulary of 512: nn.Embedding refuses the padding_idx.
    ("phi3", "phi3", "Phi3ForCausalLM", False,
     {"num_key_value_heads": 2, "pad_token_id": 0, "bos_token_id": 1,
      "eos_token_id": 2}),
    # The default partial_rotary_factor 0.25 gives a rotary dim of 4 of 16,
    # which StableLM's own forward cannot broadcast at this size.
    ("stablelm", "stablelm", "StableLmForCausalLM", False,
     {"partial_rotary_factor": 1.0}),
    ("olmo", "olmo", "OlmoForCausalLM", False, {}),
    ("granite", "granite", "GraniteForCausalLM", False, {}),
    ("bert", "bert", "BertForMaskedLM", True, {}),
    ("roberta", "roberta", "RobertaForMaskedLM", True, {"pad_token_id": 1}),
    ("xlm-roberta", "xlm-roberta", "XLMRobertaForMaskedLM", True,
     {"pad_token_id": 1}),
    ("albert", "albert", "AlbertForMaskedLM", True, {"embedding_size": 32}),
    ("electra", "electra", "ElectraForMaskedLM", True, {"embedding_size": 64}),
    ("distilbert", "distilbert", "DistilBertForMaskedLM", True,
     {"dim": 64, "hidden_dim": 128, "n_layers": 2, "n_heads": 4}),
    ("deberta-v2", "deberta-v2", "DebertaV2ForMaskedLM", True, {}),
    # The config's defaults have no relative attention; DeBERTa-v3's
    # checkpoints do (c2p and p2c terms: a score bias with a gradient).
    ("deberta-v2-rel", "deberta-v2", "DebertaV2ForMaskedLM", True,
     {"relative_attention": True, "pos_att_type": ["p2c", "c2p"],
      "position_buckets": 8, "share_att_key": True,
      "norm_rel_ebd": "layer_norm", "position_biased_input": False}),
    ("mpnet", "mpnet", "MPNetForMaskedLM", True, {}),
    # ModernBERT's default special ids (pad 50283, ...) lie outside the
    # sweep's vocabulary of 512: nn.Embedding refuses the padding_idx.
    ("modernbert", "modernbert", "ModernBertForMaskedLM", True,
     {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
      "cls_token_id": 1, "sep_token_id": 2}),
]

COMMON = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128,
              num_hidden_layers=2, num_attention_heads=4,
              max_position_embeddings=64,
              # dropout off: llmc's masks are not PyTorch's (docs/training-ir.md)
              hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
              attention_dropout=0.0, hidden_dropout=0.0, resid_pdrop=0.0,
              embd_pdrop=0.0, attn_pdrop=0.0, dropout=0.0,
              attention_dropout_prob=0.0,
              # 0.0, not None: GPT-Neo, GPT-NeoX and ModernBERT validate it
              # as a float (StrictDataclassFieldValidationError otherwise)
              classifier_dropout=0.0)


class UpcastLossWrap(Wrap):
    """A masked LM whose loss is computed from `logits.float()`, as HF's
    causal-LM loss computes it. HF's masked-LM heads take cross-entropy of
    the bf16 logits under autocast: the per-token losses come out in bf16
    (the loss times the counted tokens is a multiple of 1/32), 1e-4 to 1e-3
    from exact arithmetic, which llmc's precision policy counts as a mistake
    (the `loss-bf16` mutation, docs/precision.md). The exported graph and the
    fp32 references are the same as with the model's own loss."""

    def forward(self, idx, tgt, mask=None):
        logits = self.m(input_ids=idx, attention_mask=mask).logits.float()
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1),
            ignore_index=-100)


def make(model_type, cls_name, overrides):
    import transformers as tf
    torch.manual_seed(0)
    cfg = tf.AutoConfig.for_model(model_type, **{**COMMON, **overrides})
    return getattr(tf, cls_name)(cfg)


def batch(masked):
    g = torch.Generator().manual_seed(1234)
    idx = torch.randint(0, VOCAB, (B, T), generator=g)
    tgt = torch.randint(0, VOCAB, (B, T), generator=g)
    if not masked:
        return {"idx": idx, "tgt": tgt}
    keep = torch.rand((B, T), generator=g) < 0.3
    tgt = torch.where(keep, tgt, torch.full_like(tgt, -100))
    mask = torch.ones((B, T), dtype=torch.int64)
    mask[1, T - 4:] = 0
    return {"idx": idx, "tgt": tgt, "mask": mask}


def bf16_references(w, inputs):
    """The fp32 references' keys under torch.autocast(cuda, bf16), fp32
    master weights and AdamW state (docs/precision.md)."""
    w = w.cuda()
    args = [v.cuda() for v in inputs.values()]
    state = {k: v.detach().clone() for k, v in w.state_dict().items()}
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = w(*args)
    w.zero_grad()
    loss.backward()
    grads = {n: p.grad.float().norm().item()
             for n, p in w.m.named_parameters(remove_duplicate=False)}
    loss0 = loss.item()
    opt = torch.optim.AdamW(w.parameters(), lr=1e-3, betas=(0.9, 0.95),
                            eps=1e-8, weight_decay=0.1)
    losses = []
    for _ in range(10):
        opt.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            l = w(*args)
        losses.append(l.item())
        l.backward()
        opt.step()
    w.load_state_dict(state)
    w.cpu()
    return loss0, grads, losses


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    return p.returncode, p.stdout + p.stderr


def last_error(text):
    lines = [l for l in text.splitlines() if "error" in l.lower()]
    return (lines[-1] if lines else text.strip().splitlines()[-1:] or [""])[0][:160]


def failures(text):
    """What a failed verify or import said: its FAIL rows and summary (a
    report), or its first error lines (an error), for the JSON line."""
    lines = text.splitlines()
    rows = [" ".join(l.split()) for l in lines
            if " FAIL" in l or l.endswith(" failed")]
    if rows:
        return rows[:12]
    errors = [l.strip() for l in lines if "error" in l.lower()]
    return (errors or [l.strip() for l in lines if l.strip()][-3:])[:3]


def check(llmc, path, ref, bf16_ref, gpu):
    row = {}
    code, out = run([llmc, "import", "--list-unsupported", path])
    # Exit 1 and one line per missing op type after the first.
    unsupported = ([l.strip() for l in out.splitlines()[1:] if l.strip()]
                   if code != 0 else [])
    row["unsupported"] = "; ".join(unsupported)[:160] if unsupported else "none"
    code, out = run([llmc, "import", "--elide-weights", path])
    row["imports"] = "yes" if code == 0 else "no: " + last_error(out)
    row["attention"] = (f"yes ({out.count('llmc.attention ')})"
                        if "llmc.attention " in out else "no")
    targets = [("cpu fp32", ["--device", "cpu"], ref)]
    if gpu:
        targets += [("gpu fp32", ["--device", "cuda"], ref),
                    ("gpu bf16", ["--device", "cuda", "--precision", "bf16"],
                     bf16_ref)]
    for name, flags, r in targets:
        if r is None:
            row[name] = "no reference"
            continue
        code, out = run([llmc, "verify", path, "--ref", r] + flags)
        # The whole verify report, for the failures the table only names.
        with open(path[:-len(".onnx")] + "." + name.replace(" ", "_") +
                  ".log", "w") as f:
            f.write(out)
        if code == 0:
            row[name] = "pass"
        else:
            lines = failures(out)
            row[name] = "FAIL: " + (lines[-1] if lines else "")[:160]
            row[name + " details"] = lines
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--llmc", default="build/bin/llmc")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-gpu", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    gpu = torch.cuda.is_available() and not a.no_gpu
    only = set(filter(None, a.only.split(",")))
    rows = []
    for name, mtype, cls, masked, overrides in FAMILIES:
        if only and name not in only:
            continue
        for exporter in ("dynamo", "torchscript"):
            base = os.path.join(a.out, f"{name}_{exporter}_loss")
            path = base + ".onnx"
            row = {"family": name, "exporter": exporter}
            try:
                model = make(mtype, cls, overrides)
                model.train()
                w = UpcastLossWrap(model, True) if masked else \
                    Wrap(model, False)
                inputs = batch(masked)
                loss, grads, adamw = references(w, inputs)
                export(w, inputs, path, exporter, False)
                ref = {"file": os.path.basename(path), "B": B, "T": T,
                       "inputs": {k: v.tolist() for k, v in inputs.items()},
                       "exporter": exporter, "dynamic": False,
                       "exporter_optimized": False, "loss": loss,
                       "grad_norms": grads, "adamw_losses": adamw}
                ref.update(describe(path, inputs))
                with open(base + ".ref.json", "w") as f:
                    json.dump(ref, f, indent=1)
                bf16_path = None
                if gpu:
                    l16, g16, a16 = bf16_references(w, inputs)
                    # The exact run's trajectory and gradients beside
                    # AMP's: verify widens a bar where AMP itself strays
                    # from them (docs/precision.md).
                    ref16 = dict(ref, precision="bf16", fp32_loss=loss,
                                 loss=l16, grad_norms=g16, adamw_losses=a16,
                                 fp32_adamw_losses=adamw,
                                 fp32_grad_norms=grads,
                                 recipe="torch.autocast(cuda, bf16), fp32 "
                                        "master weights and AdamW state")
                    bf16_path = base + ".bf16.ref.json"
                    with open(bf16_path, "w") as f:
                        json.dump(ref16, f, indent=1)
                row["export"] = "yes"
                row.update(check(a.llmc, path, base + ".ref.json", bf16_path,
                                 gpu))
            except Exception as e:  # the exporter (or transformers) failed
                row["export"] = "PyTorch fails: " + \
                    f"{type(e).__name__}: {e}".splitlines()[0][:160]
                traceback.print_exc()
            rows.append(row)
            print(json.dumps(row), flush=True)

    cols = ["family", "exporter", "export", "unsupported", "imports",
            "attention", "cpu fp32", "gpu fp32", "gpu bf16"]
    print("\n| " + " | ".join(cols) + " |")
    print("|" + " --- |" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r.get(c, "")).replace("|", "/")
                                for c in cols) + " |")


if __name__ == "__main__":
    main()
