"""Prints a top-level field of a bundle's JSON header (docs/runtime.md, "The
bundle file"): bundle_field.py BUNDLE FIELD."""
import json
import struct
import sys

data = open(sys.argv[1], "rb").read()
(size,) = struct.unpack("<Q", data[16:24])
print(json.loads(data[64:64 + size]).get(sys.argv[2]))
