#!/usr/bin/env python3
"""Activation checkpointing under a budget: llmc next to PyTorch, one GPU run.

Issue 15's benchmark (docs/memory.md, "Rematerialization"), GPT-2 124M bf16,
T 1024:

1. llmc at B 16 with no budget and at the budget that halves its activation
   memory. Activation memory = the planned arena buffers (the compile
   report's `arena buffers`) - the persistent buffers (parameters,
   gradients, AdamW's moments, the bf16 weight copies, the token buffers:
   the report's `persistent`); the budget is the planned peak (the report's
   device memory total) - activation / 2. The fixed costs (workspaces,
   modules, graph) are not activations: until session 8 the script took
   total - persistent, which held no cuDNN workspace then; with the
   workspace in the plan (session 9) that definition would count 385 MiB
   of it as activations that recomputation must halve. Each run's
   tokens/s (median step) and its device peak (nvidia-smi's used memory
   polled during `llmc train`, less what was used before it: the arena,
   the runtime's fixed costs and the process's CUDA context), and the
   ratio (bar: at most 8% slower).
2. The smallest batch that does not fit this GPU without recomputation:
   the planner's answer (`llmc compile --batch N` reports the peak without
   recomputation), probed from --big-start (256) in steps of --batch-step
   (32): session 7's search stopped at B 224, which still fitted an 80 GB
   H100. The first batch over is trained for a few steps with the budget
   set to the GPU's free memory less --margin-mib: tokens/s, planned and
   measured peak.
3. PyTorch on the same model (HF GPT-2, bf16 autocast, AdamW fused): eager
   with and without `model.gradient_checkpointing_enable()`, torch.compile
   with and without `torch._functorch.config.activation_memory_budget =
   0.5`, at B 16, and eager with checkpointing at the large batch; tokens/s
   and the allocator's peak (torch.cuda.max_memory_allocated).

llmc compiles the model from `llmc recipe gpt2 --size 124M` (the same
architecture as HF's GPT-2; its batch is a dim, so no ONNX export per
batch). The whole run takes about 7 minutes on an H100; the PyTorch modes
left after --time-limit seconds (420) are skipped, so that it ends within
8; --torch-modes and --steps trim it.

Usage (on the GPU machine, from the repository root, with build/bin/llmc or
the binary named by $LLMC):
  python3 bench/memory_budget.py [--steps 10] [--warmup 3] [--big-steps 3]
      [--big-start 256] [--batch-step 32] [--max-probes 6] [--time-limit 420]
      [--torch-modes eager,eager-ckpt,compile,compile-amb0.5,big-eager-ckpt]
      [--out DIR]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MIB = 1 << 20
STEP_LINE = re.compile(r"^step \d+ \| loss ([0-9.]+) \|(?: grad norm \S+ \|)? "
                       r"lr \S+ \| ms ([0-9.]+)", re.M)


def llmc_bin():
    return os.path.abspath(os.environ.get("LLMC", "build/bin/llmc"))


def smi(field):
    """nvidia-smi's FIELD of GPU 0, in MiB."""
    out = subprocess.run(["nvidia-smi", "-i", "0", f"--query-gpu={field}",
                          "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip().splitlines()[0])


class PeakPoller:
    """nvidia-smi's used memory of GPU 0, polled every 50 ms while running:
    the device's own count, in MiB, less what was used at the start."""

    def __init__(self):
        self.base = smi("memory.used")
        self.peak = self.base
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            try:
                self.peak = max(self.peak, smi("memory.used"))
            except Exception:  # a failed poll leaves the peak as it was
                pass
            self.stop.wait(0.05)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def delta_mib(self):
        return self.peak - self.base


def run(cmd, timeout):
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


def gib_text(text):
    """'7.73 GiB' / '812.00 MiB' / '3.00 KiB' -> bytes."""
    value, unit = text.split()
    return float(value) * {"GiB": 1 << 30, "MiB": MIB, "KiB": 1 << 10}[unit]


def compile_llmc(args, batch, budget_bytes=None, tag=""):
    """`llmc compile` of the recipe at `batch`: the bundle and what its
    report says (planned total, persistent, recompute and classifier)."""
    bundle = os.path.join(args.out, f"gpt2_b{batch}{tag}.llmc")
    cmd = [llmc_bin(), "compile", args.recipe, "--precision", "bf16",
           "--batch", str(batch), "--seq", "1024", "-o", bundle]
    if budget_bytes is not None:
        cmd += ["--memory-budget", str(int(budget_bytes)), "--explain"]
    t0 = time.time()
    rc, out = run(cmd, args.timeout)
    r = {"batch": batch, "bundle": bundle, "compile_s": time.time() - t0,
         "budget": budget_bytes}
    if rc:
        r["error"] = out.strip().splitlines()[-1] if out.strip() else "failed"
        return r
    with open(bundle + ".report.txt", "w") as f:
        f.write(out)
    total = re.search(r"^device memory .*\((\d+) bytes", out, re.M)
    persistent = re.search(r"^arena .*persistent ([0-9.]+ [KMG]iB)", out, re.M)
    r["planned"] = int(total.group(1))
    r["persistent"] = gib_text(persistent.group(1))
    # The planner's buffers alone: the workspaces (cuBLASLt's, and cuDNN's
    # attention workspace since session 9), modules and graph are fixed
    # costs that no recomputation shrinks, so they are not activations.
    arena = re.search(r"^  arena buffers +([0-9.]+ [KMG]iB)", out, re.M)
    r["arena"] = gib_text(arena.group(1)) if arena else r["planned"]
    r["recompute"] = [l for l in out.splitlines() if l.startswith("recompute ")]
    r["classifier"] = [l for l in out.splitlines()
                       if l.startswith("classifier ")]
    before = re.search(r"^recompute +@\w+: .*planned peak ([0-9.]+ [KMG]iB) ->",
                       out, re.M)
    r["peak_without_recompute"] = gib_text(before.group(1)) if before \
        else r["planned"]
    modelled = re.search(r"modelled recompute time ([0-9.]+) ms", out)
    if modelled:
        r["modelled_ms"] = float(modelled.group(1))
    return r


def train_llmc(args, r, steps, warmup):
    """Trains the bundle of `r`: median ms, tokens/s and the device peak."""
    data = os.path.join(args.out, "tokens.bin")
    n = r["batch"] * 1024 * (steps + warmup + 2) + 1
    if not os.path.exists(data) or os.path.getsize(data) < 1024 + 2 * n:
        import numpy as np
        header = np.zeros(256, dtype=np.int32)
        header[:3] = [20240520, 1, n]
        toks = np.random.default_rng(0).integers(0, 50257, n, dtype=np.uint16)
        with open(data, "wb") as f:
            f.write(header.tobytes())
            f.write(toks.tobytes())
    cmd = [llmc_bin(), "train", r["bundle"], "--device", "cuda", "--data",
           data, "--steps", str(steps + warmup), "--lr", "1e-4",
           "--no-progress"]
    with PeakPoller() as poll:
        rc, out = run(cmd, args.timeout)
    print(out[-3000:], file=sys.stderr)
    if rc:
        r["error"] = "llmc train failed: " + (out.strip().splitlines() or
                                              ["?"])[-1]
        return r
    timed = [float(ms) for _, ms in STEP_LINE.findall(out)[warmup:]]
    r["ms"] = sorted(timed)[len(timed) // 2]
    r["tok_s"] = r["batch"] * 1024 / (r["ms"] / 1000)
    r["measured_mib"] = poll.delta_mib()
    r["loss"] = float(STEP_LINE.findall(out)[-1][0])
    return r


def time_torch(args, mode, batch):
    """HF GPT-2 124M, bf16 autocast, fused AdamW. mode: eager, eager-ckpt,
    compile, compile-amb0.5 (torch.compile under
    activation_memory_budget 0.5)."""
    import torch
    import gpt2_124m as g
    torch.backends.cuda.matmul.allow_tf32 = True
    hf = g.make_model(50257)
    hf.train()
    if mode.endswith("ckpt"):
        hf.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": False})
    model = g.Wrap(hf).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    fn = model
    budget = None
    if mode.startswith("compile"):
        import torch._functorch.config as fconfig
        m = re.search(r"amb([0-9.]+)", mode)
        budget = float(m.group(1)) if m else 1.0
        fconfig.activation_memory_budget = budget
        torch._dynamo.reset()
        fn = torch.compile(model)
    gen = torch.Generator(device="cuda").manual_seed(0)
    idx = torch.randint(0, 50257, (batch, 1024), device="cuda", generator=gen)
    tgt = torch.randint(0, 50257, (batch, 1024), device="cuda", generator=gen)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = fn(idx, tgt)
        loss.backward()
        opt.step()
        return loss

    try:
        first_s, ms, loss = g.time_steps(step, args.warmup, args.steps)
        return {"mode": f"torch-{mode}", "batch": batch, "ms": ms,
                "tok_s": batch * 1024 / (ms / 1000),
                "peak_mib": torch.cuda.max_memory_allocated() / MIB,
                "reserved_mib": torch.cuda.max_memory_reserved() / MIB,
                "first_step_s": first_s, "loss": loss.item()}
    finally:
        if budget is not None:
            import torch._functorch.config as fconfig
            fconfig.activation_memory_budget = 1.0
        del fn, model, opt, hf
        torch.cuda.empty_cache()


def find_big_batch(args, base, avail):
    """The smallest batch of --big-start + k * --batch-step (k >= 0; below
    --big-start too, in the same steps, when --big-start is already over)
    whose plan without recomputation exceeds `avail`, asking the planner.
    Session 7 stopped at B 224 (planned 79.4 GB without recomputation,
    under the 80 GB H100's budget), so the probes start at B 256 in steps
    of 32. Each probe compiles with the budget `avail`, whose report gives
    the peak without recomputation and, for the batch found, the bundle to
    train. The linear estimate from B 16 is printed for comparison."""
    per_row = (base["planned"] - base["persistent"]) / 16
    step = args.batch_step
    guess = int((avail - base["persistent"]) / per_row)
    print(f"estimate: ({avail / MIB:.0f} MiB available - "
          f"{base['persistent'] / MIB:.0f} persistent) / {per_row / MIB:.1f} "
          f"MiB per row at B 16 -> about B {guess} fits (the classifier's "
          f"chunks grow slower than that)", flush=True)
    probes = {}

    def probe(b):
        if b not in probes:
            probes[b] = compile_llmc(args, b, avail, tag="_fit")
            p = probes[b]
            print(f"planner: B {b}: peak without recomputation "
                  f"{p.get('peak_without_recompute', float('nan')) / MIB:.0f} "
                  f"MiB, {'error: ' + p['error'] if 'error' in p else 'compiled'}"
                  f" ({p['compile_s']:.0f} s)", flush=True)
        return probes[b]

    def over(p):
        return "error" in p or p["peak_without_recompute"] > avail

    b = args.big_start
    if over(probe(b)):
        # Already over: step down to the last batch that fits.
        for _ in range(args.max_probes - 1):
            if b - step <= 16 or not over(probe(b - step)):
                return probes[b], probes
            b -= step
        return probes[b], probes
    for _ in range(args.max_probes - 1):
        b += step
        if over(probe(b)):
            return probes[b], probes
    return None, probes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--big-steps", type=int, default=3,
                    help="timed steps at the large batch (one warm-up)")
    ap.add_argument("--big-start", type=int, default=256,
                    help="first batch of the large-batch search")
    ap.add_argument("--batch-step", type=int, default=32,
                    help="granularity of the large-batch search")
    ap.add_argument("--max-probes", type=int, default=6)
    ap.add_argument("--time-limit", type=int, default=420,
                    help="seconds after which the remaining PyTorch modes "
                         "are skipped (the whole run stays under 8 minutes)")
    ap.add_argument("--margin-mib", type=int, default=1024,
                    help="free memory left to the CUDA context and others")
    ap.add_argument("--torch-modes",
                    default="eager,eager-ckpt,compile,compile-amb0.5,"
                            "big-eager-ckpt")
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/membench"))
    ap.add_argument("--timeout", type=int, default=300)
    args = ap.parse_args()
    started = time.time()
    os.makedirs(args.out, exist_ok=True)
    args.recipe = os.path.join(args.out, "gpt2_124m.json")
    rc, out = run([llmc_bin(), "recipe", "gpt2", "--size", "124M", "-o",
                   args.recipe], 60)
    if rc:
        sys.exit("llmc recipe failed: " + out)
    free = smi("memory.free") * MIB
    avail = free - args.margin_mib * MIB
    name = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=name",
                           "--format=csv,noheader"], capture_output=True,
                          text=True).stdout.strip()
    print(f"{name}: {free / MIB:.0f} MiB free; available to a plan: "
          f"{avail / MIB:.0f} MiB (free - {args.margin_mib} MiB)", flush=True)
    rows = []

    # 1. B 16: no budget, then the budget that halves activation memory.
    base = compile_llmc(args, 16)
    if "error" in base:
        sys.exit("llmc compile failed: " + base["error"])
    act = base["arena"] - base["persistent"]
    half = base["planned"] - act / 2
    print(f"activation memory = planned arena buffers {base['arena'] / MIB:.1f} "
          f"MiB - persistent {base['persistent'] / MIB:.1f} MiB (parameters, "
          f"gradients, AdamW moments, bf16 weight copies, token buffers) = "
          f"{act / MIB:.1f} MiB; half of it: budget = planned peak "
          f"{base['planned'] / MIB:.1f} MiB - activation / 2 = "
          f"{half / MIB:.1f} MiB", flush=True)
    train_llmc(args, base, args.steps, args.warmup)
    base["mode"] = "llmc B16 no budget"
    rows.append(base)
    halfr = compile_llmc(args, 16, half, tag="_half")
    if "error" not in halfr:
        train_llmc(args, halfr, args.steps, args.warmup)
        act_after = halfr["arena"] - halfr["persistent"]
        halfr["activation_fraction"] = act_after / act
    halfr["mode"] = "llmc B16 half activations"
    rows.append(halfr)
    for l in halfr.get("classifier", []) + halfr.get("recompute", []):
        print(l)

    # 2. The smallest batch that does not fit without recomputation.
    big = None
    if not args.skip_big:
        big, probes = find_big_batch(args, base, avail)
        if big is not None:
            big["mode"] = f"llmc B{big['batch']} budget {avail / MIB:.0f} MiB"
            if "error" not in big:
                train_llmc(args, big, args.big_steps, 1)
            rows.append(big)
            for l in big.get("classifier", []) + big.get("recompute", []):
                print(l)
        else:
            print("no batch found over the available memory within "
                  f"{args.max_probes} probes", flush=True)

    # 3. PyTorch, same model and batches.
    for mode in [m for m in args.torch_modes.split(",") if m]:
        batch = 16
        if mode.startswith("big-"):
            if big is None:
                continue
            batch, mode = big["batch"], mode[len("big-"):]
        if time.time() - started > args.time_limit:
            rows.append({"mode": f"torch-{mode}", "batch": batch,
                         "error": f"skipped: past --time-limit "
                                  f"{args.time_limit} s"})
            continue
        try:
            rows.append(time_torch(args, mode, batch))
        except Exception as e:  # an OOM must not hide the other rows
            rows.append({"mode": f"torch-{mode}", "batch": batch,
                         "error": repr(e)[:200]})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)

    json.dump(rows, open(os.path.join(args.out, "memory_budget.json"), "w"),
              indent=1, default=str)
    print(f"\n{name} | GPT-2 124M bf16 | T 1024 | median of {args.steps} "
          f"steps after {args.warmup} warm-up")
    print(f"{'run':40} {'B':>4} {'ms/step':>8} {'tok/s':>9} "
          f"{'planned MiB':>11} {'measured MiB':>12}")
    for r in rows:
        mode = r.get("mode", "?")
        if "error" in r:
            print(f"{mode:40} {r.get('batch', 0):4} error: {r['error']}")
            continue
        planned = f"{r['planned'] / MIB:11.0f}" if "planned" in r else \
            f"{'':11}"
        measured = r.get("measured_mib", r.get("peak_mib", float("nan")))
        print(f"{mode:40} {r['batch']:4} {r['ms']:8.1f} {r['tok_s']:9.0f} "
              f"{planned} {measured:12.0f}")
    print("(llmc measured: nvidia-smi's used memory during `llmc train` less "
          "before it, the CUDA context included; torch: "
          "max_memory_allocated)")
    if "tok_s" in base and "tok_s" in halfr:
        ratio = halfr["tok_s"] / base["tok_s"]
        verdict = "meets" if ratio >= 0.92 else "MISSES"
        print(f"half activation memory: activations {act / MIB:.0f} -> "
              f"{(halfr['arena'] - halfr['persistent']) / MIB:.0f} MiB "
              f"({halfr['activation_fraction']:.1%}), tokens/s x{ratio:.3f} "
              f"({ratio - 1:+.1%}): {verdict} the bar of at most 8% slower")
        if "modelled_ms" in halfr:
            print(f"  measured {halfr['ms'] - base['ms']:+.2f} ms a step, "
                  f"modelled recompute time {halfr['modelled_ms']:.2f} ms "
                  f"({halfr['modelled_ms'] / base['ms']:+.1%} of the "
                  f"no-budget step)")
    if big is not None and "tok_s" in big:
        print(f"B {big['batch']}: planned {big['peak_without_recompute'] / MIB:.0f}"
              f" MiB without recomputation > {avail / MIB:.0f} MiB available; "
              f"trained with the budget: planned {big['planned'] / MIB:.0f} "
              f"MiB, measured {big['measured_mib']:.0f} MiB, "
              f"{big['tok_s']:.0f} tok/s ({big['ms']:.0f} ms/step), loss "
              f"{big['loss']:.3f}")
    torch_rows = {r["mode"]: r for r in rows
                  if r.get("mode", "").startswith("torch") and "tok_s" in r
                  and r["batch"] == 16}
    if "torch-eager" in torch_rows and "torch-eager-ckpt" in torch_rows:
        print(f"torch eager checkpointing: tokens/s x"
              f"{torch_rows['torch-eager-ckpt']['tok_s'] / torch_rows['torch-eager']['tok_s']:.3f}, "
              f"peak {torch_rows['torch-eager']['peak_mib']:.0f} -> "
              f"{torch_rows['torch-eager-ckpt']['peak_mib']:.0f} MiB")
    if "torch-compile" in torch_rows and "torch-compile-amb0.5" in torch_rows:
        print(f"torch.compile activation_memory_budget 0.5: tokens/s x"
              f"{torch_rows['torch-compile-amb0.5']['tok_s'] / torch_rows['torch-compile']['tok_s']:.3f}, "
              f"peak {torch_rows['torch-compile']['peak_mib']:.0f} -> "
              f"{torch_rows['torch-compile-amb0.5']['peak_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
