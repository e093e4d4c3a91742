#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test suite: lit (IR and
# CLI regression tests), ctest (GoogleTest and the standing checks) and the
# importer's fuzz tests (regression inputs plus a bounded libFuzzer run, in a
# clang build of their own). Prints per-suite counts and exits non-zero when
# any test fails. LLMC_SKIP_FUZZ=1 leaves out the fuzz build.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

llmc_install_deps
llmc_build

status=0
total_pass=0 total_fail=0 total_skip=0
summary=()

echo "== lit"
lit_log=$(mktemp)
python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv "$LLMC_BUILD/test/lit" \
  2>&1 | tee "$lit_log" || status=1
# lit pads the labels to one width ("Passed     : 122") once a second kind
# of result appears.
count() { grep -E "^ *$1 *: *[0-9]+" "$lit_log" | sed -E 's/.*: *([0-9]+).*/\1/' | head -1 || true; }
p=$(count Passed); f=$(count Failed); s=$(count Unsupported)
p=${p:-0}; f=${f:-0}; s=${s:-0}
summary+=("lit: $p passed, $f failed, $s skipped")
total_pass=$((total_pass + p)); total_fail=$((total_fail + f)); total_skip=$((total_skip + s))

# Runs ctest in build dir $1 with extra args; adds its counts to the totals.
run_ctest() {
  local name=$1 dir=$2; shift 2
  echo "== $name"
  local log; log=$(mktemp)
  ctest --test-dir "$dir" --output-on-failure -j "$LLMC_JOBS" "$@" 2>&1 |
    tee "$log" || status=1
  local t f s
  t=$(grep -oE "out of [0-9]+" "$log" | awk '{print $3}' | tail -1 || true)
  f=$(grep -oE "[0-9]+ tests failed" "$log" | awk '{print $1}' | tail -1 || true)
  s=$(grep -c "\*\*\*Skipped" "$log" || true)
  t=${t:-0}; f=${f:-0}; s=${s:-0}
  [ "$t" -gt 0 ] || { echo "$name ran no test"; status=1; }
  summary+=("$name: $((t - f - s)) passed, $f failed, $s skipped")
  total_pass=$((total_pass + t - f - s)); total_fail=$((total_fail + f))
  total_skip=$((total_skip + s))
  if [ "$s" -gt 0 ]; then
    summary+=("  ($s skipped tests need a CUDA GPU: this machine has none; run" \
              "ctest -L gpu on a GPU machine)")
  fi
}

run_ctest ctest "$LLMC_BUILD"

if [ "${LLMC_SKIP_FUZZ:-0}" != 1 ]; then
  llmc_build_fuzz
  run_ctest fuzz "$LLMC_BUILD-fuzz" -L fuzz
fi

echo
printf '%s\n' "${summary[@]}"
[ "$total_fail" -eq 0 ] || status=1
[ $((total_pass)) -gt 0 ] || { echo "no test ran"; status=1; }
echo "total: $total_pass passed, $total_fail failed, $total_skip skipped"
exit $status
