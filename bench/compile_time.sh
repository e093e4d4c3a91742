#!/usr/bin/env bash
# Compile time of GPT-2 124M bf16 (issues 11, 17 and 19): cold and warm
# `llmc compile` in fresh processes, and the in-process time to a ready step
# (warm compile + executor load) with and without CUDA context creation.
#
# usage (from the repository root, on the GPU machine):
#   bench/compile_time.sh [BUILD_DIR]      # default: build
# env: MODEL=path.onnx to time another ONNX model (default: GPT-2 124M from
#      bench/make_gpt2_onnx.py, written to /tmp/llmc-gpt2-124m.onnx once).
set -u
BUILD=${1:-build}
LLMC=$BUILD/bin/llmc
TESTS=$BUILD/test/gpu/train/llmc-train-gpu-tests
[ -x "$TESTS" ] || TESTS=$BUILD/bin/llmc-train-gpu-tests
MODEL=${MODEL:-/tmp/llmc-gpt2-124m.onnx}
OUT=${OUT:-/tmp/llmc-compile-time}
mkdir -p "$OUT"
[ -f "$MODEL" ] || python3 bench/make_gpt2_onnx.py "$MODEL" || exit 1
CACHE=$(mktemp -d /tmp/llmc-compile-time-cache.XXXXXX)
nproc_=$(nproc)
echo "model $MODEL ($(du -h "$MODEL" | cut -f1)), $nproc_ cores, $(nvidia-smi -L 2>/dev/null | head -1)"
cat "$MODEL" > /dev/null # in the page cache, as a second compile finds it

# run NAME ARGS...: one `llmc compile` process, its wall time and report.
run() {
  local name=$1
  shift
  local t0=$EPOCHREALTIME
  LLMC_CACHE_DIR=$CACHE "$LLMC" compile "$MODEL" --precision bf16 -o "$OUT/gpt2.llmc" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  local t1=$EPOCHREALTIME
  printf '%-34s rc %d  wall %6.2f s | %s | %s\n' "$name" "$rc" \
    "$(awk "BEGIN { print $t1 - $t0 }")" \
    "$(grep -E '^kernels' "$OUT/$name.log" | sed 's/  */ /g')" \
    "$(grep -E '^(compile (time|cache)|bundle )' "$OUT/$name.log" | sed 's/  */ /g' | tr '\n' ' ')"
}

run "cold (empty caches, no CUDA)" --arch sm_90
run "warm (no CUDA)" --arch sm_90
run "warm (arch from the GPU: cuInit)"
run "kernel cache only (no CUDA)" --arch sm_90 --no-compile-cache
rm -rf "$CACHE"

# The JIT API in fresh processes: a cold compile, then a second process
# ready through the compile cache, with and without the CUDA context.
JIT=$BUILD/test/gpu/jit/llmc-jit-gpu-tests
[ -x "$JIT" ] || JIT=$BUILD/bin/llmc-jit-gpu-tests
LLMC_BENCH_ONNX=$MODEL "$JIT" --gtest_filter='JitGpu.WarmStartInAFreshProcess' > "$OUT/jit-warm.log" 2>&1
jit_rc=$?
grep -E '^\[ warm|FAILED|Failure|Expected|Which is|actual' "$OUT/jit-warm.log"
echo "jit warm start test: rc $jit_rc"

# In one process: cold compile, CUDA context, warm compile, executor load.
LLMC_BENCH_ONNX=$MODEL "$TESTS" --gtest_filter='CompileTime.*' > "$OUT/ready.log" 2>&1
rc=$?
grep -E '^\[ compile  \]|FAILED|Failure|Expected|Which is|actual' "$OUT/ready.log"
echo "ready test: rc $rc (logs in $OUT)"
[ "$rc" -eq 0 ] && rc=$jit_rc
exit $rc
