"""A nanoGPT-style GPT-2 for the yardstick (issue 19).

Issue 19's recorded torch.compile medians at vocab 50304 (500K tokens/s on
an H200, 465K on an H100) are those of a nanoGPT-style model, not of
transformers' GPT2LMHeadModel: the HF model, padded to 50304, stays near
its 50257 speed under torch.compile (sessions 5-7 measured 383-428K). The
architecture is GPT-2's (pre-LN, tanh GELU, learned positions, lm_head
tied to the token embedding); what differs is what torch.compile is
handed: causal SDPA with `is_causal=True` (no mask tensor), no dropout
modules, the loss on the autocast logits without an explicit f32 copy.
Same parameter count as the HF model at the same vocabulary.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.attn_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)

    def attention(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        shape = (b, t, self.heads, d // self.heads)
        q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.attn_proj(y.transpose(1, 2).contiguous().view(b, t, d))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class NanoGPT(nn.Module):
    """forward(idx, tgt) -> mean cross-entropy, as the bench's Wrap."""

    def __init__(self, vocab, layers, d, heads, seq=1024):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight
        # GPT-2's initialisation: N(0, 0.02), the residual projections
        # scaled by 1/sqrt(2 * layers); it does not change the speed, only
        # keeps the loss sane.
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, tgt):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), tgt.view(-1))
