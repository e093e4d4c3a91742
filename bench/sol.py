"""Speed-of-light table for GPT-2-style training steps (issue 19).

The floor of each kernel family is what it must do divided by what this GPU
was measured to do in the same run: its FLOPs at the bf16 GEMM rate of an
8192^3 torch.matmul, or the bytes it must move at the bandwidth of a large
device-to-device copy (bytes read plus written). "Must": the model's own
work at its own vocabulary (padding is extra), each tensor read or written
once. Families without a floor formula are listed with their measured time.
"""
import re

import torch


def measure_ceilings():
    """(bf16 GEMM TFLOP/s, copy TB/s) measured on the current GPU."""
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    x = torch.empty(1 << 30, device="cuda", dtype=torch.uint8)
    y = torch.empty_like(x)

    def best(fn, reps=10):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            s, e = torch.cuda.Event(True), torch.cuda.Event(True)
            s.record()
            fn()
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e))
        return min(times)

    gemm_ms = best(lambda: a @ b)
    copy_ms = best(lambda: y.copy_(x))
    return 2 * n ** 3 / gemm_ms / 1e9, 2 * x.numel() / copy_ms / 1e9


def gpt2_floors(batch, seq, vocab, layers=12, d=768, heads=12):
    """{category: (flops, bytes)} of one training step."""
    tokens = batch * seq
    per_layer = d * 3 * d + d * d + d * 4 * d + 4 * d * d
    gemm = 6 * tokens * (layers * per_layer + vocab * d)
    head = d // heads
    attn_fwd = 4 * batch * heads * seq * seq * head / 2  # causal half
    attention = layers * 3.5 * attn_fwd  # forward + 2.5x backward
    # Weights, biases (3d + d + 4d + d) and two norms (4d) per layer.
    params = layers * (per_layer + 13 * d) + vocab * d + seq * d + 2 * d
    # AdamW: read p, g, m, v (f32), write p, m, v.
    optimizer = 28 * params
    # The classifier's least traffic: read bf16 logits once, write bf16
    # logit gradients once.
    classifier = 4 * tokens * vocab
    return {"gemm": (gemm, 0), "attention": (attention, 0),
            "optimizer": (0, optimizer), "classifier": (0, classifier)}


CATEGORY = [
    ("gemm", re.compile(r"^matmul")),
    ("attention", re.compile(r"^attention")),
    ("optimizer", re.compile(r"^(multi_adamw|adamw|global_norm)")),
    ("classifier", re.compile(r"^cross_entropy")),
]


def parse_profile(text):
    """[(family, steps, ms)] from llmc train --profile's family table."""
    rows = []
    in_table = False
    for line in text.splitlines():
        if line.startswith("family"):
            in_table = True
            continue
        if line.startswith("slowest steps"):
            break
        m = re.match(r"^(.+?)\s+(\d+)\s+([0-9.]+)\s+[0-9.]+%$", line)
        if in_table and m:
            rows.append((m.group(1).strip(), int(m.group(2)),
                         float(m.group(3))))
    return rows


def sol_table(profile_text, tflops, tbps, batch, seq, vocab, layers=12, d=768,
              heads=12):
    """The table as text, or '' when the profile has no family table."""
    rows = parse_profile(profile_text)
    if not rows:
        return ""
    floors = gpt2_floors(batch, seq, vocab, layers, d, heads)
    measured = {c: 0.0 for c, _ in CATEGORY}
    launches = {c: 0 for c, _ in CATEGORY}
    other_ms, other_launches = 0.0, 0
    for fam, steps, ms in rows:
        for cat, rx in CATEGORY:
            if rx.search(fam):
                measured[cat] += ms
                launches[cat] += steps
                break
        else:
            other_ms += ms
            other_launches += steps
    out = [f"speed of light (this GPU, this run: bf16 GEMM {tflops:.0f} "
           f"TFLOP/s, copy {tbps:.2f} TB/s)",
           f"{'family':<12} {'launches':>8} {'GFLOP':>9} {'GB':>8} "
           f"{'floor ms':>9} {'ms':>9} {'% floor':>8}"]
    total_floor = total_ms = 0.0
    for cat, _ in CATEGORY:
        flops, nbytes = floors[cat]
        floor = max(flops / (tflops * 1e9), nbytes / (tbps * 1e9))
        ms = measured[cat]
        total_floor += floor
        total_ms += ms
        pct = f"{100 * floor / ms:7.0f}%" if ms > 0 else "      -"
        out.append(f"{cat:<12} {launches[cat]:>8} {flops / 1e9:>9.0f} "
                   f"{nbytes / 1e9:>8.2f} {floor:>9.2f} {ms:>9.2f} {pct}")
    total_ms += other_ms
    out.append(f"{'other':<12} {other_launches:>8} {'':>9} {'':>8} "
               f"{'-':>9} {other_ms:>9.2f}       -")
    out.append(f"{'step':<12} {sum(launches.values()) + other_launches:>8} "
               f"{'':>9} {'':>8} {total_floor:>9.2f} {total_ms:>9.2f} "
               f"{100 * total_floor / total_ms:7.0f}%")
    return "\n".join(out)
