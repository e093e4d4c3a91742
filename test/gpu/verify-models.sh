#!/usr/bin/env bash
# Runs `llmc verify --device cuda` on every *_loss*.onnx in test/models
# against its .ref.json (docs/verify.md): the compiled GPU training step
# must match PyTorch's loss, gradient norms and AdamW losses like the CPU
# evaluator does. A model with a .bf16.ref.json (PyTorch AMP) is verified
# again with --precision bf16 (docs/precision.md). Prints each model's
# report and a summary line; exits 1 when any model fails.
#
# usage: test/gpu/verify-models.sh [LLMC [MODELS_DIR]]
# VERIFY_FLAGS adds options to every verify: `--pad-always` pads every dim
# the ops allow (docs/padding.md), `--no-pad` none. EXACT_PRECISIONS="tf32
# fp16" verifies each model again in those precisions against its exact
# .ref.json.
set -u
llmc=${1:-build/bin/llmc}
models=${2:-test/models}
read -r -a flags <<< "${VERIFY_FLAGS:-}"

failed=()
passed=0
for onnx in "$models"/*_loss*.onnx; do
  ref=${onnx%.onnx}.ref.json
  name=$(basename "$onnx")
  if [[ ! -f $ref ]]; then
    echo "== $name: no reference ${ref##*/}, skipped"
    continue
  fi
  echo "== $name"
  if "$llmc" verify "$onnx" --ref "$ref" --device cuda "${flags[@]}"; then
    passed=$((passed + 1))
  else
    failed+=("$name")
  fi
  # Further references of one export at other inputs (the masked-diffusion
  # model's noise levels: X.t_eps.ref.json, X.t_1.ref.json).
  for extra in "${onnx%.onnx}".t_*.ref.json; do
    [[ -f $extra ]] || continue
    echo "== $name --ref ${extra##*/}"
    if "$llmc" verify "$onnx" --ref "$extra" --device cuda "${flags[@]}"; then
      passed=$((passed + 1))
    else
      failed+=("$name(${extra##*/})")
    fi
  done
  bf16=${onnx%.onnx}.bf16.ref.json
  if [[ -f $bf16 ]]; then
    echo "== $name --precision bf16"
    if "$llmc" verify "$onnx" --ref "$bf16" --device cuda --precision bf16 \
        "${flags[@]}"; then
      passed=$((passed + 1))
    else
      failed+=("$name(bf16)")
    fi
  fi
  # EXACT_PRECISIONS="tf32 fp16": also against the exact reference
  # (docs/precision.md, "llmc verify --precision tf32|fp16").
  for p in ${EXACT_PRECISIONS:-}; do
    echo "== $name --precision $p"
    if "$llmc" verify "$onnx" --ref "$ref" --device cuda --precision "$p" \
        "${flags[@]}"; then
      passed=$((passed + 1))
    else
      failed+=("$name($p)")
    fi
  done
done
echo "verify --device cuda: $passed passed, ${#failed[@]} failed${failed:+: ${failed[*]}}"
[[ ${#failed[@]} -eq 0 ]]
