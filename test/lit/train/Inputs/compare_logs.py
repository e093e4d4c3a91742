"""Compares the loss and gradient norm of two --log-json logs step by step.

compare_logs.py FULL OTHER [--min-steps N]: fails unless every step of OTHER
has FULL's values bit for bit (both printed with 17 digits) and OTHER holds
at least N steps (default 1): a resumed or re-laid-out run against an
uninterrupted one. Where fp16's loss scaler logs them, the loss scale and
the scaler-skipped count are compared too.

compare_logs.py A B --rtol R: fails unless both logs hold the same steps and
every value of A is within R (relative) of B's: runs that differ only in
summation order (gradient accumulation)."""
import json
import sys


def steps(path):
    out = {}
    for line in open(path):
        j = json.loads(line)
        if "loss" in j:
            out[j["step"]] = (j["loss"], j["grad_norm"]) + tuple(
                j[k] for k in ("loss_scale", "scaler_skipped") if k in j)
    return out


def option(name):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


def equal(full, other):
    need = int(option("--min-steps") or 1)
    if len(other) < need:
        sys.exit("FAIL: %d resumed steps, expected at least %d" % (len(other), need))
    for step, got in sorted(other.items()):
        if full.get(step) != got:
            sys.exit("FAIL: step %d: resumed %s, uninterrupted %s" % (step, got, full.get(step)))
    print("steps %s equal bit for bit" % sorted(other))


def close(a, b, rtol):
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


first, second = steps(sys.argv[1]), steps(sys.argv[2])
if option("--rtol") is not None:
    close(first, second, float(option("--rtol")))
else:
    equal(first, second)
