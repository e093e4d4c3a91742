#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test suite: lit (IR and
# CLI regression tests) and ctest (GoogleTest and the standing checks).
# Prints per-suite counts and exits non-zero when any test fails.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

llmc_install_deps
llmc_build

status=0
echo "== lit"
lit_log=$(mktemp)
python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv "$LLMC_BUILD/test/lit" \
  2>&1 | tee "$lit_log" || status=1
count() { grep -E "^ *$1: *[0-9]+" "$lit_log" | awk '{print $2}' | head -1 || true; }
lit_pass=$(count Passed); lit_fail=$(count Failed); lit_skip=$(count Unsupported)
lit_pass=${lit_pass:-0}; lit_fail=${lit_fail:-0}; lit_skip=${lit_skip:-0}

echo "== ctest"
ct_log=$(mktemp)
ctest --test-dir "$LLMC_BUILD" --output-on-failure -j "$LLMC_JOBS" 2>&1 |
  tee "$ct_log" || status=1
ct_total=$(grep -oE "out of [0-9]+" "$ct_log" | awk '{print $3}' | tail -1 || true)
ct_fail=$(grep -oE "[0-9]+ tests failed" "$ct_log" | awk '{print $1}' | tail -1 || true)
ct_skip=$(grep -c "\*\*\*Skipped\|Not Run" "$ct_log" || true)
ct_total=${ct_total:-0}; ct_fail=${ct_fail:-0}
ct_pass=$((ct_total - ct_fail - ct_skip))

echo
echo "lit: $lit_pass passed, $lit_fail failed, $lit_skip skipped"
echo "ctest: $ct_pass passed, $ct_fail failed, $ct_skip skipped"
if [ "$ct_skip" -gt 0 ]; then
  echo "  ($ct_skip skipped tests need a CUDA GPU: this machine has none; run" \
       "ctest -L gpu on a GPU machine)"
fi
total_fail=$((lit_fail + ct_fail))
[ "$total_fail" -eq 0 ] || status=1
if [ $((lit_pass + ct_pass)) -eq 0 ]; then
  echo "no test ran"; status=1
fi
echo "total: $((lit_pass + ct_pass)) passed, $total_fail failed, $((lit_skip + ct_skip)) skipped"
exit $status
