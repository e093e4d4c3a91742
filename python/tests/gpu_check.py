#!/usr/bin/env python3
"""The Python binding on a GPU, with PyTorch (run by hand on the GPU machine;
docs/jit-api.md gives the command). Checks, on the tiny GPT (4 x 64):

  1. CUDA tensors by pointer give the loss host arrays give, and the CPU
     reference evaluator's within 1e-4 (4 steps);
  2. the race: tensors written on a PyTorch side stream just before step()
     (called under that stream) give the loss of the same batch after a
     synchronize; and __cuda_array_interface__ objects work the same way;
  3. no hidden synchronization: a 100 ms kernel on an unrelated stream
     does not delay step();
  4. per-call overhead: (time of 200 back-to-back step(idx, tgt) calls,
     each returning its loss) - 200 x the step's GPU time (events around
     200 steps queued behind a sleep kernel on the stream the graph runs
     on), median, p10 and p90 of 11 repeats; a breakdown; the time per
     step of queued steps (wait=False);
  5. state_dict round trip with torch CUDA tensors.
Prints one line per check and exits non-zero on a failed one.
"""
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import llmc  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.environ.get("LLMC_TEST_MODELS", os.path.join(ROOT, "test",
                                                        "models"))
TINY = os.path.join(MODEL, "tiny_gpt_dynamo_loss_dyn.onnx")
B, T, V = 4, 64, 512
failures = []


def check(ok, what):
    print("%s %s" % ("ok  " if ok else "FAIL", what), flush=True)
    if not ok:
        failures.append(what)


def compile_step(device="cuda"):
    return llmc.compile(TINY, batch=B, seq=T, device=device)


def batch(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, V, (B, T), generator=g),
            torch.randint(0, V, (B, T), generator=g))


def spin(seconds):
    """Waits without sleeping: after a sleep the CPU is cold and every piece
    reads several times slower than in a loop."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def busy_gpu(ms):
    """Queues ms of GPU sleep on the current stream, so that the host can
    queue work behind it with the GPU out of the way."""
    torch.cuda._sleep(int(ms * 1.5e6))  # cycles at >= 1.5 GHz


def gpu_us_per_step(step, xg, yg, n):
    """The GPU time of one step: n steps queued back to back behind a sleep
    (so that the GPU never waits for the host), timed by events on the
    stream the graph runs on (the caller's)."""
    torch.cuda.synchronize()
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    busy_gpu(20 + n * 0.05)
    e0.record()
    for _ in range(n):
        step(xg, yg, lr=1e-4, wait=False)
    e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1) * 1e3 / n


