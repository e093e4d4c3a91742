#!/usr/bin/env python3
"""Exports small transformers models to ONNX with both PyTorch exporters and
writes a reference file per export, in the format of the shared models'
README (B, T, inputs, ops, opset, loss, grad_norms, initializers,
exporter_optimized, adamw_losses), plus `ort_loss` (onnxruntime on the same
batch) as a check that the export computes what PyTorch does.

Runs where PyTorch, transformers, onnx and onnxruntime are installed (the GPU
machine); CPU is enough. Usage: export_models.py OUTDIR [NAME ...]
"""
import json
import os
import sys
import traceback
from collections import Counter

import torch
import torch.nn as nn

B, T, VOCAB = 2, 16, 512


class Wrap(nn.Module):
    """The exported module: inputs in, loss out. Parameters are `m.<name>`."""

    def __init__(self, m, with_mask):
        super().__init__()
        self.m = m
        self.with_mask = with_mask

    def forward(self, idx, tgt, mask=None):
        if self.with_mask:
            return self.m(input_ids=idx, attention_mask=mask, labels=tgt).loss
        return self.m(input_ids=idx, labels=tgt).loss


def make(kind):
    import transformers as tf
    torch.manual_seed(0)
    common = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128,
                  num_hidden_layers=2, num_attention_heads=4,
                  max_position_embeddings=64)
    if kind == "llama":
        cfg = tf.LlamaConfig(num_key_value_heads=2, tie_word_embeddings=False,
                             rms_norm_eps=1e-5, **common)
        return tf.LlamaForCausalLM(cfg), False
    if kind == "qwen2":
        cfg = tf.Qwen2Config(num_key_value_heads=2, tie_word_embeddings=True,
                             rms_norm_eps=1e-6, **common)
        return tf.Qwen2ForCausalLM(cfg), False
    if kind == "bert":
        cfg = tf.BertConfig(hidden_dropout_prob=0.0,
                            attention_probs_dropout_prob=0.0, **common)
        return tf.BertForMaskedLM(cfg), True
    raise ValueError(kind)


def batch(kind):
    g = torch.Generator().manual_seed(1234)
    idx = torch.randint(0, VOCAB, (B, T), generator=g)
    if kind == "bert":
        # Masked-LM: labels only on ~30% of positions, -100 elsewhere.
        tgt = torch.randint(0, VOCAB, (B, T), generator=g)
        keep = torch.rand((B, T), generator=g) < 0.3
        tgt = torch.where(keep, tgt, torch.full_like(tgt, -100))
        mask = torch.ones((B, T), dtype=torch.int64)
        mask[1, T - 4:] = 0  # padding at the end of the second sequence
        return {"idx": idx, "tgt": tgt, "mask": mask}
    return {"idx": idx, "tgt": torch.randint(0, VOCAB, (B, T), generator=g)}


def references(w, inputs):
    args = list(inputs.values())
    w.zero_grad()
    loss = w(*args)
    loss.backward()
    names = {}
    for name, p in w.m.named_parameters(remove_duplicate=False):
        names[name] = p.grad.norm().item()
    loss0 = loss.item()
    # 10 AdamW steps on the same batch, loss recorded before each step.
    state = {k: v.detach().clone() for k, v in w.state_dict().items()}
    opt = torch.optim.AdamW(w.parameters(), lr=1e-3, betas=(0.9, 0.95),
                            eps=1e-8, weight_decay=0.1)
    losses = []
    for _ in range(10):
        opt.zero_grad()
        l = w(*args)
        losses.append(l.item())
        l.backward()
        opt.step()
    w.load_state_dict(state)
    return loss0, names, losses


def export(w, inputs, path, exporter, dynamic):
    args = tuple(inputs.values())
    names = list(inputs.keys())
    if exporter in ("dynamo", "dynamo_opt"):
        ds = None
        if dynamic:
            bd = torch.export.Dim("batch", min=1, max=64)
            sd = torch.export.Dim("seq", min=2, max=64)
            ds = {n: {0: bd, 1: sd} for n in names}
        # dynamo_opt: the exporter's default optimizer on (issue 18: llmc
        # must raise its attention and RMS norm patterns too).
        torch.onnx.export(w, args, path, dynamo=True,
                          optimize=exporter == "dynamo_opt",
                          input_names=names, output_names=["loss"],
                          dynamic_shapes=ds)
    else:
        axes = {n: {0: "batch", 1: "seq"} for n in names} if dynamic else None
        torch.onnx.export(w, args, path, dynamo=False, opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, input_names=names,
                          output_names=["loss"], dynamic_axes=axes)


def describe(path, inputs):
    import onnx
    import onnxruntime as ort
    m = onnx.load(path)
    ops = Counter(n.op_type for n in m.graph.node)
    inits = {i.name: list(i.dims) for i in m.graph.initializer}
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {}
    for i in sess.get_inputs():
        feed[i.name] = inputs[i.name].numpy()
    ort_loss = float(sess.run(None, feed)[0])
    return {"ops": dict(ops), "opset": [[o.domain, o.version] for o in m.opset_import],
            "initializers": inits, "ort_loss": ort_loss}


def main(out, only=()):
    os.makedirs(out, exist_ok=True)
    plan = [("llama", "dynamo", False), ("llama", "dynamo", True),
            ("llama", "torchscript", False), ("qwen2", "dynamo", False),
            ("qwen2", "torchscript", False), ("bert", "dynamo", False),
            ("bert", "torchscript", False), ("bert", "torchscript", True),
            ("llama", "dynamo_opt", False)]
    for kind, exporter, dynamic in plan:
        name = f"hf_{kind}_{exporter}_loss" + ("_dyn" if dynamic else "")
        if only and name not in only:
            continue
        path = os.path.join(out, name + ".onnx")
        try:
            model, with_mask = make(kind)
            model.train()
            w = Wrap(model, with_mask)
            inputs = batch(kind)
            loss, grads, adamw = references(w, inputs)
            export(w, inputs, path, exporter, dynamic)
            ref = {"file": name + ".onnx", "B": B, "T": T,
                   "inputs": {k: v.tolist() for k, v in inputs.items()},
                   "exporter": exporter, "dynamic": dynamic,
                   "exporter_optimized": exporter == "dynamo_opt",
                   "loss": loss,
                   "grad_norms": grads, "adamw_losses": adamw}
            ref.update(describe(path, inputs))
            with open(os.path.join(out, name + ".ref.json"), "w") as f:
                json.dump(ref, f, indent=1)
            print(f"{name}: loss {loss:.6f} ort {ref['ort_loss']:.6f} "
                  f"ops {sum(ref['ops'].values())} size {os.path.getsize(path)}")
        except Exception:
            print(f"{name}: FAILED")
            traceback.print_exc()


if __name__ == "__main__":
    # export_models.py OUTDIR [NAME ...]: every export, or only those named
    # (e.g. hf_llama_dynamo_opt_loss).
    main(sys.argv[1], set(sys.argv[2:]))
