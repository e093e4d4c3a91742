"""Writes an llm.c .bin token shard, possibly a damaged one, for the tests of
what `llmc train` says about its data (docs/token-format.md).

  token_shard.py OUT --tokens N [--bad-token ID --at POS]
                 [--magic M] [--count C]

--tokens N gives N tokens cycling through 0..255; --bad-token puts ID at POS;
--magic and --count override the header (the count still defaults to N)."""
import argparse
import struct

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--tokens", type=int, required=True)
p.add_argument("--bad-token", type=int)
p.add_argument("--at", type=int, default=0)
p.add_argument("--magic", type=int, default=20240520)
p.add_argument("--count", type=int)
a = p.parse_args()

tokens = [i % 256 for i in range(a.tokens)]
if a.bad_token is not None:
    tokens[a.at] = a.bad_token
count = a.tokens if a.count is None else a.count
header = [a.magic, 1, count] + [0] * 253
with open(a.out, "wb") as f:
    f.write(struct.pack("<256i", *header))
    f.write(struct.pack("<%dH" % len(tokens), *tokens))
