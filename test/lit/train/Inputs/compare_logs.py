"""Fails unless every step of the second --log-json log has the first log's
loss and gradient norm, bit for bit (both printed with 17 digits), and the
same loss scale and scaler-skipped count where fp16's loss scaler logs them,
and the second log holds at least --min-steps steps."""
import json
import sys


def steps(path):
    out = {}
    for line in open(path):
        j = json.loads(line)
        if "loss" in j:
            out[j["step"]] = (j["loss"], j["grad_norm"], j.get("loss_scale"),
                              j.get("scaler_skipped"))
    return out


full, resumed = steps(sys.argv[1]), steps(sys.argv[2])
need = int(sys.argv[sys.argv.index("--min-steps") + 1]) if "--min-steps" in sys.argv else 1
if len(resumed) < need:
    sys.exit("FAIL: %d resumed steps, expected at least %d" % (len(resumed), need))
for step, got in sorted(resumed.items()):
    if full.get(step) != got:
        sys.exit("FAIL: step %d: resumed %s, uninterrupted %s" % (step, got, full.get(step)))
print("steps %s equal bit for bit" % sorted(resumed))
