#!/usr/bin/env bash
# Runs the Python binding's tests (ctest python-api): $1 is libllmc.so.
# numpy is required (tools/scripts/common.sh installs python3-numpy); the
# first interpreter that has it is used, since a pyenv python3 on PATH may
# not see Debian's packages.
set -u
here=$(cd "$(dirname "$0")" && pwd)
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c "import numpy" 2>/dev/null; then
    export LLMC_LIBRARY="$1" PYTHONPATH="$here/.."
    exec "$py" -m unittest discover -s "$here" -v
  fi
done
echo "no python3 with numpy found: install python3-numpy" \
     "(tools/scripts/common.sh installs it)" >&2
exit 1
