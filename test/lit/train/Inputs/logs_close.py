"""Fails unless every step of two --log-json logs has the same loss and
gradient norm within --rtol (relative), and both logs hold the same steps."""
import json
import sys


def steps(path):
    out = {}
    for line in open(path):
        j = json.loads(line)
        if "loss" in j:
            out[j["step"]] = (j["loss"], j["grad_norm"])
    return out


a, b = steps(sys.argv[1]), steps(sys.argv[2])
rtol = float(sys.argv[sys.argv.index("--rtol") + 1])
if not a or sorted(a) != sorted(b):
    sys.exit("FAIL: steps %s and %s differ" % (sorted(a), sorted(b)))
worst = 0.0
for step in sorted(a):
    for x, y in zip(a[step], b[step]):
        err = abs(x - y) / max(abs(y), 1e-30)
        worst = max(worst, err)
        if err > rtol:
            sys.exit("FAIL: step %d: %r vs %r (relative %.3g > %g)" % (step, x, y, err, rtol))
print("%d steps within %g (worst %.3g)" % (len(a), rtol, worst))
