#!/usr/bin/env bash
# Installs what is missing, builds, and runs llmc's main job on the bundled
# default model (test/models/). The job grows with the project: it is what
# the CLI can do end to end today (see README.md).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

llmc_install_deps
llmc_build

LLMC="$LLMC_BUILD/bin/llmc"
MODEL="$LLMC_ROOT/test/models/gpt2-tiny.mlir"
echo "== llmc check $MODEL"
"$LLMC" check "$MODEL"
