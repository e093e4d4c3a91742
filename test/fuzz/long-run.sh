#!/usr/bin/env bash
# A long fuzzing run of every target (docs/fuzzing.md), over all cores:
#
#   test/fuzz/long-run.sh BUILD_DIR OUT_DIR [RUNS_PER_TARGET] [TARGET...]
#
# BUILD_DIR holds the fuzz binaries (a LLMC_FUZZ=ON build tree, where they
# are under test/fuzz/, or a folder with just the llmc-*-fuzz files: they
# need only libc, libstdc++, libgcc and libm, no LLVM). RUNS_PER_TARGET is
# the number of executions per target (default 2000000), split over
# $LLMC_FUZZ_WORKERS (default: all cores) libFuzzer jobs that share one
# corpus. TARGETs default to onnx json tokens bundle.
# LLMC_FUZZ_MAX_SECONDS, when set, also bounds each target's wall time (the
# summary then shows how many executions were reached).
#
# Each target starts from its committed seeds and regressions. OUT_DIR gets
# few files, so that they travel back from a remote machine:
#   summary.txt        per target: executions, seconds, coverage (cov/ft of
#                      the final corpus), corpus files and bytes, crashes
#   corpus-NAME.tar.gz the final corpus of target NAME
#   logs.tar.gz        every libFuzzer job's log
#   artifacts.tar.gz   crashing, leaking, slow or out-of-memory inputs (only
#                      when there are any)
# Exit status: 0 when no target found anything, 1 otherwise.
set -uo pipefail

if [ $# -lt 2 ]; then
  sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
BUILD_DIR=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && OUT_DIR=$(cd "$2" && pwd) || exit 2
RUNS=${3:-2000000}
shift $(( $# >= 3 ? 3 : 2 ))
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(onnx json tokens bundle)
FUZZ_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORKERS=${LLMC_FUZZ_WORKERS:-$(nproc)}
WORK=${LLMC_FUZZ_WORK:-$(mktemp -d /tmp/llmc-fuzz-long.XXXXXX)}

# The same limits as the ctest runs (test/fuzz/CMakeLists.txt).
declare -A MAX_LEN=([onnx]=65536 [json]=16384 [tokens]=4096 [bundle]=32768)
export ASAN_OPTIONS=detect_leaks=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
LIMITS=(-rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=20)

binary() {
  for b in "$BUILD_DIR/test/fuzz/llmc-$1-fuzz" "$BUILD_DIR/llmc-$1-fuzz"; do
    [ -x "$b" ] && { echo "$b"; return 0; }
  done
  return 1
}

summary="$OUT_DIR/summary.txt"
{
  echo "llmc long fuzz run, $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores" \
       "($WORKERS workers), $RUNS executions per target"
  printf '%-7s %11s %8s %7s %7s %8s %11s %8s\n' target executions seconds \
    cov ft corpus bytes crashes
} >"$summary"

status=0
for t in "${TARGETS[@]}"; do
  bin=$(binary "$t") || { echo "no llmc-$t-fuzz in $BUILD_DIR"; status=1; continue; }
  dir="$WORK/$t"
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/artifacts" "$dir/logs"
  cp "$FUZZ_DIR/$t-seeds/"* "$FUZZ_DIR/$t-regressions/"* "$dir/corpus/" 2>/dev/null
  per_job=$(( (RUNS + WORKERS - 1) / WORKERS ))
  extra=()
  [ -n "${LLMC_FUZZ_MAX_SECONDS:-}" ] && extra+=(-max_total_time="$LLMC_FUZZ_MAX_SECONDS")
  echo "== $t: $WORKERS jobs x $per_job executions"
  start=$SECONDS
  # libFuzzer writes each job's output to fuzz-N.log in the working folder.
  (cd "$dir/logs" && "$bin" -jobs="$WORKERS" -workers="$WORKERS" \
     -runs="$per_job" -max_len="${MAX_LEN[$t]}" "${LIMITS[@]}" "${extra[@]}" \
     -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
     "$dir/corpus" >"$dir/logs/parent.log" 2>&1)
  seconds=$((SECONDS - start))

  # Executions: the last "#N" status line of each job.
  execs=0
  for log in "$dir"/logs/fuzz-*.log; do
    [ -f "$log" ] || continue
    n=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
    execs=$((execs + ${n:-0}))
  done
  # Coverage of the final corpus: one pass over it, no mutation.
  inited=$("$bin" -runs=0 -max_len="${MAX_LEN[$t]}" "${LIMITS[@]}" \
             "$dir/corpus" 2>&1 | grep -E 'INITED|DONE' | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' <<<"$inited" | awk '{print $2}')
  ft=$(grep -oE 'ft: [0-9]+' <<<"$inited" | awk '{print $2}')
  files=$(find "$dir/corpus" -type f | wc -l)
  bytes=$(du -sb "$dir/corpus" | cut -f1)
  crashes=$(find "$dir/artifacts" -type f | wc -l)
  reports=$(grep -lE '==ERROR|runtime error|deadly signal' "$dir"/logs/*.log 2>/dev/null | wc -l)
  [ "$crashes" -eq 0 ] && [ "$reports" -eq 0 ] || status=1
  printf '%-7s %11s %8s %7s %7s %8s %11s %8s\n' "$t" "$execs" "$seconds" \
    "${cov:-?}" "${ft:-?}" "$files" "$bytes" "$crashes" >>"$summary"
  for a in "$dir"/artifacts/*; do
    [ -f "$a" ] && echo "  $t artifact: $(basename "$a")" >>"$summary"
  done
done

# One corpus archive per target: each file must stay small enough to travel.
for t in "${TARGETS[@]}"; do
  [ -d "$WORK/$t/corpus" ] && tar czf "$OUT_DIR/corpus-$t.tar.gz" -C "$WORK" "$t/corpus"
done
tar czf "$OUT_DIR/logs.tar.gz" -C "$WORK" $(cd "$WORK" && ls -d */logs 2>/dev/null)
if [ -n "$(find "$WORK" -path '*/artifacts/*' -type f 2>/dev/null)" ]; then
  tar czf "$OUT_DIR/artifacts.tar.gz" -C "$WORK" $(cd "$WORK" && ls -d */artifacts)
fi
cat "$summary"
exit $status
