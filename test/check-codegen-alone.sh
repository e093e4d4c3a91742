#!/usr/bin/env bash
# Codegen stands alone: nothing under compiler/codegen uses the reference
# evaluator (issue 11). What both need to compute identically (float
# rounding, the init-rule draws, Philox, element types) is in
# compiler/common/ (LLMCCommon). Three checks, each of which a regression
# trips on its own:
#   1. no file under compiler/codegen includes a compiler/eval/ header;
#   2. LLMCCodegen's link interface, written by cmake/CodegenIsolation.cmake
#      at configure time (transitively), does not name LLMCEval;
#   3. no symbol the codegen archive needs is one the evaluator's archive
#      defines (nm), so no object reaches the evaluator by any path.
# usage: check-codegen-alone.sh LINKS_FILE libLLMCCodegen.a libLLMCEval.a
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
links=$1 codegen=$2 eval=$3
status=0

hits=$(grep -rnE '#include *"compiler/eval/' "$root/compiler/codegen" || true)
if [ -n "$hits" ]; then
  echo "FAIL: compiler/codegen includes evaluator headers:"
  echo "$hits"
  status=1
fi

if [ ! -s "$links" ]; then
  echo "FAIL: $links is missing or empty (configure writes it)"
  status=1
elif grep -qx 'LLMCEval' "$links"; then
  echo "FAIL: LLMCCodegen links LLMCEval: $(tr '\n' ' ' < "$links")"
  status=1
elif ! grep -qx 'LLMCCommon' "$links"; then
  echo "FAIL: $links does not list LLMCCommon; is it LLMCCodegen's?"
  status=1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Undefined in codegen; defined strongly (text, data, bss, read-only) in
# the evaluator. Weak symbols (inline functions, templates) are left out:
# every archive that uses them has its own copy.
nm -A --undefined-only "$codegen" 2>/dev/null | awk '{print $NF}' |
  sort -u > "$tmp/needs"
nm --defined-only "$eval" 2>/dev/null | awk '$2 ~ /^[TDBR]$/ {print $3}' |
  sort -u > "$tmp/eval"
if [ ! -s "$tmp/needs" ] || [ ! -s "$tmp/eval" ]; then
  echo "FAIL: nm read no symbols from $codegen or $eval"
  status=1
fi
comm -12 "$tmp/needs" "$tmp/eval" > "$tmp/both"
if [ -s "$tmp/both" ]; then
  echo "FAIL: the codegen archive needs $(wc -l < "$tmp/both") symbols that" \
       "only the evaluator defines:"
  c++filt < "$tmp/both" | head -20
  status=1
fi

[ $status -eq 0 ] &&
  echo "ok: codegen includes, links and needs nothing of the evaluator" \
       "($(wc -l < "$tmp/needs") undefined symbols checked)"
exit $status
