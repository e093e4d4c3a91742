"""Writes a broken copy of a reference file: by default its loss and third
AdamW loss are off by 1%, so that verify must report exactly those two checks
as failed; with --truncate its batch is cut to half the sequence."""
import json
import sys

ref = json.load(open(sys.argv[1]))
if "--truncate" in sys.argv:
    for name, rows in ref["inputs"].items():
        ref["inputs"][name] = [row[: len(row) // 2] for row in rows]
else:
    ref["loss"] *= 1.01
    ref["adamw_losses"][2] *= 1.01
json.dump(ref, open(sys.argv[2], "w"))
