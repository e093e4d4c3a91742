#!/usr/bin/env bash
# The trainer's GPU checks (docs/trainer.md), for a GPU machine without
# lit/FileCheck: resume bit for bit in bf16 with fusion, kill -9 trials, the
# NaN gate after fusion with the stop and rollback policies, and PyTorch
# loading an llmc checkpoint of HF GPT-2 (when torch and transformers are
# installed). test/lit/train/gpu-resume.test checks the same under lit.
# Usage (repo root): test/gpu/trainer_checks.sh BIN_DIR   (holding llmc)
set -u
BIN=${1:?usage: trainer_checks.sh BIN_DIR}
LLMC=$BIN/llmc
W=${OUT:-/tmp/out}/trainer; rm -rf "$W"; mkdir -p "$W"
export LLMC_CACHE_DIR=${LLMC_CACHE_DIR:-/tmp/llmc-cache}
M=test/models/tiny_gpt_dynamo_loss.onnx
IN=test/lit/train/Inputs
status=0
check() { # name, command...
  local name=$1; shift
  if "$@" > "$W/$name.out" 2>&1; then echo "PASS $name"; else echo "FAIL $name"; tail -5 "$W/$name.out"; status=1; fi
}
"$LLMC" tokenize test/models/jargon-sample.txt -o "$W/train.bin" > /dev/null
ARGS=(--device cuda --precision bf16 --data "$W/train.bin" --steps 8 --lr 3e-3 --lr-decay cosine --no-progress)

check full "$LLMC" train $M "${ARGS[@]}" --checkpoint-dir "$W/full" --save-every 4 --log-json "$W/full.jsonl"
rm -rf "$W/full/step-00000008"
check resumed "$LLMC" train $M "${ARGS[@]}" --checkpoint-dir "$W/full" --save-every 4 --resume "$W/full" --log-json "$W/resumed.jsonl"
check resume-bit-for-bit python3 $IN/compare_logs.py "$W/full.jsonl" "$W/resumed.jsonl" --min-steps 4
check kill-9 python3 $IN/resume_kill.py "$LLMC" "$W/kill" --trials 3 -- $M --device cuda --precision bf16 --data "$W/train.bin" --steps 8 --lr 3e-3 --no-progress

NAN=(--device cuda --data "$W/train.bin" --steps 5 --debug-inject-nan 'llmc.gelu#0@3' --no-progress)
check nan-stop bash -c "'$LLMC' train $M ${NAN[*]@Q} 2>&1 | tee /dev/stderr | grep -q 'error: step 3: the loss is NaN'"
check nan-rollback bash -c "'$LLMC' train $M ${NAN[*]@Q} --on-nan rollback --nan-patience 1 --checkpoint-dir '$W/nanck' --save-every 2 | tee /dev/stderr | grep -q 'rolled back to .*step-00000002'"

# PyTorch loads a checkpoint of HF GPT-2 and gets llmc's loss of the next step.
H=test/models/hf_gpt2_dynamo_loss.onnx
check hf-train "$LLMC" train $H --device cuda --data "$W/train.bin" --steps 5 --checkpoint-dir "$W/hf" --save-every 4 --log-json "$W/hf.jsonl" --no-progress
if python3 -c "import torch, transformers" 2> /dev/null; then
  check pytorch-load python3 test/gpu/load_llmc_checkpoint.py "$W/hf/step-00000004" "$W/train.bin" --log "$W/hf.jsonl"
  cat "$W/pytorch-load.out"
else
  echo "SKIP pytorch-load: no torch/transformers"
fi
exit $status
