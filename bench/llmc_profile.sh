#!/usr/bin/env bash
# One device call's worth of GPU checks for the CUDA backend: every GPU test
# binary (bench/gpu_checks.sh), `llmc verify --device cuda` on the test
# models, then llmc's per-kernel profile of GPT-2 124M (B16 x T1024) with
# how its attention was raised. Usage: bench/llmc_profile.sh BIN_DIR
set -u
BIN=${1:?usage: llmc_profile.sh BIN_DIR}
bash bench/gpu_checks.sh "$BIN"
LLMC_CACHE_DIR=/tmp/llmc-cache bash test/gpu/verify-models.sh "$BIN/llmc" test/models 2>&1 | grep -E "^== |verify --device cuda:|fail" | tail -30
LLMC="$BIN/llmc" python3 bench/gpt2_124m.py --steps 4 --warmup 2 --batch 16 \
  --modes llmc-fp32 --profile --out /tmp/bench 2>/tmp/bench-err.txt | head -40
"$BIN/llmc" import /tmp/bench/gpt2_124m_b16.onnx 2>/dev/null | grep -m1 "llmc.attention"
