# Shared by demo.sh and test.sh: install what is missing, configure, build.
# Sourced, not run. Works on a fresh Debian bookworm machine as root (or with
# sudo available).
set -euo pipefail

LLMC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LLMC_BUILD=${LLMC_BUILD:-$LLMC_ROOT/build}
LLMC_JOBS=${LLMC_JOBS:-$(nproc)}

# Debian packages the build and the tests need (docs/building.md says why).
LLMC_PACKAGES=(
  cmake ninja-build g++ ccache python3 file
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  libzstd-dev zlib1g-dev
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
  nlohmann-json3-dev libfmt-dev libgtest-dev
  jargon-text python3-numpy
  clang-19 libclang-rt-19-dev
)

llmc_install_deps() {
  local missing=()
  for p in "${LLMC_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
      missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "== all ${#LLMC_PACKAGES[@]} Debian packages present"
    return
  fi
  echo "== installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The readers' libFuzzer build: clang, coverage, ASan and UBSan on
# llmc's own code, in its own tree (docs/fuzzing.md).
llmc_build_fuzz() {
  echo "== configuring $LLMC_BUILD-fuzz (clang, libFuzzer, ASan, UBSan)"
  CC=clang-19 CXX=clang++-19 cmake -G Ninja -S "$LLMC_ROOT" -B "$LLMC_BUILD-fuzz" \
    -DCMAKE_BUILD_TYPE=Release -DLLMC_FUZZ=ON \
    -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py >/dev/null
  local start=$SECONDS
  ninja -C "$LLMC_BUILD-fuzz" -j "$LLMC_JOBS" llmc-fuzz-targets
  echo "== fuzz build took $((SECONDS - start)) s"
}

llmc_build() {
  echo "== configuring $LLMC_BUILD"
  cmake -G Ninja -S "$LLMC_ROOT" -B "$LLMC_BUILD" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py >/dev/null
  echo "== building with $LLMC_JOBS jobs"
  local start=$SECONDS
  ninja -C "$LLMC_BUILD" -j "$LLMC_JOBS" all llmc-unit-tests
  echo "== build took $((SECONDS - start)) s"
}
