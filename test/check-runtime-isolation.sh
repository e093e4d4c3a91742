#!/usr/bin/env bash
# The runtime ships next to a bundle on machines without LLVM: no file under
# runtime/ may include an MLIR or LLVM header (STYLE.md §8). The CMake
# configure separately fails if a runtime target links MLIR/LLVM.
root=$(cd "$(dirname "$0")/.." && pwd)
hits=$(grep -rnE '#include *[<"](mlir|llvm)/' "$root/runtime" || true)
if [ -n "$hits" ]; then
  echo "FAIL: runtime/ includes MLIR/LLVM headers:"
  echo "$hits"
  exit 1
fi
echo "ok: runtime/ includes no MLIR/LLVM header"
