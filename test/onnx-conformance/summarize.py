#!/usr/bin/env python3
"""Groups refused.txt by reason: the table of docs/onnx-conformance.md.

usage: summarize.py [refused.txt] [--check DOC]

With --check, exits non-zero unless DOC holds exactly this table (the rows
after its `| reason | cases |` header) and this list of unimported ops, so
that the docs say what the checked-in list says.
"""
import collections
import re
import sys

# (category, pattern on the message), first match wins.
CATEGORIES = [
    ("opset outside 1-25", r"uses ONNX opset \d+"),
    ("op version older than llmc reads (an op test carries the opset of its "
     "op's last change)", r"; llmc imports \w+ from opset"),
    ("no opset of the default domain (`simple/` string and sequence models)",
     r"imports no opset of the default"),
    ("element type llmc tensors do not hold (u8, i8, u16, i16, u32, u64, "
     "string)",
     r"element type|test data of type|casts to"),
    ("sequence, map or optional graph input or output", r"is not a tensor"),
    ("class weights of a loss", r"class weights"),
    ("LayerNormalization's Mean/InvStdDev read",
     r"\(LayerNormalization\): output"),
    ("Dropout's mask read, or training-mode Dropout", r"Dropout"),
    ("op evaluated on import-time constants only (`ReduceProd`, `Mod`, "
     "`Floor`, `Ceil`), integer `Pow`",
     r"only on values known at import time|on float tensors only"),
    ("op llmc does not import", r"llmc does not import ONNX op"),
]

# What the cases that match no category are today; the docs table names them.
OTHER = ("other (`Pad` reflect/edge, negative run-time `Slice` steps, "
         "`GatherND` batch_dims, the preview training domain's `Gradient`, "
         "a sequence of unknown length)")


def summarize(path):
    """The table rows, the unimported-ops line and the uncategorized cases
    of refused list `path`."""
    counts = collections.Counter()
    others = []
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
            counts[OTHER] += 1
            others.append(f"other: {case} {why[:120]}")
    rows = [f"| {name} | {counts[name]} |"
            for name, _ in CATEGORIES + [(OTHER, "")] if counts[name]]
    rows.append("| total | %d |" % sum(counts.values()))
    return rows, "Ops not imported, by cases: " + ", ".join(
        f"`{op}` {n}" for op, n in ops.most_common()) + ".", others


def check(rows, ops, doc):
    lines = open(doc).read().split("\n")
    header = lines.index("| reason | cases |")
    documented = []
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            break
        documented.append(line)
    ok = True
    if documented != rows:
        print(f"{doc}: the refused-case table differs from the list's; "
              "replace it with:", *rows, sep="\n", file=sys.stderr)
        ok = False
    # The ops line may wrap in the docs.
    text = " ".join(lines)
    if " ".join(ops.split()) not in " ".join(text.split()):
        print(f"{doc}: the unimported ops differ from the list's; write:",
              ops, sep="\n", file=sys.stderr)
        ok = False
    return ok


def main():
    args = sys.argv[1:]
    doc = None
    if "--check" in args:
        i = args.index("--check")
        doc = args[i + 1]
        del args[i:i + 2]
    rows, ops, others = summarize(args[0] if args else "refused.txt")
    if doc:
        sys.exit(0 if check(rows, ops, doc) else 1)
    print(*others, sep="\n", file=sys.stderr)
    print(*rows, sep="\n")
    print(ops)


if __name__ == "__main__":
    main()
