#!/usr/bin/env python3
"""What torch.compile spends a GPT-2 step on, per kernel family: the other
side of bench/sol.py's table. Runs the yardstick configuration of
gpt2_124m.py (torch.compile, bf16 autocast, fused AdamW, TF32 on) under
torch.profiler and sums CUDA kernel time per family (GEMM, attention,
optimizer, Triton-generated, other), plus SDPA fwd+bwd per backend on the
model's attention shape, so llmc's per-family times have a comparison
measured in the same call.

Usage (GPU machine, repository root):
  python3 bench/torch_kernels.py [--batch 16] [--vocab 50304] [--model gpt2-124M]
      [--llmc EXPORT.onnx] [--no-sdpa] [--no-compile] [--nano]

--llmc profiles llmc's step (bf16, through the Python API, $LLMC_LIBRARY)
with the same profiler, so both sides' kernel times come from CUPTI; llmc's
own `--profile` times each launch with events and sums ~10% high.
"""
import argparse
import collections
import os
import re
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_124m as g  # noqa: E402

FAMILIES = [
    ("attention", re.compile(r"flash|fmha|attention|cudnn|sdpa", re.I)),
    ("GEMM", re.compile(r"gemm|sm90_xmma|cutlass|nvjet|ampere_|sm80_|wgmma", re.I)),
    ("optimizer", re.compile(r"multi_tensor|adam", re.I)),
    ("triton", re.compile(r"triton", re.I)),
]


def family(name):
    for fam, rx in FAMILIES:
        if rx.search(name):
            return fam
    return "other"


def compile_step(args, idx, tgt):
    if args.nano:
        m = g.MODEL
        model = g.nano_gpt.NanoGPT(args.vocab, m["layers"], m["d"], m["heads"]).cuda()
    else:
        model = g.Wrap(g.make_model(args.vocab)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    fn = torch.compile(model)
    torch.backends.cuda.matmul.allow_tf32 = True

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = fn(idx, tgt)
        loss.backward()
        opt.step()
    style = " (nanoGPT-style)" if args.nano else ""
    return step, f"torch.compile {args.model}{style} B {args.batch} vocab {args.vocab}"


def llmc_step(args, idx, tgt):
    """llmc's compiled step through its Python API, in this process, so the
    same CUPTI profiler sees its graph's kernels and cuBLASLt calls."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "python"))
    import llmc
    path = args.llmc
    if not os.path.exists(path):
        m = g.Wrap(g.make_model(g.MODEL["vocab"])).eval()
        torch.onnx.export(m, (idx.cpu(), tgt.cpu().clone()), path, dynamo=True,
                          optimize=False, input_names=["idx", "tgt"],
                          output_names=["loss"])
    step_fn = llmc.compile(path, batch=args.batch, seq=1024, precision="bf16",
                           device="cuda")

    def step():
        step_fn(idx, tgt, wait=False)
    return step, f"llmc {args.model} B {args.batch} ({os.path.basename(path)})"


def profile(args, make):
    g.MODEL = g.MODELS[args.model]
    idx = torch.randint(0, g.MODEL["vocab"], (args.batch, 1024), device="cuda")
    tgt = torch.randint(0, g.MODEL["vocab"], (args.batch, 1024), device="cuda")
    step, title = make(args, idx, tgt)
    for _ in range(4):
        step()
    torch.cuda.synchronize()
    steps = 5
    a, b = torch.cuda.Event(True), torch.cuda.Event(True)
    a.record()
    for _ in range(steps):
        step()
    b.record()
    torch.cuda.synchronize()
    wall = a.elapsed_time(b) / steps
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    fam_ms = collections.Counter()
    fam_n = collections.Counter()
    kern = collections.Counter()
    kern_n = collections.Counter()
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        us = e.device_time if hasattr(e, "device_time") else e.cuda_time
        f = family(e.name)
        fam_ms[f] += us / 1000 / steps
        fam_n[f] += 1 / steps
        kern[e.name[:90]] += us / 1000 / steps
        kern_n[e.name[:90]] += 1 / steps
    total = sum(fam_ms.values())
    print(f"{title}: {wall:.2f} ms a step unprofiled, {total:.2f} ms kernel "
          f"time a step profiled, {sum(fam_n.values()):.0f} kernels")
    print("family      kernels      ms")
    for f, ms in fam_ms.most_common():
        print(f"{f:10s} {fam_n[f]:8.0f} {ms:7.2f}")
    print("top kernels (ms a step, count):")
    for k, ms in kern.most_common(args.top):
        print(f"  {ms:7.3f} {kern_n[k]:4.0f}  {k}")


def time_sdpa(args):
    m = g.MODELS[args.model]
    h, d = m["heads"], m["d"] // m["heads"]
    shape = (args.batch, h, 1024, d)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16,
                           requires_grad=True) for _ in range(3))
    do = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for name, be in [("cudnn", SDPBackend.CUDNN_ATTENTION),
                     ("flash", SDPBackend.FLASH_ATTENTION),
                     ("efficient", SDPBackend.EFFICIENT_ATTENTION)]:
        try:
            with sdpa_kernel(be):
                def fwd():
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True)
                res = {}
                for what in ("fwd", "fwd+bwd"):
                    for _ in range(3):
                        o = fwd()
                        if what != "fwd":
                            o.backward(do)
                    torch.cuda.synchronize()
                    a, b = torch.cuda.Event(True), torch.cuda.Event(True)
                    a.record()
                    for _ in range(10):
                        o = fwd()
                        if what != "fwd":
                            o.backward(do)
                    b.record()
                    torch.cuda.synchronize()
                    res[what] = a.elapsed_time(b) / 10
            print(f"sdpa {name:9s} {shape}: fwd {res['fwd']:.3f} ms, fwd+bwd "
                  f"{res['fwd+bwd']:.3f} ms a layer, x{m['layers']} = "
                  f"{m['layers'] * res['fwd+bwd']:.2f} ms a step")
        except Exception as e:  # a backend this build lacks
            print(f"sdpa {name}: unavailable ({str(e).splitlines()[0][:100]})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--model", default="gpt2-124M", choices=sorted(g.MODELS))
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--llmc", default="",
                    help="also profile llmc's step on this ONNX export (exported "
                    "from the HF model at the model's vocabulary when missing)")
    ap.add_argument("--no-sdpa", action="store_true")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--nano", action="store_true",
                    help="torch.compile the nanoGPT-style model (bench/nano_gpt.py), "
                    "the one issue 19's recorded medians were measured on")
    args = ap.parse_args()
    print(torch.cuda.get_device_name())
    if not args.no_sdpa:
        time_sdpa(args)
    if not args.no_compile:
        profile(args, compile_step)
    if args.llmc:
        profile(args, llmc_step)


if __name__ == "__main__":
    main()
