"""Reads an llmc checkpoint folder with nothing but the standard library and
prints what it holds: the manifest's counters, each tensor's file, name,
dtype and shape, and whether every tensor matches the manifest's checksum
(runtime/Hash.h's checksum64, recomputed here independently)."""
import json
import os
import struct
import sys

M64 = (1 << 64) - 1
OFFSET, PRIME = 0xcbf29ce484222325, 0x100000001b3


def checksum64(data):
    h = OFFSET ^ len(data)
    words = len(data) // 8
    for (w,) in struct.iter_unpack("<Q", data[:8 * words]):
        h = ((h ^ w) * PRIME) & M64
        h ^= h >> 29
    tail = int.from_bytes(data[8 * words:], "little")
    return (((h ^ tail) * PRIME) & M64) ^ (h >> 31)


def read_safetensors(path):
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    body = blob[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        out[name] = (e["dtype"], e["shape"], body[b:end])
    return out


folder = sys.argv[1]
m = json.load(open(os.path.join(folder, "manifest.json")))
print("manifest: step %d, optimizer_step %d, data_position %d" %
      (m["step"], m["optimizer_step"], m["data_position"]))
files = {f: read_safetensors(os.path.join(folder, f))
         for f in ("model.safetensors", "optimizer.safetensors")}
bad = []
for t in m["tensors"]:
    dtype, shape, data = files[t["file"]][t["name"]]
    print("%s: %s %s [%s]" % (t["file"], t["name"], dtype,
                              ", ".join(str(d) for d in shape)))
    if "%016x" % checksum64(data) != t["checksum"]:
        bad.append(t["name"])
print("checksums match" if not bad else "checksum mismatch: %s" % bad)
