#!/usr/bin/env bash
# Runs every GPU test binary of a build on the GPU machine and prints one
# line per binary. Usage: bench/gpu_checks.sh BIN_DIR (holding llmc and the
# llmc-*gpu-tests binaries, as built by `ninja` in build/).
set -u
BIN=${1:?usage: gpu_checks.sh BIN_DIR}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LLMC_TEST_MODELS=$PWD/test/models LLMC_CACHE_DIR=/tmp/llmc-cache
nvidia-smi -L
"$BIN/llmc" tokenize test/models/jargon-sample.txt -o /tmp/jargon.bin --val /tmp/jargon_val.bin
export LLMC_TEST_TOKENS=/tmp/jargon.bin
status=0
for t in llmc-gpu-tests llmc-codegen-gpu-tests llmc-train-gpu-tests; do
  start=$SECONDS
  timeout 240 "$BIN/$t" > "$OUT/$t.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  echo "$t: rc $rc in $((SECONDS - start)) s | $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]|^\[  SKIPPED \]' "$OUT/$t.log" | tr '\n' ' ')"
  grep -E "^\[  FAILED  \]|Failure" "$OUT/$t.log" | head -10
done
exit $status
