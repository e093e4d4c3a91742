#!/usr/bin/env python3
"""Loads an llmc checkpoint of test/models/hf_gpt2_dynamo_loss.onnx into the
Hugging Face GPT-2 model with PyTorch's own loaders (safetensors.torch,
load_state_dict) and computes the loss of the batch the run would take
next, which must equal llmc's loss for that step (docs/trainer.md).

usage: load_llmc_checkpoint.py CHECKPOINT_FOLDER TRAIN.bin [--log LOG.jsonl]
       [--tolerance 1e-4]

CHECKPOINT_FOLDER is a `step-NNNNNNNN` folder written by `llmc train
--checkpoint-dir`; TRAIN.bin the --data shard of that run (one file); LOG the
run's --log-json. The parameters are named as in the ONNX export (`m.` +
the HF name; the exported module wraps the HF model as `m`), in the HF
shapes. GPT-2 ties wte to lm_head, so the export holds only
`lm_head.weight`."""
import argparse
import json
import os
import struct
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("checkpoint")
p.add_argument("data")
p.add_argument("--log")
p.add_argument("--tolerance", type=float, default=1e-4)
p.add_argument("--probe", action="store_true",
               help="also print the loss at the neighbouring batch positions")
a = p.parse_args()

manifest = json.load(open(os.path.join(a.checkpoint, "manifest.json")))
path = os.path.join(a.checkpoint, "model.safetensors")
try:
    from safetensors.torch import load_file
    tensors = load_file(path)
except ImportError:  # the format is simple enough to read by hand
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    tensors = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        assert e["dtype"] == "F32", e["dtype"]
        tensors[name] = torch.frombuffer(bytearray(blob[8 + n + b:8 + n + end]),
                                         dtype=torch.float32).reshape(e["shape"])

state = {k[2:] if k.startswith("m.") else k: v for k, v in tensors.items()}
vocab, d = state["lm_head.weight"].shape
positions = state["transformer.wpe.weight"].shape[0]
layers = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("transformer.h."))
cfg = GPT2Config(vocab_size=vocab, n_positions=positions, n_embd=d,
                 n_layer=layers, n_head=4, resid_pdrop=0.0, embd_pdrop=0.0,
                 attn_pdrop=0.0)
model = GPT2LMHeadModel(cfg).eval()
state.setdefault("transformer.wte.weight", state["lm_head.weight"])
missing, unexpected = model.load_state_dict(state, strict=False)
# Only the causal-mask buffers may be absent (they are not parameters).
missing = [k for k in missing if not k.endswith((".attn.bias", ".attn.masked_bias"))]
if missing or unexpected:
    sys.exit("FAIL: load_state_dict: missing %s, unexpected %s" % (missing, unexpected))

# The next batch of the run: B*T+1 tokens at the manifest's data position
# (llm.c .bin: a 256-int32 header, then uint16 tokens).
B, T = 2, 16
with open(a.data, "rb") as f:
    header = struct.unpack("<256i", f.read(1024))
    count = header[2]
    pos = manifest["data_position"]
    if pos + B * T + 1 > count:
        pos = 0  # the loader wraps around the same way
    f.seek(1024 + 2 * pos)
    tokens = torch.tensor(struct.unpack("<%dH" % (B * T + 1), f.read(2 * (B * T + 1))),
                          dtype=torch.int64)

def loss_at(tok):
    x = tok[:-1].reshape(B, T)
    y = tok[1:].reshape(B, T)
    # The export's loss (bench/gpt2_124m.py's Wrap) is cross-entropy of
    # logits[t] against y[t]: the token file already holds the next tokens,
    # so HF's own `labels=` loss, which shifts once more, is not it.
    with torch.no_grad():
        logits = model(input_ids=x).logits
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).item()


loss = loss_at(tokens)
if a.probe:  # which batch (if any) gives llmc's logged losses
    with open(a.data, "rb") as f:
        for k in range(-3, 4):
            at = pos + k * B * T
            if at < 0 or at + B * T + 1 > count:
                continue
            f.seek(1024 + 2 * at)
            tok = torch.tensor(struct.unpack("<%dH" % (B * T + 1), f.read(2 * (B * T + 1))),
                               dtype=torch.int64)
            print("probe: position %d (%+d batches): loss %.6f" % (at, k, loss_at(tok)))
step = manifest["step"]
print("checkpoint step %d: PyTorch loss of step %d: %.6f" % (step, step + 1, loss))
if a.log:
    logged = {}
    for line in open(a.log):
        j = json.loads(line)
        if "loss" in j:
            logged[j["step"]] = j["loss"]
    ours = logged[step + 1]
    diff = abs(ours - loss)
    print("llmc loss of step %d: %.6f | difference %.2e" % (step + 1, ours, diff))
    if not diff <= a.tolerance:
        sys.exit("FAIL: the losses differ by %.2e > %.1e" % (diff, a.tolerance))
print("PASS")
