"""Prints a bundle buffer's role, dtype and initial values (docs/runtime.md,
"The bundle file"): bundle_buffer.py BUNDLE NAME. A buffer without initial
data prints `init none` (the arena starts zeroed)."""
import json
import struct
import sys

data = open(sys.argv[1], "rb").read()
(size,) = struct.unpack("<Q", data[16:24])
header = json.loads(data[64:64 + size])
blobs_at = (64 + size + 255) // 256 * 256
formats = {"f32": "f", "i64": "q", "i32": "i"}
found = [b for b in header["buffers"] if b["name"] == sys.argv[2]]
if not found:
    print("no buffer " + sys.argv[2])
for b in found:
    line = "%s %s %s" % (b["name"], b["role"], b["dtype"])
    if "init" not in b:
        print(line + " init none")
        continue
    blob = header["blobs"][b["init"]]
    raw = data[blobs_at + blob["offset"]:blobs_at + blob["offset"] + blob["size"]]
    fmt = formats[b["dtype"]]
    values = struct.unpack("<%d%s" % (len(raw) // struct.calcsize(fmt), fmt), raw)
    print(line + " init " + " ".join("%g" % v for v in values))
