"""Checks an `llmc train --precision fp16 --log-json` log against
torch.cuda.amp.GradScaler's rule (docs/precision.md), replayed from the
initial scale: a step overflows exactly when its grad norm is not finite
(null in JSON); then the scale halves and the skipped count goes up by one;
after --interval clean steps in a row it doubles. Every loss is finite.
Prints the number of overflowing and clean steps.

usage: loss_scale_log.py LOG.jsonl --init S --interval N [--min-overflows K]
       [--min-clean K]"""
import json
import math
import sys


def arg(name, default=None):
    if name in sys.argv:
        return float(sys.argv[sys.argv.index(name) + 1])
    if default is None:
        sys.exit("missing " + name)
    return default


steps = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
scale, interval = arg("--init"), int(arg("--interval"))
tracker = skipped = overflows = clean = 0
for s in steps:
    if s["loss"] is None or not math.isfinite(s["loss"]):
        sys.exit("step %d: the loss is not finite" % s["step"])
    overflow = s["grad_norm"] is None
    if overflow != s["overflow"]:
        sys.exit("step %d: overflow is %s but the grad norm is %s"
                 % (s["step"], s["overflow"], s["grad_norm"]))
    if overflow:
        scale *= 0.5
        tracker = 0
        skipped += 1
        overflows += 1
    else:
        clean += 1
        tracker += 1
        if tracker == interval:
            scale *= 2.0
            tracker = 0
    if s["loss_scale"] != scale or s["scaler_skipped"] != skipped:
        sys.exit("step %d: scale %s and skipped %s, GradScaler's rule says "
                 "%s and %s" % (s["step"], s["loss_scale"],
                                s["scaler_skipped"], scale, skipped))
print("%d steps: %d overflowed, %d clean, final scale %g"
      % (len(steps), overflows, clean, scale))
if overflows < arg("--min-overflows", 0):
    sys.exit("only %d steps overflowed" % overflows)
if clean < arg("--min-clean", 0):
    sys.exit("only %d clean steps" % clean)
