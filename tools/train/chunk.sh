#!/usr/bin/env bash
# One training chunk on a CUDA machine: resumes RUN_DIR (default .train/run, when it holds a checkpoint)
# for MINUTES, then copies the checkpoint shards and the loss log to OUT (from where they go back into
# RUN_DIR for the next chunk, wherever that runs). Extra arguments go to train.py.
#   bash tools/train/chunk.sh MINUTES OUT [train.py arguments...]
# COPY=model copies, instead of the shards, the checkpoint's index and the exported model in parts of
# 12 MiB (model.safetensors.part-aa, -ab: `cat` them together): for when the shards (model and AdamW
# moments, 48 MB) cannot travel back with the working tree and the next chunk runs where RUN_DIR stayed;
# the model alone can restart a run elsewhere (train.py --init-weights).
set -euo pipefail
minutes=$1 out=$2
shift 2
dir=${RUN_DIR:-.train/run}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p "$dir"
python3 tools/train/train.py --dir "$dir" --minutes "$minutes" "$@" 2>&1 | grep -v "^step=" | tail -5
awk -F, 'NR > 1 && NR % 250 == 1' "$dir/log.csv" | cut -d, -f1,4-11 | tail -30
if [ "${COPY:-shards}" = model ]; then
  python3 tools/train/export.py --dir "$dir" --out /tmp/model.safetensors
  split -b 12M /tmp/model.safetensors "$out/model.safetensors.part-"
  cp "$dir/ckpt.json" "$dir/log.csv" "$out"/
else
  cp "$dir"/ckpt* "$dir/log.csv" "$out"/
fi
