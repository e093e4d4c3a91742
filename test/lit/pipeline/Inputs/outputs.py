"""Helpers for the raising pipeline tests (run by lit as %python).

  outputs.py inputs MODEL.ref.json          print the batch of a reference file
                                            in the JSON form `llmc run --inputs` reads
  outputs.py compare A.json B.json --rtol R exit 1 unless every output of A and B
                                            (`llmc run -o` files) agrees within R,
                                            relative to the output's largest
                                            magnitude: the evaluator rounds every
                                            op's result to f32, so a decomposed
                                            form carries a few f32 roundings
                                            (relative to the values it combines)
                                            that the composite op does not
  outputs.py reference OUT.json MODEL.ref.json --rtol R
                                            exit 1 unless OUT's loss is within R
                                            of PyTorch's loss in the reference file
"""
import json
import math
import sys


def flatten(values):
    if isinstance(values, list):
        for v in values:
            yield from flatten(v)
    else:
        yield float(values)


def close(a, b, rtol, scale=0.0):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= rtol * max(abs(a), abs(b), scale, 1e-30)


def compare(a_path, b_path, rtol):
    a, b = json.load(open(a_path)), json.load(open(b_path))
    if sorted(a) != sorted(b):
        print(f"outputs differ: {sorted(a)} vs {sorted(b)}")
        return 1
    worst = 0.0
    for name in a:
        if a[name]["shape"] != b[name]["shape"]:
            print(f"{name}: shapes {a[name]['shape']} vs {b[name]['shape']}")
            return 1
        xs = list(flatten(a[name]["values"]))
        ys = list(flatten(b[name]["values"]))
        scale = max((abs(x) for x in xs if math.isfinite(x)), default=0.0)
        for x, y in zip(xs, ys):
            if not close(x, y, rtol, scale):
                print(f"{name}: {x!r} vs {y!r} differ by more than {rtol} "
                      f"relative to max(|x|, |y|, {scale!r})")
                return 1
            if x != y:
                worst = max(worst, abs(x - y) / max(abs(x), abs(y), scale))
    print(f"outputs agree: max relative difference {worst:.3g} <= {rtol}")
    return 0


def reference(out_path, ref_path, rtol):
    loss = json.load(open(out_path))["loss"]["values"]
    expected = json.load(open(ref_path))["loss"]
    if not close(loss, expected, rtol):
        print(f"loss {loss!r} differs from PyTorch's {expected!r} by more than rtol {rtol}")
        return 1
    print(f"loss matches PyTorch within {rtol}")
    return 0


def main(argv):
    if argv[1] == "inputs":
        print(json.dumps(json.load(open(argv[2]))["inputs"]))
        return 0
    rtol = float(argv[argv.index("--rtol") + 1])
    if argv[1] == "compare":
        return compare(argv[2], argv[3], rtol)
    if argv[1] == "reference":
        return reference(argv[2], argv[3], rtol)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
