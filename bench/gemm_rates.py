#!/usr/bin/env python3
"""GEMM rates per shape from an `llmc train --trace FILE.json` step (issue 13).

Every cuBLASLt call of the traced step is named `matmul_N [m x n x k]`; this
groups them by shape and prints count, mean time and TFLOP/s (2mnk per call),
then the rate of the vocabulary GEMMs (a dim equal to --vocab, default the
largest dim seen) against the rate of the MLP GEMMs (dims --d and 4 --d,
GPT-2 124M's 768 x 3072): issue 13 asks for >= 90%.

  python3 bench/gemm_rates.py TRACE.json [--vocab 50304] [--d 768]
"""
import argparse
import json
import re
import sys
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--vocab", type=int, default=0)
    ap.add_argument("--d", type=int, default=768)
    args = ap.parse_args()
    with open(args.trace) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    pat = re.compile(r"matmul_\d+ \[(\d+) x (\d+) x (\d+)\]")
    shapes = defaultdict(list)
    for e in events:
        m = pat.search(str(e.get("name", "")))
        if m and e.get("ph") == "X":
            shapes[tuple(int(x) for x in m.groups())].append(e["dur"] / 1000.0)
    if not shapes:
        sys.exit("gemm_rates: no 'matmul_N [m x n x k]' events in the trace")
    vocab = args.vocab or max(max(s) for s in shapes)
    rate = {}
    print(f"{'m x n x k':>24} {'calls':>5} {'mean ms':>8} {'TFLOP/s':>8}")
    for s in sorted(shapes, key=lambda s: -sum(shapes[s])):
        ms = sum(shapes[s]) / len(shapes[s])
        tflops = 2 * s[0] * s[1] * s[2] / (ms * 1e-3) / 1e12
        rate[s] = (tflops, len(shapes[s]))
        print(f"{' x '.join(map(str, s)):>24} {len(shapes[s]):5d} {ms:8.3f} {tflops:8.1f}")

    def mean(sel):
        picked = [(r, n) for s, (r, n) in rate.items() if sel(s)]
        total = sum(n for _, n in picked)
        return sum(r * n for r, n in picked) / total if total else 0.0

    v = mean(lambda s: vocab in s)
    mlp = mean(lambda s: args.d in s and 4 * args.d in s)
    print(f"vocab ({vocab}) GEMMs {v:.1f} TFLOP/s, {args.d} x {4 * args.d} GEMMs "
          f"{mlp:.1f} TFLOP/s: {100 * v / mlp if mlp else 0:.0f}%")


if __name__ == "__main__":
    main()
