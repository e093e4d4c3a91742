#!/usr/bin/env python3
"""Writes a GPT-2-architecture ONNX model (opset 20) with nothing but the
standard library, for compile-time measurements on machines without PyTorch.

The graph is what the HF export computes, written the plain way: token and
position embeddings, pre-LN blocks (LayerNormalization, fused QKV MatMul,
Split, causal softmax attention, tanh Gelu MLP), the final LayerNorm, a tied
LM head and SoftmaxCrossEntropyLoss. Weights are drawn from N(0, 0.02) (a
pool of 2^20 draws, tiled with a per-tensor offset: the values only have to
be finite and differ between tensors). At the default sizes this is GPT-2
124M, about 500 MB of float32 initializers stored inline.

usage: python3 bench/make_gpt2_onnx.py OUT.onnx [--layers 12] [--dim 768]
           [--heads 12] [--vocab 50257] [--batch 16] [--seq 1024] [--seed 0]
           [--ln-eps 1e-5] [--attn-scale S]
"""
import argparse
import array
import math
import random
import struct
import sys

# ---- protobuf wire format -------------------------------------------------


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def key(field, wire):
    return varint((field << 3) | wire)


def f_int(field, n):
    return key(field, 0) + varint(n)


def f_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return key(field, 2) + varint(len(data)) + data


def f_float(field, x):
    return key(field, 5) + struct.pack("<f", x)


# ---- ONNX messages (field numbers from onnx.proto) ------------------------

FLOAT, INT64, BOOL = 1, 7, 9


def tensor(name, dtype, dims, raw):
    return b"".join([f_int(1, d) for d in dims] + [f_int(2, dtype), f_bytes(8, name), f_bytes(9, raw)])


def attr(name, value):
    out = f_bytes(1, name)
    if isinstance(value, float):
        return out + f_float(2, value) + f_int(20, 1)
    if isinstance(value, int):
        return out + f_int(3, value) + f_int(20, 2)
    if isinstance(value, str):
        return out + f_bytes(4, value) + f_int(20, 3)
    if isinstance(value, bytes):  # an encoded TensorProto
        return out + f_bytes(5, value) + f_int(20, 4)
    return out + b"".join(f_int(8, v) for v in value) + f_int(20, 7)


def value_info(name, elem, dims):
    shape = b"".join(f_bytes(1, f_int(1, d)) for d in dims)
    ttype = f_int(1, elem) + f_bytes(2, shape)
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, ttype))


