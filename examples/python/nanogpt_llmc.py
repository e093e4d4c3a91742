#!/usr/bin/env python3
"""A nanoGPT-style training loop whose step is llmc's.

The model, the data and the logging are the user's (PyTorch, as in
nanoGPT's train.py); only `loss.backward(); optimizer.step()` is replaced by
one call to a compiled llmc step. At the end the weights llmc trained are
loaded back into the PyTorch model, which must then give llmc's loss.

    python3 examples/python/nanogpt_llmc.py --size tiny --steps 200
    python3 examples/python/nanogpt_llmc.py --size 124M --batch 16 --seq 1024 \\
        --precision bf16 --steps 50 --data train.bin

Needs torch, onnx and onnxscript (the dynamo ONNX exporter) and libllmc.so
(build/lib, or $LLMC_LIBRARY). --data takes an llm.c token file (`llmc
tokenize` writes them); without it the bytes of the bundled Jargon sample
are the tokens.
"""
import argparse
import math
import os
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(
    __file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
import llmc  # noqa: E402

SIZES = {  # layers, d_model, heads, vocab, max positions
    "tiny": (2, 64, 4, 512, 1024),
    "124M": (12, 768, 12, 50257, 1024),
}


# --- the user's model: nanoGPT's GPT, flattened ---------------------------
class GPT(nn.Module):
    def __init__(self, layers, d, heads, vocab, positions):
        super().__init__()
        self.heads = heads
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(positions, d)
        self.ln1 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
        self.qkv = nn.ModuleList(nn.Linear(d, 3 * d) for _ in range(layers))
        self.proj = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))
        self.ln2 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
        self.fc = nn.ModuleList(nn.Linear(d, 4 * d) for _ in range(layers))
        self.fc2 = nn.ModuleList(nn.Linear(4 * d, d) for _ in range(layers))
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, idx, tgt):
        b, t = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(t, device=idx.device))
        for i in range(len(self.qkv)):
            q, k, v = self.qkv[i](self.ln1[i](x)).split(x.shape[-1], dim=-1)
            q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2)
                       for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj[i](y.transpose(1, 2).reshape(b, t, -1))
            x = x + self.fc2[i](F.gelu(self.fc[i](self.ln2[i](x)),
                                       approximate="tanh"))
        logits = self.head(self.lnf(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), tgt.view(-1))


class Wrap(nn.Module):
    """What gets exported: parameters are `m.<name>` in the ONNX file."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, idx, tgt):
        return self.m(idx, tgt)


# --- the user's data ------------------------------------------------------
def load_tokens(path):
    if path:
        with open(path, "rb") as f:
            header = np.frombuffer(f.read(1024), dtype=np.int32)
            dtype = np.uint32 if header[1] == 2 else np.uint16
            return np.frombuffer(f.read(), dtype=dtype).astype(np.int64)
    with open(os.path.join(ROOT, "test", "models", "jargon-sample.txt"),
              "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8).astype(np.int64)


def get_batch(tokens, b, t, rng, device):
    at = rng.integers(0, len(tokens) - t - 1, size=b)
    x = torch.from_numpy(np.stack([tokens[i:i + t] for i in at]))
    y = torch.from_numpy(np.stack([tokens[i + 1:i + 1 + t] for i in at]))
    if device.startswith("cuda"):
        return x.pin_memory().to(device, non_blocking=True), \
            y.pin_memory().to(device, non_blocking=True)
    return x, y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="tiny")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available()
                    else "cpu")
    ap.add_argument("--data", help="llm.c token file (default: Jargon bytes)")
    ap.add_argument("--log-every", type=int, default=10)
    args = ap.parse_args()

    torch.manual_seed(0)
    layers, d, heads, vocab, positions = SIZES[args.size]
    model = GPT(layers, d, heads, vocab, positions)
    tokens = load_tokens(args.data)
    if tokens.max() >= vocab:
        sys.exit("token %d is outside the %s model's vocabulary of %d"
                 % (tokens.max(), args.size, vocab))

    # Hand the model to llmc once: export it, compile the training step.
    onnx_path = os.path.join(tempfile.mkdtemp(prefix="llmc-"), "model.onnx")
    t0 = time.time()
    # Two distinct tensors: given one tensor twice, the exporter binds both
    # arguments to one graph input.
    example = tuple(torch.zeros(args.batch, args.seq, dtype=torch.long)
                    for _ in range(2))
    torch.onnx.export(Wrap(model), example, onnx_path, dynamo=True,
                      optimize=False, input_names=["idx", "tgt"],
                      output_names=["loss"], external_data=False)
    t1 = time.time()
    step = llmc.compile(onnx_path, batch=args.batch, seq=args.seq,
                        precision=args.precision, device=args.device,
                        weight_decay=0.1, beta1=0.9, beta2=0.95)
    print("exported in %.1f s, compiled in %.1f s: %s" % (
        t1 - t0, time.time() - t1, step))

    # The user's loop: their data, their schedule, their logging.
    rng = np.random.default_rng(0)

    def lr_at(it):  # nanoGPT: linear warmup, cosine decay to lr/10
        if it < args.warmup:
            return args.lr * (it + 1) / args.warmup
        ratio = (it - args.warmup) / max(1, args.steps - args.warmup)
        return args.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * ratio)))

    x = y = None
    for it in range(args.steps):
        x, y = get_batch(tokens, args.batch, args.seq, rng, args.device)
        t0 = time.perf_counter()
        loss = step(x, y, lr=lr_at(it))   # forward, backward, AdamW
        dt = time.perf_counter() - t0
        if it % args.log_every == 0 or it + 1 == args.steps:
            print("iter %d: loss %.4f, time %.2f ms, %.0f tok/s" % (
                it, loss, dt * 1e3, args.batch * args.seq / dt))
        if not math.isfinite(loss):
            sys.exit("the loss is %s at iter %d" % (loss, it))

    # The trained weights back in the PyTorch model give llmc's loss.
    final = step.evaluate(x, y)
    trained = {k[len("m."):]: v for k, v in
               step.state_dict(tensors="torch").items()}
    missing, unexpected = model.load_state_dict(trained, strict=False)
    assert not unexpected and not missing, (missing, unexpected)
    model.to(args.device).eval()
    with torch.no_grad(), torch.autocast(
            "cuda", dtype=torch.bfloat16,
            enabled=args.precision == "bf16" and args.device != "cpu"):
        torch_loss = model(x, y).item()
    rel = abs(torch_loss - final) / abs(final)
    tol = 2e-2 if args.precision == "bf16" else 1e-4
    print("last batch: llmc loss %.6f, PyTorch with llmc's weights %.6f "
          "(relative difference %.1e, tolerance %.0e)" % (
              final, torch_loss, rel, tol))
    return 0 if rel <= tol else 1


if __name__ == "__main__":
    sys.exit(main())
