#!/usr/bin/env python3
"""Groups refused.txt by reason: the table of docs/onnx-conformance.md.

usage: summarize.py [refused.txt]
"""
import collections
import re
import sys

# (category, pattern on the message), first match wins.
CATEGORIES = [
    ("opset older than 13", r"uses ONNX opset \d+;"),
    ("no opset of the default domain", r"imports no opset of the default"),
    ("element type llmc tensors do not hold",
     r"element type|test data of type|casts to"),
    ("sequence, map or optional graph input or output", r"is not a tensor"),
    ("class weights of a loss", r"class weights"),
    ("LayerNormalization's Mean/InvStdDev read",
     r"\(LayerNormalization\): output"),
    ("Dropout's mask read, or training-mode Dropout", r"Dropout"),
    ("op evaluated on import-time constants only",
     r"only on values known at import time|on float tensors only"),
    ("op llmc does not import", r"llmc does not import ONNX op"),
]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "refused.txt"
    counts = collections.Counter()
    ops = collections.Counter()
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        case, _, why = line.rstrip("\n").partition("\t")
        for name, pattern in CATEGORIES:
            if re.search(pattern, why):
                counts[name] += 1
                m = re.search(r"llmc does not import ONNX op '(\w+)'", why)
                if m:
                    ops[m.group(1)] += 1
                break
        else:
            counts["other"] += 1
            print("other:", case, why[:120], file=sys.stderr)
    for name, _ in CATEGORIES + [("other", "")]:
        if counts[name]:
            print(f"| {name} | {counts[name]} |")
    print("| total | %d |" % sum(counts.values()))
    print("unimported ops:",
          ", ".join(f"`{op}` {n}" for op, n in ops.most_common()))


if __name__ == "__main__":
    main()
