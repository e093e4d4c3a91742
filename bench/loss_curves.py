#!/usr/bin/env python3
"""Loss curves, llmc bf16 against PyTorch AMP (issue 12's "Done when").

For each model (an ONNX export in test/models), from the same initial weights
(the export's initializers) and the same text:
  - llmc:   `llmc train --device cuda --precision bf16` for --steps steps;
  - torch A: PyTorch under torch.autocast("cuda", torch.bfloat16) with fp32
             master weights, the batches in llmc's order;
  - torch B: the same, the batches in another order (a fixed permutation of
             the same batch positions): the run-to-run spread that data order
             alone makes.
The "final loss" of a run is its loss on the first --val-batches batches of a
held-out validation shard (what `llmc train --val` computes), so the three
runs are judged on the same tokens. The check: |llmc - A| <= 2 |A - B|.

The optimizer is llmc's default on both sides: AdamW(lr, betas (0.9, 0.95),
eps 1e-8, weight decay 0.1 on parameters of rank >= 2 only), global norm
clipped to 1, constant learning rate. The data is llm.c-style: a batch is the
B*T+1 tokens at a position that advances by B*T and wraps to 0 when the next
batch would run past the end (runtime/DataLoader.cpp).

usage: loss_curves.py --llmc BIN --text FILE --out DIR [--steps 1000]
       [--models tiny_gpt_dynamo_loss,hf_gpt2_dynamo_loss] [--lr 1e-3]
Prints one table row per model and exits 1 when a model fails the check.
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(os.path.dirname(HERE), "test", "models")


def read_bin(path):
    with open(path, "rb") as f:
        header = struct.unpack("<256i", f.read(1024))
        assert header[0] == 20240520, path
        return np.frombuffer(f.read(2 * header[2]), dtype=np.uint16).astype(np.int64)


def onnx_weights(path):
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path, load_external_data=True)
    return {t.name: torch.from_numpy(numpy_helper.to_array(t).copy())
            for t in m.graph.initializer if t.name.startswith("m.")}


class TinyGpt(nn.Module):
    """test/models/tiny_gpt_*: nanoGPT-style, parameters named as exported."""

    def __init__(self, w):
        super().__init__()
        vocab, d = w["m.wte.weight"].shape
        layers = 1 + max(int(k.split(".")[2]) for k in w if k.startswith("m.qkv."))
        inner = w["m.fc.0.weight"].shape[0]
        self.heads = 4
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(w["m.wpe.weight"].shape[0], d)
        self.ln1 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
        self.qkv = nn.ModuleList(nn.Linear(d, 3 * d) for _ in range(layers))
        self.proj = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))
        self.ln2 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
        self.fc = nn.ModuleList(nn.Linear(d, inner) for _ in range(layers))
        self.fc2 = nn.ModuleList(nn.Linear(inner, d) for _ in range(layers))
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx, tgt):
        b, t = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(t, device=idx.device))
        for i in range(len(self.qkv)):
            q, k, v = self.qkv[i](self.ln1[i](x)).split(x.shape[-1], dim=2)
            q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj[i](y.transpose(1, 2).reshape(b, t, -1))
            x = x + self.fc2[i](F.gelu(self.fc[i](self.ln2[i](x)), approximate="tanh"))
        logits = self.head(self.lnf(x))
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), tgt.view(-1))


class HfGpt2(nn.Module):
    """test/models/hf_gpt2_*: transformers' GPT2LMHeadModel with the loss the
    export computes: cross-entropy of logits[t] against tgt[t] (the graph has
    no shift; HF's own `labels=` loss would shift the targets once more)."""

    def __init__(self, w):
        super().__init__()
        from transformers import GPT2Config, GPT2LMHeadModel
        vocab, d = w["m.lm_head.weight"].shape
        layers = 1 + max(int(k.split(".")[3]) for k in w if k.startswith("m.transformer.h."))
        cfg = GPT2Config(vocab_size=vocab, n_positions=w["m.transformer.wpe.weight"].shape[0],
                         n_embd=d, n_layer=layers, n_head=4, resid_pdrop=0.0,
                         embd_pdrop=0.0, attn_pdrop=0.0)
        self.m = GPT2LMHeadModel(cfg)

    def forward(self, idx, tgt):
        logits = self.m(input_ids=idx).logits
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), tgt.view(-1))


def build(name, w):
    model = TinyGpt(w) if name.startswith("tiny_gpt") else HfGpt2(w)
    state = {k[2:]: v for k, v in w.items()}
    if isinstance(model, HfGpt2):
        state = {"m." + k: v for k, v in state.items()}
        state.setdefault("m.transformer.wte.weight", state["m.lm_head.weight"])
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith((".attn.bias", ".attn.masked_bias"))]
    if missing or unexpected:
        sys.exit("%s: load_state_dict: missing %s, unexpected %s" % (name, missing, unexpected))
    return model.cuda()


