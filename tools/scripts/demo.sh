#!/usr/bin/env bash
# Installs what is missing, builds, and runs llmc's main job on the bundled
# default model (test/models/tiny_gpt_dynamo_loss_dyn.onnx, a nanoGPT-style
# GPT exported by PyTorch): check it against PyTorch's loss, gradients and
# AdamW steps, then train it on the Jargon File: compiled for the GPU when
# there is one, on the CPU reference evaluator otherwise. The job grows with the
# project (README.md says what it does today).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

llmc_install_deps
llmc_build

LLMC="$LLMC_BUILD/bin/llmc"
MODELS="$LLMC_ROOT/test/models"
MODEL="$MODELS/tiny_gpt_dynamo_loss_dyn.onnx"
DATA="$LLMC_BUILD/demo"
mkdir -p "$DATA"

# The whole Jargon File when Debian's jargon-text is installed with its docs,
# else the 256 KB piece bundled with the tests.
TEXT=/usr/share/doc/jargon-text/jargon.txt.gz
[ -f "$TEXT" ] || TEXT="$MODELS/jargon-sample.txt"
echo "== llmc tokenize $TEXT"
"$LLMC" tokenize "$TEXT" -o "$DATA/train.bin" --val "$DATA/val.bin"

echo "== llmc verify: llmc's training step against PyTorch's"
"$LLMC" verify "$MODEL" --ref "$MODELS/tiny_gpt_dynamo_loss_dyn.ref.json" | tail -4

if nvidia-smi -L >/dev/null 2>&1; then
  # A GPU: compile the training step into a bundle and train it there.
  STEPS=${LLMC_DEMO_STEPS:-500}
  echo "== llmc compile (GPU found)"
  "$LLMC" compile "$MODEL" --batch 8 --seq 64 -o "$DATA/tiny_gpt.llmc"
  echo "== llmc train: $STEPS steps on the GPU"
  "$LLMC" train "$DATA/tiny_gpt.llmc" --device cuda \
    --data "$DATA/train.bin" --val "$DATA/val.bin" \
    --steps "$STEPS" --lr 3e-3 --warmup 20 --val-every 100
else
  STEPS=${LLMC_DEMO_STEPS:-200}
  echo "== llmc train: $STEPS steps on the CPU reference evaluator (no GPU found)"
  "$LLMC" train "$MODEL" --device cpu --batch 4 --seq 32 \
    --data "$DATA/train.bin" --val "$DATA/val.bin" \
    --steps "$STEPS" --lr 3e-3 --warmup 10 --val-every 50
fi
