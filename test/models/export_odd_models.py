#!/usr/bin/env python3
"""Exports small transformers models with deliberately awkward sizes (the
shape-padding pass's test models: vocab 8063 and 1001, head dim 40,
intermediate 200) and writes two references per export:

- `X.ref.json`: loss, gradient norms and 10 AdamW losses computed in float64
  (the model cast to double; the ONNX graph itself is float32), so that the
  reference carries no float32 rounding of its own;
- `X.bf16.ref.json`: the same under torch.autocast("cuda", torch.bfloat16)
  with fp32 master weights and AdamW state (needs a GPU; skipped without).

Keys as export_models.py writes them. Runs where PyTorch, transformers, onnx
and onnxruntime are installed (the GPU machine). Usage:
export_odd_models.py OUTDIR
"""
import json
import os
import sys
import traceback

import torch

from export_models import B, T, Wrap, describe, export

ADAMW = dict(lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)


def make(kind):
    import transformers as tf
    torch.manual_seed(0)
    if kind == "gpt2_v8063":
        # Head dim 40 (80 / 2), inner 200, vocab 8063: every padded dim at once.
        cfg = tf.GPT2Config(vocab_size=8063, n_embd=80, n_layer=2, n_head=2,
                            n_inner=200, n_positions=64, resid_pdrop=0.0,
                            embd_pdrop=0.0, attn_pdrop=0.0)
        return tf.GPT2LMHeadModel(cfg), 8063
    if kind == "llama_v1001":
        cfg = tf.LlamaConfig(vocab_size=1001, hidden_size=80,
                             intermediate_size=200, num_hidden_layers=2,
                             num_attention_heads=2, num_key_value_heads=1,
                             max_position_embeddings=64,
                             tie_word_embeddings=False, rms_norm_eps=1e-5)
        return tf.LlamaForCausalLM(cfg), 1001
    raise ValueError(kind)


def batch(vocab):
    g = torch.Generator().manual_seed(1234)
    return {"idx": torch.randint(0, vocab, (B, T), generator=g),
            "tgt": torch.randint(0, vocab, (B, T), generator=g)}


def run_refs(w, inputs, device, autocast):
    """Loss, gradient norms and 10 AdamW losses of `w` on `inputs`."""
    w = w.to(device)
    args = [v.to(device) for v in inputs.values()]

    def loss_of():
        if autocast:
            with torch.autocast("cuda", torch.bfloat16):
                return w(*args)
        return w(*args)

    w.zero_grad()
    loss = loss_of()
    loss.backward()
    grads = {n: p.grad.double().norm().item()
             for n, p in w.m.named_parameters(remove_duplicate=False)}
    loss0 = loss.item()
    state = {k: v.detach().clone() for k, v in w.state_dict().items()}
    opt = torch.optim.AdamW(w.parameters(), **ADAMW)
    losses = []
    for _ in range(10):
        opt.zero_grad()
        l = loss_of()
        losses.append(l.item())
        l.backward()
        opt.step()
    w.load_state_dict(state)
    return loss0, grads, losses


def main(out):
    os.makedirs(out, exist_ok=True)
    for kind in ["gpt2_v8063", "llama_v1001"]:
        name = f"odd_{kind}_dynamo_loss"
        path = os.path.join(out, name + ".onnx")
        try:
            model, vocab = make(kind)
            model.train()
            w = Wrap(model, False)
            inputs = batch(vocab)
            w.double()
            loss, grads, adamw = run_refs(w, inputs, "cpu", False)
            w.float()
            export(w, inputs, path, "dynamo", False)
            base = {"file": name + ".onnx", "B": B, "T": T,
                    "inputs": {k: v.tolist() for k, v in inputs.items()},
                    "exporter": "dynamo", "dynamic": False,
                    "exporter_optimized": False}
            ref = dict(base, loss=loss, grad_norms=grads, adamw_losses=adamw,
                       reference_dtype="float64")
            ref.update(describe(path, inputs))
            with open(os.path.join(out, name + ".ref.json"), "w") as f:
                json.dump(ref, f, indent=1)
            print(f"{name}: f64 loss {loss:.8f} ort {ref['ort_loss']:.8f}")
            if torch.cuda.is_available():
                l16, g16, a16 = run_refs(w, inputs, "cuda", True)
                bref = dict(base, precision="bf16",
                            recipe="torch.autocast(cuda, bfloat16), fp32 "
                                   "master weights and optimizer state",
                            loss=l16, fp32_loss=loss, grad_norms=g16,
                            adamw_losses=a16, fp32_adamw_losses=adamw)
                with open(os.path.join(out, name + ".bf16.ref.json"), "w") as f:
                    json.dump(bref, f, indent=1)
                print(f"{name}: bf16 loss {l16:.6f}")
        except Exception:
            print(f"{name}: FAILED")
            traceback.print_exc()


if __name__ == "__main__":
    main(sys.argv[1])
