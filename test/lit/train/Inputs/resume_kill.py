"""Kills `llmc train` with SIGKILL at random moments and resumes it in a new
process: the resumed run's loss and gradient-norm sequence must equal an
uninterrupted run's bit for bit (the JSON log prints them with 17 digits),
the newest complete checkpoint must load, and no temporary file may remain.
Then SIGTERM and SIGINT: the run finishes its step, saves, exits with
128 + signal, and resumes as well.

  resume_kill.py LLMC WORKDIR --trials N -- TRAIN ARGS...
"""
import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

llmc, work = sys.argv[1], sys.argv[2]
trials = int(sys.argv[sys.argv.index("--trials") + 1])
args = sys.argv[sys.argv.index("--") + 1:]
steps = int(args[args.index("--steps") + 1])
rng = random.Random(int(os.environ.get("LLMC_RESUME_SEED", "16")))
os.makedirs(work, exist_ok=True)


def records(path):
    """(step, loss, grad_norm) of every complete step line of a JSON log."""
    out = []
    if not os.path.exists(path):
        return out
    for line in open(path):
        try:
            j = json.loads(line)
        except ValueError:
            continue  # a line cut by the kill
        if "loss" in j:
            out.append((j["step"], j["loss"], j["grad_norm"]))
    return out


def run(ckpt, log, extra, **kw):
    cmd = [llmc, "train"] + args + ["--checkpoint-dir", ckpt, "--save-every",
                                    "1", "--keep", "2", "--log-json", log] + extra
    # lit's workers ignore SIGINT, and an ignored signal stays ignored in
    # llmc (as nohup expects): give the child the default disposition.
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(
                                signal.SIGINT, signal.SIG_DFL), **kw)


def fail(msg):
    sys.exit("FAIL: " + msg)


def resume_and_compare(ckpt, name, reference):
    complete = sorted(glob.glob(os.path.join(ckpt, "step-*", "manifest.json")))
    log = os.path.join(work, name + ".resumed.jsonl")
    extra = ["--resume", ckpt] if complete else []
    p = run(ckpt, log, extra)
    out, err = p.communicate()
    if p.returncode != 0:
        fail("%s: the resumed run failed (%d): %s" % (name, p.returncode, err))
    if complete and "resumed from" not in out and "nothing left" not in out:
        fail("%s: no 'resumed from' line:\n%s" % (name, out))
    got = records(log)
    first = got[0][0] if got else steps + 1
    if got != reference[first - 1:]:
        fail("%s: the resumed sequence differs from the uninterrupted run:\n"
             "%s\nvs\n%s" % (name, got, reference[first - 1:]))
    left = [f for f in glob.glob(os.path.join(ckpt, "**", "*"), recursive=True)
            if ".tmp." in os.path.basename(f)]
    if left:
        fail("%s: temporary files left: %s" % (name, left))
    return first


# The uninterrupted reference, and how long a run takes.
ref_ckpt = os.path.join(work, "reference")
shutil.rmtree(ref_ckpt, ignore_errors=True)
start = time.time()
p = run(ref_ckpt, os.path.join(work, "reference.jsonl"), [])
out, err = p.communicate()
duration = time.time() - start
if p.returncode != 0:
    fail("the reference run failed: " + err)
reference = records(os.path.join(work, "reference.jsonl"))
if len(reference) != steps:
    fail("the reference log has %d steps, not %d" % (len(reference), steps))

resumed_at = []
for trial in range(trials):
    ckpt = os.path.join(work, "kill%d" % trial)
    shutil.rmtree(ckpt, ignore_errors=True)
    p = run(ckpt, os.path.join(work, "kill%d.jsonl" % trial), [])
    time.sleep(rng.uniform(0.1, 0.9) * duration)
    p.send_signal(signal.SIGKILL)
    p.communicate()
    # Every complete checkpoint left must be readable: the newest is what
    # --resume loads; at most keep + 1 (a kill between save and prune).
    complete = glob.glob(os.path.join(ckpt, "step-*", "manifest.json"))
    if len(complete) > 3:
        fail("kill%d: %d complete checkpoints with --keep 2" % (trial, len(complete)))
    for m in complete:
        json.load(open(m))
    resumed_at.append(resume_and_compare(ckpt, "kill%d" % trial, reference))

for sig in (signal.SIGTERM, signal.SIGINT):
    name = signal.Signals(sig).name
    ckpt = os.path.join(work, name)
    shutil.rmtree(ckpt, ignore_errors=True)
    p = run(ckpt, os.path.join(work, name + ".jsonl"), [])
    # After the first step line, so that the handler is in place.
    while True:
        line = p.stdout.readline()
        if not line or line.startswith("step 2 "):
            break
    p.send_signal(sig)
    out, err = p.communicate()
    if p.returncode != 128 + sig:
        fail("%s: exit status %d, expected %d; stderr: %s" % (name, p.returncode, 128 + sig, err))
    if "stopped by " + name not in out or "resume with --resume" not in out:
        fail("%s: no stop message:\n%s" % (name, out))
    resume_and_compare(ckpt, name, reference)
    print("%s: stopped cleanly, resumed bit for bit" % name)

print("%d kill -9 trials resumed bit for bit at steps %s" % (trials, resumed_at))
