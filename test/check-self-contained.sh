#!/usr/bin/env bash
# The llmc tools must run on a GPU machine that has no LLVM, MLIR, protobuf or
# ONNX packages: their dynamic dependencies may only be the C/C++ runtime and
# CUDA. Prints the offending libraries and fails otherwise.
set -u
status=0
for bin in "$@"; do
  bad=$(ldd "$bin" | awk '{print $1}' | grep -vE \
    '^(linux-vdso\.so|/lib64/ld-linux-x86-64\.so|libc\.so|libstdc\+\+\.so|libgcc_s\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|libcuda\.so|libcudart\.so|libnvrtc\.so|libnvrtc-builtins|libcublas\.so|libcublasLt\.so|libnccl\.so)')
  if [ -n "$bad" ]; then
    echo "FAIL: $bin depends on libraries a GPU machine may not have:"
    echo "$bad" | sed 's/^/  /'
    status=1
  else
    echo "ok: $bin needs only libc/libstdc++/libgcc/libm and CUDA"
  fi
done
exit $status
