"""Fails unless the mean training loss of the last 10 steps of an `llmc
train` log is at least --min-drop below the first step's loss, and the last
validation loss is below the first."""
import re
import sys

log = open(sys.argv[1]).read()
drop = float(sys.argv[sys.argv.index("--min-drop") + 1])
train = [float(m) for m in re.findall(r"^step \d+ \| loss ([0-9.]+)", log, re.M)]
val = [float(m) for m in re.findall(r"^val step \d+ \| loss ([0-9.]+)", log, re.M)]
if len(train) < 11:
    sys.exit("too few steps in the log: %d" % len(train))
last = sum(train[-10:]) / 10
print("first %.4f, mean of last 10 %.4f, val %s" % (train[0], last, val))
if not train[0] - last >= drop:
    sys.exit("loss did not go down by %.2f: first %.4f, last-10 mean %.4f" % (drop, train[0], last))
if len(val) >= 2 and not val[-1] < val[0]:
    sys.exit("validation loss did not go down: %s" % val)
