"""The read-ahead hides a slow reader (docs/trainer.md, "Data"): runs
`llmc train ARGS --log-json` without a slow reader, then with every read
slowed to about half the step time (--debug-slow-reader), and compares the
median time per step, the step's ms plus what the loop waited for the batch
(`data_ms`): it must not change by more than --tolerance (default 5%). A
control run with reads slower than the step shows that the measure sees a
reader that cannot keep up. Prints one line.

usage: prefetch_check.py LLMC WORKDIR -- TRAIN-ARGS..."""
import json
import os
import statistics
import subprocess
import sys

llmc, work = sys.argv[1], sys.argv[2]
rest = sys.argv[sys.argv.index("--") + 1:]
tolerance = 0.05


def run(name, delay_ms):
    log = os.path.join(work, name + ".jsonl")
    cmd = [llmc, "train"] + rest + ["--log-json", log, "--no-progress"]
    if delay_ms:
        cmd += ["--debug-slow-reader", "%.3f" % delay_ms]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    rows = [json.loads(l) for l in open(log) if '"ms"' in l]
    rows = rows[2:]  # the first steps capture the graph and warm up
    total = statistics.median(r["ms"] + r["data_ms"] for r in rows)
    data = statistics.median(r["data_ms"] for r in rows)
    return total, data


os.makedirs(work, exist_ok=True)
base, _ = run("base", 0)
delay = 0.5 * base
slow, slow_data = run("slow", delay)
change = (slow - base) / base
if abs(change) > tolerance:
    sys.exit("FAIL: %.3f ms/step without a slow reader, %.3f ms with %.3f ms reads "
             "(%+.1f%%, data wait %.3f ms): the read-ahead does not hide the reader"
             % (base, slow, delay, 100 * change, slow_data))
# Control: reads of twice the step time cannot be hidden; the loop waits.
control, control_data = run("control", 2 * base)
if control_data < 0.5 * base:
    sys.exit("FAIL: the control run with %.3f ms reads waited only %.3f ms for "
             "its batches: the measure does not see the reader"
             % (2 * base, control_data))
print("prefetch ok: %.3f ms/step, %.3f ms with reads of %.3f ms (%+.1f%%); "
      "reads of twice the step wait %.1f ms"
      % (base, slow, delay, 100 * change, control_data))
