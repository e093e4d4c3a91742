#!/usr/bin/env bash
# libllmc.so (docs/jit-api.md, "The shared library") exports only the C ABI
# (llmc_*), and needs only the C/C++ runtime, libz and the libprotobuf copy
# next to it, so that it loads on a GPU machine without LLVM or protobuf.
set -u
lib=$1
dir=$(cd "$(dirname "$lib")" && pwd)
status=0
exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^llmc_')
if [ -n "$exported" ]; then
  echo "FAIL: $lib exports symbols outside the C ABI:"
  echo "$exported" | head -20 | sed 's/^/  /'
  status=1
else
  echo "ok: $lib exports $(nm -D --defined-only "$lib" | wc -l) symbols, all llmc_*"
fi
bad=$(ldd "$lib" | grep -vE \
  '^\s*(linux-vdso\.so|/lib64/ld-linux-x86-64\.so|libc\.so|libstdc\+\+\.so|libgcc_s\.so|libm\.so|libz\.so)' |
  grep -vE "^\s*libprotobuf\.so\.[0-9]+ => $dir/")
if [ -n "$bad" ]; then
  echo "FAIL: $lib depends on libraries a GPU machine may not have:"
  echo "$bad" | sed 's/^/  /'
  status=1
else
  echo "ok: $lib needs libc/libstdc++/libgcc/libm/libz and the libprotobuf next to it"
fi
exit $status
