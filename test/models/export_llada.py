#!/usr/bin/env python3
"""Exports a small LLaDA-style masked-diffusion LM (issue 18) and writes its
float64 references at three noise levels.

The model is Llama-shaped (RMSNorm, RoPE, grouped-query attention, SwiGLU,
untied lm_head) with bidirectional attention, written out here so that the
export does not depend on a transformers version's mask handling. The
exported graph is the training loss of LLaDA's reference code, with the
random part (t, the mask) made data so that a reference can fix it:

    inputs  idx    [B, L] int64   the clean tokens (ids below MASK_ID)
            mask   [B, L] int64   1 where the token is masked, else 0
            p_mask [B, L] float   the masking probability (1 - eps) t + eps
                                  of the token's sequence
    noisy = where(mask, MASK_ID, idx)
    loss  = sum over tokens of mask * CE(model(noisy), idx) / p_mask, / (B L)

(not a mean over the masked tokens: LLaDA divides by B L, which also stays
finite when nothing is masked). The trainer's masked-diffusion data mode
samples t ~ U(eps, 1) per sequence and the mask, and feeds these inputs.

References, in export_models.py's format plus `reference_dtype`, `t`,
`eps` and `mask_id`, computed in float64 (the model cast to double, p_mask
rounded to float32 first, as the graph receives it):

    llada_dynamo_loss.ref.json        t = 0.5
    llada_dynamo_loss.t_eps.ref.json  t = eps = 1e-3 (p_mask 2e-3: a sampled
                                      mask is almost surely empty, so a
                                      sequence without one gets one masked
                                      token, which tests the 1/p_mask ~ 500
                                      weight)
    llada_dynamo_loss.t_1.ref.json    t = 1 (every token masked)

Each: loss, gradient norms, 10 AdamW steps on the same batch (lr 1e-3,
betas 0.9/0.95, eps 1e-8, weight decay 0.1), and onnxruntime's loss.
Runs where PyTorch (>= 2.5 for the dynamo exporter), onnx and onnxruntime
are installed (CPU is enough). Usage:

    python3 test/models/export_llada.py OUTDIR
"""
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import describe  # noqa: E402