def self_check(name, model):
    """The PyTorch model must compute the export's reference loss in fp32:
    otherwise it is not the model llmc trains."""
    ref = json.load(open(os.path.join(MODELS, name + ".ref.json")))
    idx = torch.tensor(ref["inputs"]["idx"]).cuda()
    tgt = torch.tensor(ref["inputs"]["tgt"]).cuda()
    with torch.no_grad():
        loss = model(idx, tgt).item()
    if abs(loss - ref["loss"]) > 1e-4 * max(1.0, abs(ref["loss"])):
        sys.exit("%s: the PyTorch model's loss %.6f is not the export's %.6f"
                 % (name, loss, ref["loss"]))
    return ref["B"], ref["T"]


def batches(tokens, b, t, steps, order_seed):
    n = b * t
    starts = list(range(0, len(tokens) - n, n))  # llmc's positions, in order
    if order_seed is not None:
        starts = list(np.random.default_rng(order_seed).permutation(starts))
    for s in range(steps):
        p = starts[s % len(starts)]
        chunk = torch.from_numpy(tokens[p:p + n + 1])
        yield chunk[:-1].view(b, t).cuda(), chunk[1:].view(b, t).cuda()


def val_loss(model, val, b, t, count):
    model.eval()
    with torch.no_grad(), torch.autocast("cuda", torch.bfloat16):
        total = sum(model(x, y).item() for x, y in batches(val, b, t, count, None))
    model.train()
    return total / count


def torch_run(name, w, tokens, val, steps, lr, order_seed, val_batches):
    torch.manual_seed(0)
    model = build(name, w)
    b, t = self_check(name, model)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": rest, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.95), eps=1e-8)
    losses = []
    for x, y in batches(tokens, b, t, steps, order_seed):
        with torch.autocast("cuda", torch.bfloat16):
            loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses, val_loss(model, val, b, t, val_batches)


def llmc_run(llmc, name, train_bin, val_bin, steps, lr, val_batches, out):
    log = os.path.join(out, name + ".llmc.jsonl")
    cmd = [llmc, "train", os.path.join(MODELS, name + ".onnx"), "--device", "cuda",
           "--precision", "bf16", "--data", train_bin, "--val", val_bin,
           "--val-batches", str(val_batches), "--steps", str(steps), "--lr", str(lr),
           "--log-json", log, "--no-progress"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("llmc train failed:\n%s\n%s" % (r.stdout[-3000:], r.stderr[-3000:]))
    rows = [json.loads(line) for line in open(log)]
    losses = [row["loss"] for row in rows if "loss" in row]
    vals = [row["val_loss"] for row in rows if "val_loss" in row]
    return losses, vals[-1]


def smooth(xs, k=50):
    return float(np.mean(xs[-k:]))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--llmc", required=True)
    p.add_argument("--text", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--val-batches", type=int, default=256)
    p.add_argument("--models", default="tiny_gpt_dynamo_loss,hf_gpt2_dynamo_loss")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    train_bin = os.path.join(a.out, "train.bin")
    val_bin = os.path.join(a.out, "val.bin")
    subprocess.run([a.llmc, "tokenize", a.text, "-o", train_bin, "--val", val_bin,
                    "--val-fraction", "0.1"], check=True, capture_output=True)
    tokens, val = read_bin(train_bin), read_bin(val_bin)
    print("text: %s, %d training tokens, %d validation tokens (byte-level)"
          % (a.text, len(tokens), len(val)))
    print("| model | steps | llmc val | torch A val | torch B val | |llmc-A| | |A-B| | "
          "ratio | last-50 train llmc / A / B | verdict |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    failed = False
    curves = {}
    for name in a.models.split(","):
        w = onnx_weights(os.path.join(MODELS, name + ".onnx"))
        ll, lv = llmc_run(a.llmc, name, train_bin, val_bin, a.steps, a.lr, a.val_batches, a.out)
        al, av = torch_run(name, w, tokens, val, a.steps, a.lr, None, a.val_batches)
        bl, bv = torch_run(name, w, tokens, val, a.steps, a.lr, 1, a.val_batches)
        # Same order, same weights: step 1's losses agree to bf16 noise.
        first = abs(ll[0] - al[0])
        d_llmc, d_order = abs(lv - av), abs(av - bv)
        ok = d_llmc <= 2 * d_order and first < 1e-2 and all(map(math.isfinite, ll))
        failed |= not ok
        print("| %s | %d | %.4f | %.4f | %.4f | %.4f | %.4f | %.2f | %.4f / %.4f / %.4f | %s |"
              % (name, a.steps, lv, av, bv, d_llmc, d_order,
                 d_llmc / d_order if d_order else float("inf"),
                 smooth(ll), smooth(al), smooth(bl), "PASS" if ok else "FAIL"))
        print("    step-1 loss llmc %.6f, torch %.6f" % (ll[0], al[0]))
        curves[name] = {"llmc": ll, "torch_a": al, "torch_b": bl,
                        "val": {"llmc": lv, "torch_a": av, "torch_b": bv}}
    json.dump(curves, open(os.path.join(a.out, "curves.json"), "w"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