class Graph:
    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def node(self, op, inputs, n_out=1, **attrs):
        self.count += 1
        outs = [f"{op.lower()}_{self.count}_{i}" for i in range(n_out)]
        body = b"".join(f_bytes(1, i) for i in inputs)
        body += b"".join(f_bytes(2, o) for o in outs)
        body += f_bytes(3, f"{op}_{self.count}") + f_bytes(4, op)
        body += b"".join(f_bytes(5, attr(k, v)) for k, v in sorted(attrs.items()))
        self.nodes.append(body)
        return outs[0] if n_out == 1 else outs

    def const(self, dtype, dims, raw):
        return self.node("Constant", [], value=tensor("c", dtype, dims, raw))

    def ints(self, values):
        return self.const(INT64, [len(values)], struct.pack(f"<{len(values)}q", *values))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--seed", type=int, default=0)
    # Graph variants for the compile cache's tests: a node attribute and a
    # Constant node's value.
    p.add_argument("--ln-eps", type=float, default=1e-5)
    p.add_argument("--attn-scale", type=float, default=None)
    a = p.parse_args()
    B, T, D, H, V = a.batch, a.seq, a.dim, a.heads, a.vocab
    rng = random.Random(a.seed)
    draws = min(1 << 20, V * D)
    pool = array.array("f", [rng.gauss(0.0, 0.02) for _ in range(draws)]).tobytes()
    pool2 = pool + pool

    g = Graph()
    params = []

    def weight(name, dims, fill=None):
        n = math.prod(dims)
        if fill is not None:
            raw = struct.pack("<f", fill) * n
        else:
            start = 4 * rng.randrange(draws)
            reps = (4 * n + len(pool) - 1) // len(pool)
            raw = (pool2[start:start + len(pool)] * reps)[: 4 * n]
        g.inits.append(tensor(name, FLOAT, dims, raw))
        params.append(name)
        return name

    def layernorm(x, prefix):
        return g.node("LayerNormalization",
                      [x, weight(prefix + ".weight", [D], 1.0), weight(prefix + ".bias", [D], 0.0)],
                      axis=-1, epsilon=a.ln_eps)

    def linear(x, prefix, n_in, n_out):
        y = g.node("MatMul", [x, weight(prefix + ".weight", [n_in, n_out])])
        return g.node("Add", [y, weight(prefix + ".bias", [n_out], 0.0)])

    wte = weight("wte.weight", [V, D])
    wpe = weight("wpe.weight", [T, D])
    pos = g.ints(list(range(T)))
    x = g.node("Add", [g.node("Gather", [wte, "idx"]), g.node("Gather", [wpe, pos])])
    causal = bytes(1 if j <= i else 0 for i in range(T) for j in range(T))
    mask = g.const(BOOL, [T, T], causal)
    neg_inf = g.const(FLOAT, [], struct.pack("<f", float("-inf")))
    scale_value = a.attn_scale if a.attn_scale is not None else 1.0 / math.sqrt(D // H)
    scale = g.const(FLOAT, [], struct.pack("<f", scale_value))
    heads_shape = g.ints([B, T, H, D // H])
    model_shape = g.ints([B, T, D])
    split = g.ints([D, D, D])
    for layer in range(a.layers):
        pre = f"h.{layer}."
        qkv = linear(layernorm(x, pre + "ln_1"), pre + "attn.c_attn", D, 3 * D)
        q, k, v = g.node("Split", [qkv, split], n_out=3, axis=2)
        q = g.node("Transpose", [g.node("Reshape", [q, heads_shape])], perm=[0, 2, 1, 3])
        kt = g.node("Transpose", [g.node("Reshape", [k, heads_shape])], perm=[0, 2, 3, 1])
        v = g.node("Transpose", [g.node("Reshape", [v, heads_shape])], perm=[0, 2, 1, 3])
        s = g.node("Mul", [g.node("MatMul", [q, kt]), scale])
        s = g.node("Where", [mask, s, neg_inf])
        o = g.node("MatMul", [g.node("Softmax", [s], axis=-1), v])
        o = g.node("Reshape", [g.node("Transpose", [o], perm=[0, 2, 1, 3]), model_shape])
        x = g.node("Add", [x, linear(o, pre + "attn.c_proj", D, D)])
        f = linear(layernorm(x, pre + "ln_2"), pre + "mlp.c_fc", D, 4 * D)
        f = g.node("Gelu", [f], approximate="tanh")
        x = g.node("Add", [x, linear(f, pre + "mlp.c_proj", 4 * D, D)])
    x = layernorm(x, "ln_f")
    logits = g.node("MatMul", [x, g.node("Transpose", [wte], perm=[1, 0])])
    flat = g.node("Reshape", [logits, g.ints([B * T, V])])
    tgt = g.node("Reshape", ["tgt", g.ints([B * T])])
    loss = g.node("SoftmaxCrossEntropyLoss", [flat, tgt], reduction="mean")
    g.nodes.append(f_bytes(1, loss) + f_bytes(2, "loss") + f_bytes(3, "loss_identity") + f_bytes(4, "Identity"))

    graph = b"".join(f_bytes(1, n) for n in g.nodes) + f_bytes(2, "gpt2")
    graph += b"".join(f_bytes(5, t) for t in g.inits)
    graph += f_bytes(11, value_info("idx", INT64, [B, T])) + f_bytes(11, value_info("tgt", INT64, [B, T]))
    graph += f_bytes(12, value_info("loss", FLOAT, []))
    model = f_int(1, 9) + f_bytes(2, "make_gpt2_onnx") + f_bytes(7, graph)
    model += f_bytes(8, f_bytes(1, "") + f_int(2, 20))
    with open(a.out, "wb") as out:
        out.write(model)
    print(f"wrote {a.out}: {len(model) / 1e6:.1f} MB, {len(params)} initializers", file=sys.stderr)


if __name__ == "__main__":
    main()
