"""Checks an `llmc train --trace` file (docs/trainer.md, "Breakdown and
trace"): it parses; it has one complete slice per launch of the plan
(otherData.launches), each on the thread of its phase (tid 1 forward,
2 backward, 3 optimizer) with the phase as its category, named, with the
ops it covers (args.origin) and its plan index, in plan order without
overlap; every phase of a training step is there; the slices lie inside
the step; and the breakdown leaves at most --max-unattributed (a fraction,
default 0.01) of the step unattributed. Prints one summary line."""
import json
import sys

path = sys.argv[1]
limit = float(sys.argv[sys.argv.index("--max-unattributed") + 1]) \
    if "--max-unattributed" in sys.argv else 0.01
trace = json.load(open(path))
other = trace["otherData"]
step_ms = other["step_ms"]
launches = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["tid"] != 0]
phases = {1: "forward", 2: "backward", 3: "optimizer"}


def fail(msg):
    sys.exit("FAIL: %s: %s" % (path, msg))


if len(launches) != other["launches"]:
    fail("%d launch slices for %d launches" % (len(launches), other["launches"]))
launches.sort(key=lambda e: e["args"]["step"])
end = None
for i, e in enumerate(launches):
    if e["args"]["step"] != i:
        fail("slice %d is step %s" % (i, e["args"]["step"]))
    if phases.get(e["tid"]) != e["cat"]:
        fail("step %d: category %s on thread %s" % (i, e["cat"], e["tid"]))
    if not e["name"] or not e["args"].get("origin") and not e["name"].startswith("memset"):
        fail("step %d: no name or origin: %s" % (i, e))
    if e["dur"] < 0 or (end is not None and e["ts"] < end - 1e-3):
        fail("step %d starts at %.3f us, before the previous end %.3f" % (i, e["ts"], end))
    end = e["ts"] + e["dur"]
    if e["ts"] < 0 or end > 1000.0 * step_ms + 1e-3:
        fail("step %d [%.3f, %.3f] us is outside the step (%.3f ms)" % (i, e["ts"], end, step_ms))
seen = set(e["cat"] for e in launches)
if seen != set(phases.values()):
    fail("phases %s, expected all of %s" % (sorted(seen), sorted(phases.values())))
b = other["breakdown_ms"]
total = sum(b.values())
if abs(total - step_ms) > 1e-6 * max(1.0, step_ms):
    fail("the breakdown adds up to %.6f ms, the step is %.6f ms" % (total, step_ms))
share = b["unattributed"] / step_ms
if abs(share) > limit:
    fail("%.2f%% of the step unattributed (%.4f of %.4f ms), more than %.2f%%: %s"
         % (100 * share, b["unattributed"], step_ms, 100 * limit, b))
print("trace ok: %d launch slices, %s, at most %.0f%% unattributed"
      % (len(launches), " ".join(sorted(seen)), 100 * limit))