B, L = 2, 16
VOCAB, MASK_ID, EPS = 512, 511, 1e-3
D, LAYERS, HEADS, KV_HEADS, FFN = 64, 2, 4, 2, 128
HEAD_DIM = D // HEADS
ADAMW = dict(lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
NAME = "llada_dynamo_loss"


class RMSNorm(nn.Module):
    def __init__(self, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(D))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, groups):
    # HF's repeat_kv: [B, Hkv, L, hd] -> [B, Hkv * groups, L, hd].
    b, h, s, hd = x.shape
    x = x[:, :, None, :, :].expand(b, h, groups, s, hd)
    return x.reshape(b, h * groups, s, hd)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(D, HEADS * HEAD_DIM, bias=False)
        self.k_proj = nn.Linear(D, KV_HEADS * HEAD_DIM, bias=False)
        self.v_proj = nn.Linear(D, KV_HEADS * HEAD_DIM, bias=False)
        self.o_proj = nn.Linear(HEADS * HEAD_DIM, D, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, HEADS, HEAD_DIM).transpose(1, 2)
        k = self.k_proj(x).view(b, s, KV_HEADS, HEAD_DIM).transpose(1, 2)
        v = self.v_proj(x).view(b, s, KV_HEADS, HEAD_DIM).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = repeat_kv(k, HEADS // KV_HEADS)
        v = repeat_kv(v, HEADS // KV_HEADS)
        # Bidirectional: no mask, not causal (the masked-diffusion model
        # sees the whole noisy sequence).
        a = F.scaled_dot_product_attention(q, k, v, is_causal=False)
        return self.o_proj(a.transpose(1, 2).reshape(b, s, HEADS * HEAD_DIM))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(D, FFN, bias=False)
        self.up_proj = nn.Linear(D, FFN, bias=False)
        self.down_proj = nn.Linear(FFN, D, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = RMSNorm()
        self.self_attn = Attention()
        self.post_attention_layernorm = RMSNorm()
        self.mlp = Mlp()

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class MaskedDiffusionLM(nn.Module):
    """Llama-style, bidirectional; logits for every position."""

    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.norm = RMSNorm()
        self.lm_head = nn.Linear(D, VOCAB, bias=False)
        # RoPE's inverse frequencies (theta 10000), a buffer as in HF Llama
        # (not a parameter: it is not trained).
        inv = 1.0 / (10000.0 ** (torch.arange(0, HEAD_DIM, 2).float()
                                 / HEAD_DIM))
        self.register_buffer("inv_freq", inv, persistent=False)
        for m in self.modules():  # HF's init: normal(0, 0.02)
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def forward(self, idx):
        s = idx.shape[1]
        pos = torch.arange(s, dtype=self.inv_freq.dtype, device=idx.device)
        freqs = pos[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        x = self.embed_tokens(idx)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))


class Wrap(nn.Module):
    """idx, mask, p_mask in, LLaDA's loss out. Parameters are `m.<name>`."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, idx, mask, p_mask):
        masked = mask != 0
        noisy = torch.where(masked, torch.full_like(idx, MASK_ID), idx)
        logits = self.m(noisy)
        b, s, v = logits.shape
        ce = F.cross_entropy(logits.reshape(b * s, v), idx.reshape(b * s),
                             reduction="none").reshape(b, s)
        weight = masked.to(logits.dtype) / p_mask
        return (ce * weight).sum() / (b * s)


def batch(t):
    """The clean tokens, a fixed mask drawn at noise level t, and p_mask."""
    g = torch.Generator().manual_seed(1234)
    idx = torch.randint(0, MASK_ID, (B, L), generator=g)  # never MASK_ID
    p = (1 - EPS) * t + EPS
    # As the graph receives it: float32, then exact in float64.
    p_mask = torch.full((B, L), p, dtype=torch.float32)
    g = torch.Generator().manual_seed(4321)
    mask = (torch.rand((B, L), generator=g) < p_mask).to(torch.int64)
    for row in range(B):
        if mask[row].sum() == 0:  # t = eps: keep one masked token per row
            mask[row, int(torch.randint(0, L, (1,), generator=g))] = 1
    return {"idx": idx, "mask": mask, "p_mask": p_mask}


def references(w, inputs):
    """Loss, gradient norms and 10 AdamW losses, in float64."""
    w.double()
    args = [inputs["idx"], inputs["mask"], inputs["p_mask"].double()]
    state = {k: v.detach().clone() for k, v in w.state_dict().items()}
    w.zero_grad()
    loss = w(*args)
    loss.backward()
    grads = {n: p.grad.norm().item()
             for n, p in w.m.named_parameters()}  # nothing is tied
    loss0 = loss.item()
    opt = torch.optim.AdamW(w.parameters(), **ADAMW)
    losses = []
    for _ in range(10):
        opt.zero_grad()
        l = w(*args)
        losses.append(l.item())
        l.backward()
        opt.step()
    w.load_state_dict(state)
    w.zero_grad()
    w.float()
    return loss0, grads, losses


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    w = Wrap(MaskedDiffusionLM()).train()
    # Parameters are initialized in float32 (as exported); the double copy
    # for the references holds the same values.
    init = {k: v.detach().clone() for k, v in w.state_dict().items()}
    path = os.path.join(out, NAME + ".onnx")
    levels = [("", 0.5), (".t_eps", EPS), (".t_1", 1.0)]
    exported = False
    for suffix, t in levels:
        inputs = batch(t)
        w.load_state_dict(init)
        loss, grads, adamw = references(w, inputs)
        w.load_state_dict(init)
        if not exported:
            torch.onnx.export(w, tuple(inputs.values()), path, dynamo=True,
                              optimize=False, input_names=list(inputs),
                              output_names=["loss"])
            exported = True
        ref = {"file": NAME + ".onnx", "B": B, "T": L,
               "inputs": {k: v.tolist() for k, v in inputs.items()},
               "exporter": "dynamo", "dynamic": False,
               "exporter_optimized": False, "reference_dtype": "float64",
               "t": t, "eps": EPS, "mask_id": MASK_ID,
               "masked_tokens": int(inputs["mask"].sum()),
               "loss": loss, "grad_norms": grads, "adamw_losses": adamw}
        ref.update(describe(path, inputs))
        with open(os.path.join(out, NAME + suffix + ".ref.json"), "w") as f:
            json.dump(ref, f, indent=1)
        with torch.no_grad():
            f32 = w(*inputs.values()).item()
        print(f"{NAME}{suffix}: t {t:g}, {ref['masked_tokens']} of {B * L} "
              f"masked, f64 loss {loss:.8f}, f32 {f32:.8f}, "
              f"ort {ref['ort_loss']:.8f}")
        assert math.isclose(ref["ort_loss"], loss, rel_tol=1e-4), \
            "onnxruntime's loss differs from PyTorch's"


if __name__ == "__main__":
    main(sys.argv[1])