def overhead(step, xg, yg, n=200, repeats=11):
    """Per-call overhead = (time of n back-to-back step() calls, each
    returning its loss) - n x the step's GPU time: median, p10 and p90 of
    `repeats`."""
    results = []
    for _ in range(repeats):
        gpu_us = gpu_us_per_step(step, xg, yg, n)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            step(xg, yg, lr=1e-4)
        wall_us = (time.perf_counter() - t0) * 1e6 / n
        results.append((wall_us - gpu_us, wall_us, gpu_us))
    results.sort()
    over, wall_us, gpu_us = results[len(results) // 2]
    p10 = results[(len(results) - 1) // 10][0]
    p90 = results[len(results) - 1 - (len(results) - 1) // 10][0]
    graph_ms = step.last_step_ms
    print("     per call: %.1f us for step(idx, tgt) back to back, GPU %.1f "
          "us per step (events around %d queued steps; the graph's own "
          "events: %.1f us); overhead %.1f us (median of %d; p10 %.1f, "
          "p90 %.1f: %s)" % (
              wall_us, gpu_us, n, graph_ms * 1e3, over, repeats, p10, p90,
              ", ".join("%.1f" % r[0] for r in results)))
    check(over <= 30, "per-call overhead %.1f us <= 30 us" % over)

    # Where it goes: Python's argument handling (a tight loop), queueing a
    # step while the GPU is busy (host time only: arguments, the C ABI and
    # the driver calls), queueing one on an idle GPU just after a
    # synchronize (a colder path), and reading a finished step's loss. The
    # rest of the overhead is the GPU's launch and completion latency.
    fills, queued, after_sync, reads = [], [], [], []
    for _ in range(500):
        t0 = time.perf_counter()
        step._fill((xg, yg))
        fills.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    busy_gpu(30)
    for _ in range(200):
        t0 = time.perf_counter()
        step(xg, yg, lr=1e-4, wait=False)
        queued.append((time.perf_counter() - t0) * 1e6)
    for _ in range(200):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step(xg, yg, lr=1e-4, wait=False)
        after_sync.append((time.perf_counter() - t0) * 1e6)
        spin(0.002)  # the step has finished
        t0 = time.perf_counter()
        step.last_loss
        reads.append((time.perf_counter() - t0) * 1e6)
    med = statistics.median
    print("     breakdown (medians): Python argument handling %.1f us; "
          "queueing a step behind a busy GPU %.1f us (including the "
          "former), on an idle GPU after a synchronize %.1f us; reading a "
          "finished step's loss %.1f us; the rest is the GPU's launch and "
          "completion latency" % (med(fills), med(queued), med(after_sync),
                                  med(reads)))
    # Queued: step(..., wait=False) returns once the step is queued, so
    # back-to-back steps cost max(host time, GPU time) each.
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        step(xg, yg, lr=1e-4, wait=False)
    last = step.last_loss
    per = (time.perf_counter() - t0) / n * 1e6
    print("     queued: %.1f us per step over %d steps (GPU %.1f us per "
          "step); last loss %.4f" % (per, n, gpu_us, last))
    check(np.isfinite(last), "queued steps give a finite loss")


def main():
    assert torch.cuda.is_available(), "needs a CUDA GPU"
    torch.cuda.init()

    # 1. devices and the reference
    gpu, host, cpu = compile_step(), compile_step(), compile_step("cpu")
    r = gpu.report
    print("     compile: %.3f s (CUDA context %.3f s, cache %s); phases: %s"
          % (r["compile_seconds"], r["context_seconds"], r["cache"],
             ", ".join("%s %.3f s" % kv for kv in r["phases"].items())))
    worst = 0.0
    for s in range(4):
        x, y = batch(s)
        lg = gpu(x.cuda(), y.cuda(), lr=1e-3)
        lh = host(x.numpy(), y.numpy(), lr=1e-3)
        lc = cpu(x, y, lr=1e-3)
        check(lg == lh, "step %d: CUDA tensors %.7f == host arrays %.7f"
              % (s, lg, lh))
        worst = max(worst, abs(lg - lc) / abs(lc))
    check(worst < 1e-4, "GPU vs reference evaluator: worst relative loss "
          "error %.2e over 4 steps" % worst)

    # 2. the race test
    ref, raced = compile_step(), compile_step()
    x, y = batch(10)
    xg, yg = x.cuda(), y.cuda()
    want = ref(xg, yg, lr=1e-3)
    xi, yi = torch.zeros_like(xg), torch.zeros_like(yg)
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        xi.zero_()
        yi.zero_()
        torch.cuda._sleep(int(100e6))
        xi.copy_(xg)
        yi.copy_(yg)
        got = raced(xi, yi, lr=1e-3)
    check(got == want, "side-stream race: loss %.7f == %.7f after a "
          "synchronize" % (got, want))

    class CudaArray:
        def __init__(self, t):
            self.t = t
            self.__cuda_array_interface__ = t.__cuda_array_interface__

    ref2, cai = compile_step(), compile_step()
    want = ref2(xg, yg, lr=1e-3)
    got = cai(CudaArray(xg), CudaArray(yg), lr=1e-3)
    check(got == want, "__cuda_array_interface__ inputs: %.7f == %.7f"
          % (got, want))

    # 3. no hidden synchronization
    step = compile_step()
    for _ in range(20):
        step(xg, yg, lr=1e-4)
    torch.cuda.synchronize()
    other = torch.cuda.Stream()
    with torch.cuda.stream(other):
        torch.cuda._sleep(int(200e6))
    t0 = time.perf_counter()
    step(xg, yg, lr=1e-4)
    dt = time.perf_counter() - t0
    still_busy = not other.query()
    torch.cuda.synchronize()
    check(dt < 0.01 and still_busy,
          "step() beside a busy unrelated stream took %.2f ms (that stream "
          "still busy after it: %s)" % (dt * 1e3, still_busy))

    # 4. per-call overhead on device inputs
    overhead(step, xg, yg)

    # 5. state_dict round trip with torch CUDA tensors
    sd = step.state_dict(tensors="torch")
    fresh = compile_step()
    fresh.load_state_dict({k: v.cuda() for k, v in sd.items()})
    a, b = step.evaluate(xg, yg), fresh.evaluate(xg, yg)
    check(a == b, "state_dict through CUDA tensors: %.7f == %.7f" % (a, b))
    back = fresh.state_dict()
    check(all(np.array_equal(back[k], sd[k].numpy()) for k in sd),
          "parameters read back equal what was loaded")

    print("%d checks failed" % len(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
