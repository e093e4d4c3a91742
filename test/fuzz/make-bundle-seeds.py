#!/usr/bin/env python3
"""Writes small bundle-fuzzer seeds from a real bundle (llmc compile output).

    make-bundle-seeds.py BUNDLE OUT_DIR NAME

A compiled bundle is mostly cubins and kernel sources, which the reader
stores but does not parse. This keeps the plan exactly as the compiler wrote
it and shrinks those: sources become one comment line and each cubin a
16-byte ELF stub, with the blob table's offsets and checksums recomputed.
It writes two seeds in the forms BundleFuzzer.cpp takes:
    NAME.llmc     a complete bundle file (prefix, header, blobs)
    NAME.wrapped  the JSON header, a NUL byte and the blob section
"""
import json
import struct
import sys

MASK = (1 << 64) - 1
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3


def checksum64(data):
    """runtime/Hash.h checksum64."""
    h = FNV_OFFSET ^ len(data)
    words = len(data) // 8
    for i in range(words):
        (word,) = struct.unpack_from("<Q", data, 8 * i)
        h = ((h ^ word) * FNV_PRIME) & MASK
        h ^= h >> 29
    tail = int.from_bytes(data[8 * words:], "little")
    return (((h ^ tail) * FNV_PRIME) & MASK) ^ (h >> 31)


def align(x, a=256):
    return (x + a - 1) // a * a


def main():
    src, out_dir, name = sys.argv[1:4]
    data = open(src, "rb").read()
    header_bytes, blob_bytes = struct.unpack_from("<QQ", data, 16)
    header = json.loads(data[64:64 + header_bytes])
    base = align(64 + header_bytes)
    blobs = []
    for entry in header["blobs"]:
        start = base + entry["offset"]
        blobs.append(data[start:start + entry["size"]])
    for kernel in header["kernels"]:
        kernel["source"] = "// " + kernel["name"]
        if "cubin" in kernel:
            blobs[kernel["cubin"]] = b"\x7fELF" + bytes(12)
    table, section = [], b""
    for blob in blobs:
        section += bytes(align(len(section)) - len(section))
        table.append({"offset": len(section), "size": len(blob),
                      "checksum": "%016x" % checksum64(blob)})
        section += blob
    header["blobs"] = table
    text = json.dumps(header, separators=(",", ":")).encode()

    prefix = b"LLMCBNDL" + struct.pack("<IIQQQ", 1, 0, len(text),
                                       len(section), checksum64(text))
    prefix += bytes(64 - len(prefix))
    bundle = prefix + text
    bundle += bytes(align(len(bundle)) - len(bundle)) + section
    open(f"{out_dir}/{name}.llmc", "wb").write(bundle)
    open(f"{out_dir}/{name}.wrapped", "wb").write(text + b"\0" + section)


if __name__ == "__main__":
    main()
