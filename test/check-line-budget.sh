#!/usr/bin/env bash
# Fails when a top-level source directory outgrows its line budget
# (test/line-budgets.txt), so growth is a decision, not an accident
# (tinygrad's sz.py does the same). Prints the count of every directory.
root=$(cd "$(dirname "$0")/.." && pwd)
status=0
while read -r dir budget; do
  case "$dir" in ''|'#'*) continue ;; esac
  [ -d "$root/$dir" ] || continue
  lines=$(find "$root/$dir" -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.td' \
    -o -name '*.cu' -o -name '*.cuh' -o -name '*.py' \) -print0 | xargs -0 -r cat | wc -l)
  mark=ok
  if [ "$lines" -gt "$budget" ]; then mark=OVER; status=1; fi
  printf '%-10s %6d / %6d  %s\n' "$dir" "$lines" "$budget" "$mark"
done < "$root/test/line-budgets.txt"
exit $status
