"""Checks an `llmc train --trace` file (docs/trainer.md, "Breakdown and
trace"): it parses; it has one complete slice per launch of the plan
(otherData.launches), each on the thread of its phase (tid 1 forward,
2 backward, 3 optimizer) with the phase as its category, named, with the
ops it covers (args.origin) and its plan index, in plan order without
overlap; every phase of a training step is there; the launch slices lie
inside the host's replay slice; the host's slices (thread 0) cover the
step but at most --max-unattributed of it (a fraction, default 0.01), and
so does the breakdown, whose parts add up to the step. Prints one summary
line."""
import json
import sys

path = sys.argv[1]
limit = float(sys.argv[sys.argv.index("--max-unattributed") + 1]) \
    if "--max-unattributed" in sys.argv else 0.01
trace = json.load(open(path))
other = trace["otherData"]
step_ms = other["step_ms"]
launches = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["tid"] != 0]
host = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["tid"] == 0]
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
replay = [e for e in host if e["cat"] == "replay"]
if len(replay) != 1:
    fail("%d replay slices on the host thread" % len(replay))
r0, r1 = replay[0]["ts"], replay[0]["ts"] + replay[0]["dur"]
for e in launches:
    if e["ts"] < r0 - 1e-3 or e["ts"] + e["dur"] > r1 + 1e-3:
        fail("step %d [%.3f, %.3f] us is outside the replay [%.3f, %.3f]"
             % (e["args"]["step"], e["ts"], e["ts"] + e["dur"], r0, r1))
# The host's slices: what of the step none of them covers.
covered, reach = 0.0, 0.0
for e in sorted(host, key=lambda e: e["ts"]):
    a, b = max(e["ts"], reach), min(e["ts"] + e["dur"], 1000.0 * step_ms)
    if b > a:
        covered += b - a
    reach = max(reach, b)
uncovered = 1000.0 * step_ms - covered
if uncovered > limit * 1000.0 * step_ms:
    fail("the host's slices leave %.1f us of the %.1f us step uncovered, more than %.2f%%"
         % (uncovered, 1000.0 * step_ms, 100 * limit))
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
print("unattributed %.3f%% of %.3f ms; host slices cover all but %.3f%%"
      % (100 * share, step_ms, 100 * uncovered / (1000.0 * step_ms)))
