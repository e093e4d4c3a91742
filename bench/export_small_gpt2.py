"""Exports a 2-layer, d 64 HF GPT-2 at batch 16 x 1024 the way
bench/gpt2_124m.py exports the 124M model (dynamo, optimize=False): the same
mask subgraph at the benchmark's sizes in a file small enough to keep.
usage: python3 bench/export_small_gpt2.py OUT.onnx"""
import sys

import torch
from torch import nn
from transformers import GPT2Config, GPT2LMHeadModel


class Wrap(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, idx, tgt):
        logits = self.m(input_ids=idx).logits
        return nn.functional.cross_entropy(logits.flatten(0, 1).float(),
                                           tgt.flatten())


torch.manual_seed(0)
cfg = GPT2Config(vocab_size=512, n_positions=1024, n_embd=64, n_layer=2,
                 n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
model = Wrap(GPT2LMHeadModel(cfg)).eval()
idx = torch.randint(0, 512, (16, 1024))
tgt = torch.randint(0, 512, (16, 1024))
torch.onnx.export(model, (idx, tgt), sys.argv[1], dynamo=True, optimize=False,
                  input_names=["idx", "tgt"], output_names=["loss"],
                  external_data=False)
