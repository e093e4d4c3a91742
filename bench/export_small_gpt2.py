"""Exports a 2-layer, d 64 HF GPT-2 at batch 16 x 1024 the way
bench/gpt2_124m.py exports the 124M model (its Wrap, dynamo, optimize=False):
the same mask subgraph at the benchmark's sizes in a file small enough to
keep (test/models/hf_gpt2_small_b16_t1024.onnx).
usage: python3 bench/export_small_gpt2.py OUT.onnx"""
import os
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt2_124m import Wrap  # noqa: E402

torch.manual_seed(0)
cfg = GPT2Config(vocab_size=512, n_positions=1024, n_embd=64, n_layer=2,
                 n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
model = Wrap(GPT2LMHeadModel(cfg)).eval()
idx = torch.randint(0, 512, (16, 1024))
tgt = torch.randint(0, 512, (16, 1024))
torch.onnx.export(model, (idx, tgt), sys.argv[1], dynamo=True, optimize=False,
                  input_names=["idx", "tgt"], output_names=["loss"],
                  external_data=False)
